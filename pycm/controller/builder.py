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
The worker loop is the built-ins' own, so the controller's reconciles are traced
(``reconcile.begin``/``end`` linked to the triggering watch event) and counted in
``controller_runtime_*`` and ``workqueue_*`` metrics under its name, with no code of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pycm.api.meta import Obj
from pycm.cache.listers import Lister
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import DeletedFinalStateUnknown
from pycm.controller.context import ControllerContext, Runnable
from pycm.controller.worker import Controller, Result, TerminalError
from pycm.kube.resources import Resource
from pycm.record.recorder import EventRecorder

__all__ = [
    "TERMINAL_ERROR_REASON",
    "ControllerBuilder",
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
Predicate = Callable[[Obj], bool]
"""Whether an object's event should enqueue anything."""
MapFunc = Callable[[Obj], Iterable[Request | str]]
"""The requests (or keys) an event on a watched object maps to."""


@dataclass(frozen=True, slots=True)
class _Watch:
    resource: Resource
    metadata_only: bool
    # The keys an event on obj enqueues (already filtered by the predicate).
    keys: Callable[[Obj], Iterable[str]]
    predicate: Predicate | None


def _object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return Request(str(meta.get("namespace", "")), str(meta.get("name", ""))).key


class ControllerBuilder:
    """Collects what a controller watches, then builds it with :meth:`complete`."""

    def __init__(
        self,
        ctx: ControllerContext,
        name: str,
        *,
        workers: int = 1,
        max_retries: int | _Unset | None = _UNSET,
        recorder: EventRecorder | None = None,
        priority_queue: bool = True,
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
        # controller-runtime's default since 0.22; False: a FIFO queue, as the built-ins'.
        self._priority_queue = priority_queue
        self._for: Resource | None = None
        self._for_metadata_only = False
        self._watches: list[_Watch] = []
        self._built = False

    # -- what to watch ------------------------------------------------------------------------

    def for_(
        self,
        resource: Resource,
        *,
        predicate: Predicate | None = None,
        metadata_only: bool = False,
    ) -> ControllerBuilder:
        """The primary resource: an event on one of its objects enqueues that object."""
        if self._for is not None:
            raise ValueError(f"{self.name}: for_() was already called ({self._for.resource})")
        self._for = resource
        self._for_metadata_only = metadata_only
        self._watches.append(
            _Watch(resource, metadata_only, lambda obj: (_object_key(obj),), predicate)
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
        if self._for is None:
            raise ValueError(f"{self.name}: call for_() before owns()")
        owner = self._for

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

        self._watches.append(_Watch(resource, metadata_only, owner_keys, predicate))
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

        self._watches.append(_Watch(resource, metadata_only, mapped, predicate))
        return self

    # -- reads --------------------------------------------------------------------------------

    def informer(self, resource: Resource, *, metadata_only: bool = False) -> SharedIndexInformer:
        """The shared informer of ``resource`` (created on first use; started by the manager)."""
        ctx = self._ctx
        factory = ctx.metadata_informer_factory if metadata_only else ctx.informer_factory
        key: Hashable = resource
        return factory.informer_for(key)

    def lister(self, resource: Resource, *, metadata_only: bool = False) -> Lister:
        """Reads of ``resource`` from the shared cache (never mutate what it returns)."""
        return self.informer(resource, metadata_only=metadata_only).lister

    # -- building -----------------------------------------------------------------------------

    def complete(self, reconcile: Reconciler) -> Runnable:
        """Build the controller around ``reconcile``; returns its runnable (``async run()``:
        wait for InformersStarted and the caches, then run the workers until cancelled)."""
        if self._for is None:
            raise ValueError(f"{self.name}: a controller needs for_(resource)")
        if self._built:
            raise ValueError(f"{self.name}: complete() was already called")
        self._built = True
        ctx = self._ctx
        primary = self._for
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

        controller = Controller(
            self.name,
            sync,
            resource=self._for.resource,
            max_retries=self._max_retries,
            clock=ctx.clock,
            bus=ctx.bus,
            metrics=ctx.metrics,
            priority_queue=self._priority_queue,
        )
        self.controller = controller
        informers: list[SharedIndexInformer] = []
        for watch in self._watches:
            informer = self.informer(watch.resource, metadata_only=watch.metadata_only)
            if informer not in informers:
                informers.append(informer)
            informer.add_event_handler(
                _handler(controller, watch), name=f"{self.name}/{watch.resource.resource}"
            )
        ctx.register_queue(self.name, controller)
        workers = self._workers

        resources = list(dict.fromkeys(watch.resource for watch in self._watches))

        async def synced() -> bool:
            # A resource nobody serves (a constant naming a CRD not installed) would have its
            # informer retry list-and-watch for ever and /readyz fail with no word of why: the
            # controller stops instead, naming it (NoKindMatchError, one line from the manager).
            if ctx.rest_mapper is not None:
                for resource in resources:
                    await ctx.rest_mapper.resource_for_plural(
                        resource.group, resource.version, resource.resource
                    )
            await ctx.informers_started.wait()
            for informer in informers:
                await informer.wait_synced()
            return True

        async def run() -> None:
            await controller.run(workers, synced)

        return run


def _handler(controller: Controller, watch: _Watch) -> HandlerFuncs:
    """Event handlers that only compute keys and enqueue (the work is the reconcile's)."""
    passes = watch.predicate

    def enqueue(obj: Obj, event: str, old: Obj | None = None, initial: bool = False) -> None:
        keys = list(watch.keys(obj))
        if not keys:
            return
        trigger = controller.trigger(obj, event, old, initial)
        for key in keys:
            controller.enqueue(key, trigger)

    def on_add(obj: Obj, is_in_initial_list: bool) -> None:
        if passes is None or passes(obj):
            enqueue(obj, "add", initial=is_in_initial_list)

    def on_update(old: Obj, new: Obj) -> None:
        if passes is None or passes(new) or passes(old):
            enqueue(new, "update", old)

    def on_delete(obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if passes is None or passes(obj):
            enqueue(obj, "delete")

    return HandlerFuncs(on_add=on_add, on_update=on_update, on_delete=on_delete)
