"""A controller from a reconcile function: controller-runtime's builder, in a few lines.

::

    builder = ControllerBuilder(ctx, "echo").for_(CONFIGMAPS, predicate=labelled)
    configmaps = builder.lister(CONFIGMAPS)

    async def reconcile(request: Request) -> Result | None:
        cm = configmaps.get(request.namespace, request.name)
        ...

    return builder.complete(reconcile)

``for_(resource)`` watches the primary resource: its add/update/delete events enqueue the
object's own key. ``owns(resource)`` watches objects the primary one controls: an event on one
enqueues the key of its controller owner reference, when that owner is of the ``for_`` kind.
``watches(resource, map_func)`` enqueues whatever keys ``map_func(obj)`` names. A predicate
filters events before they enqueue anything (on an update it sees the new object, and the
event passes if either the old or the new object passes, so leaving the filter is seen).

What the built-in controllers need besides (KCM's handler rules; the built-ins are built here
too, see docs/controllers.md, "Adding a built-in controller"):

- ``for_(resource, forget=f)``: ``f(key, obj)`` drops per-object state (expectations, caches)
  when an object of the primary kind is deleted, or re-created under its name (an update whose
  UID changed is the old object's delete, as KCM's ``updateRS``).
- ``controls(resource, adopters=, expectations=, after_update=)``: KCM's rules for objects the
  primary kind controls (:mod:`pycm.controller.owner_events`): the controller reference
  resolved against the primary cache (UID must match), the old owner too when it changed,
  orphans to the owners that may adopt them, expectations observed.
- ``handles(resource, on_add=, on_update=, on_delete=)``: any rule that must see the event
  itself (an update's old and new object): each function returns the keys to enqueue.
- :meth:`ControllerBuilder.build` instead of ``complete``: the worker loop around a keyed
  ``sync(key) -> Result`` (KCM's ``syncHandler``), for a controller object that keeps it;
  :meth:`ControllerBuilder.standalone` builds over informers made elsewhere (tests, benches).

:meth:`ControllerBuilder.complete` wires informers → handlers → the rate-limiting queue → the
worker loop of :mod:`pycm.controller.worker` (the reconcile contract: ``Result``,
``requeue_after``, :class:`~pycm.controller.worker.TerminalError`: a Warning event
``ReconcileFailed`` on the object, recorded by a recorder made on first need), retries a
failing key for ever with capped backoff unless ``max_retries`` (the descriptor's by default)
says otherwise, checks that every resource it watches is served before it waits for their
caches (one that is not stops it with apimachinery's "no matches" message), registers the
queue under the manager's ``workqueues`` health check, and returns the runnable the init
function returns.
The queue is a priority queue unless ``priority_queue=False`` (controller-runtime 0.22 turned
``UsePriorityQueue`` on by default): the keys of the informers' initial-list adds and of resyncs
wait behind keys whose objects just changed, so after a start or a failover a fresh change is
reconciled first (:mod:`pycm.workqueue.priority_queue`; the enqueue rule is
:meth:`~pycm.controller.worker.Controller.enqueue`'s).
The worker loop is the one the built-ins run too, so the reconciles are traced
(``reconcile.begin``/``end`` linked to the triggering watch event) and counted in
``controller_runtime_*`` and ``workqueue_*`` metrics under its name, with no code of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pycm.api.meta import Obj
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.cache.listers import Lister
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller.context import ControllerContext, Runnable
from pycm.controller.handlers import (
    EventKeys,
    Forget,
    Predicate,
    event_handlers,
    mapped_handlers,
    primary_handlers,
)
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.owner_events import (
    Adopters,
    AfterUpdate,
    ControlledRules,
    ObservedExpectations,
    controlled,
)
from pycm.controller.worker import (
    DEFAULT_MAX_RETRIES,
    Controller,
    Result,
    SyncHandler,
    TerminalError,
)
from pycm.kube.resources import Resource
from pycm.record.recorder import EventRecorder
from pycm.trace.bus import Bus, default_bus
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "TERMINAL_ERROR_REASON",
    "ControllerBuilder",
    "EventKeys",
    "Forget",
    "MapFunc",
    "Predicate",
    "Reconciler",
    "Request",
]

# The reason of the Warning event a TerminalError records on the reconciled object.
TERMINAL_ERROR_REASON = "ReconcileFailed"


class _Unset:
    """The type of a keyword argument's "not given" (None is a meaningful max_retries)."""


_UNSET = _Unset()


class Request(NamedTuple):
    """What a reconcile is asked to do: bring the object ``namespace/name`` to its desired
    state (it may no longer exist)."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        namespace, _, name = key.rpartition("/")
        return cls(namespace, name)


Reconciler = Callable[[Request], Awaitable[Result | None]]
"""``async reconcile(request) -> Result | None`` — the controller's whole logic."""
MapFunc = Callable[[Obj], Iterable[Request | str]]
"""The requests (or keys) an event on a watched object maps to."""


@dataclass(frozen=True, slots=True)
class _Watch:
    resource: Resource
    metadata_only: bool
    # The informer's handler for the built controller (handlers only compute keys and
    # enqueue); the builder's primary lister is its second argument.
    handler: Callable[[Controller, Lister], HandlerFuncs]


def _refuse(name: str) -> Any:
    raise RuntimeError(
        f"a standalone controller has no client or recorder of the manager's ({name})"
    )


class _NoClient:
    """The standalone builder's factories: every informer is given, none is made."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("a standalone builder lists and watches nothing itself")


class ControllerBuilder:
    """Collects what a controller watches, then builds it with :meth:`complete` (or
    :meth:`build`)."""

    def __init__(
        self,
        ctx: ControllerContext,
        name: str,
        *,
        workers: int = 1,
        max_retries: int | _Unset | None = _UNSET,
        recorder: EventRecorder | None = None,
        priority_queue: bool = True,
        check_served: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self._ctx = ctx
        self.name = name
        self._workers = workers
        # Unset: the descriptor's (ctx.max_retries; None, its default, retries for ever).
        self._max_retries = ctx.max_retries if isinstance(max_retries, _Unset) else max_retries
        if self._max_retries is not None and self._max_retries < 0:
            raise ValueError(f"{name}: max_retries must not be negative")
        # Where a TerminalError's Warning event goes (made at complete() when not given).
        self._recorder = recorder
        # A priority queue (initial-list adds and resyncs behind fresh changes), as
        # controller-runtime's default since 0.22; False: a FIFO queue, KCM's.
        self._priority_queue = priority_queue
        # Ask discovery whether each watched resource is served before waiting for its cache.
        # The built-ins watch only kinds every API server serves, and KCM asks nothing.
        self._check_served = check_served
        self._for: Resource | None = None
        self._for_metadata_only = False
        self._watches: list[_Watch] = []
        # Informers handed in (standalone()): used instead of the context's factories.
        self._given: dict[Resource, SharedIndexInformer] = {}
        self._informers: list[SharedIndexInformer] = []  # the watched ones, once built
        self._built = False

    @classmethod
    def standalone(
        cls,
        name: str,
        informers: Mapping[Resource, SharedIndexInformer],
        *,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: ControllerMetrics | None = None,
        max_retries: int | None = DEFAULT_MAX_RETRIES,
        priority_queue: bool = False,
    ) -> ControllerBuilder:
        """A builder over ``informers`` made elsewhere, outside a manager: KCM's controller
        test fixture (pre-filled caches, ``sync(key)`` called directly) and the benches. Its
        context has no client, recorder or discovery; its informers count as started."""
        bus = bus or default_bus()
        ctx = ControllerContext(
            config=None,
            bus=bus,
            clock=clock,
            client_for=_refuse,
            recorder_for=_refuse,
            informer_factory=SharedInformerFactory(_NoClient(), bus=bus, clock=clock),
            metadata_informer_factory=MetadataInformerFactory(_NoClient(), bus=bus, clock=clock),
            metrics=metrics,
        )
        ctx.informers_started.set()
        builder = cls(ctx, name, max_retries=max_retries, priority_queue=priority_queue)
        builder._given = dict(informers)
        return builder

    @property
    def context(self) -> ControllerContext:
        """The context the controller is built in (its clock, bus, metrics, clients)."""
        return self._ctx

    # -- what to watch ------------------------------------------------------------------------

    def for_(
        self,
        resource: Resource,
        *,
        predicate: Predicate | None = None,
        metadata_only: bool = False,
        forget: Forget | None = None,
    ) -> ControllerBuilder:
        """The primary resource: an event on one of its objects enqueues that object.
        ``forget(key, obj)``: called when one is deleted or re-created (see the module)."""
        if self._for is not None:
            raise ValueError(f"{self.name}: for_() was already called ({self._for.resource})")
        self._for = resource
        self._for_metadata_only = metadata_only
        self._watches.append(
            _Watch(resource, metadata_only, lambda c, _: primary_handlers(c, predicate, forget))
        )
        return self

    def owns(
        self,
        resource: Resource,
        *,
        predicate: Predicate | None = None,
        metadata_only: bool = False,
    ) -> ControllerBuilder:
        """Objects the primary resource controls: an event on one enqueues its controller
        owner (the owner reference with ``controller: true``) when that is of the for_ kind."""
        owner = self._primary("owns")

        def owner_keys(obj: Obj) -> Iterable[str]:
            meta = obj.get("metadata") or {}
            for ref in meta.get("ownerReferences") or ():
                if not ref.get("controller"):
                    continue
                # The group of apiVersion "apps/v1" is "apps"; of "v1", the core group "".
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                if ref.get("kind") == owner.kind and group == owner.group:
                    yield Request(str(meta.get("namespace", "")), str(ref.get("name", ""))).key
                return  # at most one controller reference counts

        self._watches.append(
            _Watch(resource, metadata_only, lambda c, _: mapped_handlers(c, owner_keys, predicate))
        )
        return self

    def controls(
        self,
        resource: Resource,
        *,
        adopters: Adopters | None = None,
        expectations: ObservedExpectations | None = None,
        after_update: AfterUpdate | None = None,
        metadata_only: bool = False,
    ) -> ControllerBuilder:
        """Objects the primary resource controls, by KCM's rules
        (:mod:`pycm.controller.owner_events`): an event enqueues the owner its controller
        reference resolves to in the primary cache (kind, name and UID), the old owner too
        when the reference changed; an orphan enqueues ``adopters(obj)``; ``expectations``
        observe the owned object's creation and deletion; ``after_update(owner, old, new)``
        may enqueue the owner again after a delay."""
        owner = self._primary("controls")
        rules = ControlledRules(owner.kind, adopters, expectations, after_update)
        self._watches.append(
            _Watch(resource, metadata_only, lambda c, owners: controlled(c, owners, rules))
        )
        return self

    def watches(
        self,
        resource: Resource,
        map_func: MapFunc,
        *,
        predicate: Predicate | None = None,
        metadata_only: bool = False,
    ) -> ControllerBuilder:
        """Any other resource: an event on one of its objects enqueues ``map_func(obj)``."""

        def mapped(obj: Obj) -> Iterable[str]:
            for item in map_func(obj):
                yield item.key if isinstance(item, Request) else item

        self._watches.append(
            _Watch(resource, metadata_only, lambda c, _: mapped_handlers(c, mapped, predicate))
        )
        return self

    def handles(
        self,
        resource: Resource,
        *,
        on_add: Callable[[Obj, bool], EventKeys] | None = None,
        on_update: Callable[[Obj, Obj], EventKeys] | None = None,
        on_delete: Callable[[Obj], EventKeys] | None = None,
        metadata_only: bool = False,
    ) -> ControllerBuilder:
        """Any resource, by rules that must see the event itself: ``on_add(obj,
        is_in_initial_list)``, ``on_update(old, new)`` (an update's both objects, resyncs
        included) and ``on_delete(obj)`` (a tombstone's last known object) each return the
        requests (or keys) to enqueue; an event with no function enqueues nothing."""
        self._watches.append(
            _Watch(
                resource,
                metadata_only,
                lambda c, _: event_handlers(c, on_add, on_update, on_delete),
            )
        )
        return self

    def _primary(self, method: str) -> Resource:
        if self._for is None:
            raise ValueError(f"{self.name}: call for_() before {method}()")
        return self._for

    # -- reads --------------------------------------------------------------------------------

    def informer(self, resource: Resource, *, metadata_only: bool = False) -> SharedIndexInformer:
        """The shared informer of ``resource`` (created on first use; started by the manager)."""
        given = self._given.get(resource)
        if given is not None:
            return given
        ctx = self._ctx
        factory = ctx.metadata_informer_factory if metadata_only else ctx.informer_factory
        key: Hashable = resource
        return factory.informer_for(key)

    def lister(self, resource: Resource, *, metadata_only: bool = False) -> Lister:
        """Reads of ``resource`` from the shared cache (never mutate what it returns)."""
        return self.informer(resource, metadata_only=metadata_only).lister

    # -- building -----------------------------------------------------------------------------

    def build(self, sync: SyncHandler) -> Controller:
        """Build the worker loop around a keyed ``sync(key) -> Result | None`` (KCM's
        syncHandler; the built-ins keep theirs on an object): the queue, the handlers on the
        informers, the health check's registration. ``run`` then runs it."""
        if self._for is None:
            raise ValueError(f"{self.name}: a controller needs for_(resource)")
        primary = self._for
        if self._built:
            raise ValueError(f"{self.name}: build() or complete() was already called")
        self._built = True
        ctx = self._ctx
        controller = Controller(
            self.name,
            sync,
            resource=primary.resource,
            max_retries=self._max_retries,
            clock=ctx.clock,
            bus=ctx.bus,
            metrics=ctx.metrics,
            priority_queue=self._priority_queue,
        )
        self.controller = controller
        owners = self.lister(primary, metadata_only=self._for_metadata_only)
        for watch in self._watches:
            informer = self.informer(watch.resource, metadata_only=watch.metadata_only)
            if informer not in self._informers:
                self._informers.append(informer)
            informer.add_event_handler(
                watch.handler(controller, owners), name=f"{self.name}/{watch.resource.resource}"
            )
        # (For a sharded member: which cache holds its keys' objects, which ones it reads.)
        controller.primary = self.informer(primary, metadata_only=self._for_metadata_only)
        controller.watched = tuple(self._informers)
        ctx.register_queue(self.name, controller)
        return controller

    def complete(self, reconcile: Reconciler) -> Runnable:
        """Build the controller around ``reconcile``; returns its runnable (``async run()``:
        wait for InformersStarted and the caches, then run the workers until cancelled)."""
        if self._for is None:
            raise ValueError(f"{self.name}: a controller needs for_(resource)")
        primary = self._for
        if self._built:
            raise ValueError(f"{self.name}: complete() was already called")
        ctx = self._ctx
        recorders: list[EventRecorder] = [self._recorder] if self._recorder else []
        cache = self.lister(primary, metadata_only=self._for_metadata_only)

        async def sync(key: str) -> Result | None:
            request = Request.from_key(key)
            try:
                return await reconcile(request)
            except TerminalError as exc:
                # Retrying cannot fix it, so the object's owner must hear of it: a Warning
                # event on the object (when the cache still has it), then the worker drops it.
                obj = cache.get(request.namespace, request.name)
                if obj is not None:
                    if not recorders:  # made on first use: most controllers never need one
                        recorders.append(ctx.recorder_for(self.name))
                    recorders[0].event(
                        {**obj, "apiVersion": primary.api_version, "kind": primary.kind},
                        "Warning",
                        TERMINAL_ERROR_REASON,
                        str(exc) or type(exc).__name__,
                    )
                raise

        self.build(sync)
        return self.run

    async def synced(self) -> bool:
        """Wait until the controller may start its workers: every watched resource served
        (unless ``check_served=False``), InformersStarted, every watched informer synced."""
        ctx = self._ctx
        # A resource nobody serves (a constant naming a CRD not installed) would have its
        # informer retry list-and-watch for ever and /readyz fail with no word of why: the
        # controller stops instead, naming it (NoKindMatchError, one line from the manager).
        if self._check_served and ctx.rest_mapper is not None:
            for resource in dict.fromkeys(watch.resource for watch in self._watches):
                await ctx.rest_mapper.resource_for_plural(
                    resource.group, resource.version, resource.resource
                )
        await ctx.informers_started.wait()
        for informer in self._informers:
            await informer.wait_synced()
        return True

    async def run(self, workers: int | None = None) -> None:
        """Run the built controller with ``workers`` workers (the builder's by default)
        until cancelled; the runnable :meth:`complete` returns."""
        if not self._built:
            raise ValueError(f"{self.name}: run() before build() or complete()")
        await self.controller.run(self._workers if workers is None else workers, self.synced)
