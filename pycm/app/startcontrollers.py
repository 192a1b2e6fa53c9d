"""StartControllers, as KCM's: the controller context, each enabled controller's init (in
random order, with the ``--controller-start-interval`` jitter), both informer factories
started and InformersStarted closed, then the controllers' runs (their workers start once
their caches sync), the ones still waiting for their kinds, and the plugins' background tasks.

It is split at InformersStarted for the warm standby (``--leader-elect-warm-standby``,
controller-runtime's EnableWarmup): :meth:`ControllerStarter.warm_up` prepares before leading
and :meth:`ControllerStarter.take_over` runs the workers on leading; without it
:meth:`ControllerStarter.start` does both, on leading or at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID
from pycm.app.context import ControllerContext, ControllerGate, build_context
from pycm.app.controller_init import checked_runnable, init_controller
from pycm.app.errors import ManagerError
from pycm.app.parts import Parts
from pycm.app.registry import Registry
from pycm.app.runnables import Group
from pycm.app.service_account_clients import ServiceAccountClients
from pycm.app.sharding import ShardedMember
from pycm.app.wait_for_resources import wait_for_resource
from pycm.controller import ControllerDescriptor, Runnable
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.stuck import StuckWorkerWatcher
from pycm.kube import Client
from pycm.kube.restmapper import NoKindMatchError
from pycm.leaderelection import LeaderElector
from pycm.trace.kinds import ControllerDisabled, ControllersTookOver, InformersStarted
from pycm.workqueue.inspect import InspectableQueue

__all__ = ["INFORMER_STOP_TIMEOUT", "ControllerStarter"]

log = logging.getLogger("pycm.app")

# Informer factories get this long to stop their informers.
INFORMER_STOP_TIMEOUT = 5.0

_FIELD_NAMES = {FIELD_NAMESPACE: "namespaces", FIELD_UID: "uids"}


@dataclass
class _Prepared:
    """What StartControllers built before the workers run: the context, the controllers' runs
    and the controllers waiting for their kinds (--wait-for-resources)."""

    ctx: ControllerContext
    standby: bool = False  # built before leading (--leader-elect-warm-standby)
    runnables: list[tuple[str, Runnable]] = field(default_factory=list)
    waiting: list[tuple[ControllerDescriptor, NoKindMatchError]] = field(default_factory=list)


class ControllerStarter:
    """StartControllers over ``root``, for one manager. ``elector``: None without leader
    election; ``warm``: --leader-elect-warm-standby (built inside a running event loop, for
    the future a takeover waits on). ``adopt(client)`` hands each service-account client to
    the manager, which closes it at shutdown; ``parts.fail(reason)`` stops the manager;
    ``stopping()`` says whether it is stopping.

    Under ``--sharded`` a manager has three: two with ``member`` set, for the sharded
    controllers (``only`` picks them; every member runs them at once, each key admitted by the
    member's share, every write fenced by the member's own Lease) — ``shard_field`` the
    namespace (the namespaced informers caching only the member's namespaces) or the uid (the
    controllers' primary informers caching only the member's objects), each in its own
    context, so an informer is sharded one way; and one for the singletons, under the elector
    as without sharding."""

    def __init__(
        self,
        parts: Parts,
        registry: Registry,
        root: Client,
        *,
        elector: LeaderElector | None,
        warm: bool,
        rng: random.Random,
        metrics: ControllerMetrics,
        adopt: Callable[[Client], None],
        stopping: Callable[[], bool],
        only: Callable[[ControllerDescriptor], bool] | None = None,
        member: ShardedMember | None = None,
        shard_field: str = FIELD_NAMESPACE,
    ) -> None:
        self.parts = parts
        self.only = only
        self.member = member
        self.shard_field = shard_field
        self.config = parts.config
        self.bus = parts.bus
        self.clock = parts.clock
        self.groups = parts.groups
        self.fail = parts.fail
        self.registry = registry
        self.root = root
        self.elector = elector
        self.rng = rng
        self.metrics = metrics
        self.stopping = stopping
        self.service_accounts: ServiceAccountClients | None = None
        if self.config.generic.use_service_account_credentials:
            self.service_accounts = ServiceAccountClients(
                root,
                bus=parts.bus,
                clock=parts.clock,
                metrics_registry=parts.metrics_registry,
                adopt=adopt,
            )
        self.context: ControllerContext | None = None
        # --leader-elect-warm-standby: the controllers built and their informers started before
        # leading; set once that is done (a takeover waits for it), never failed (a failure
        # stops the manager instead). None without warm standby.
        self._warmed: asyncio.Future[_Prepared] | None = None
        if warm:
            self._warmed = asyncio.get_running_loop().create_future()

    # -- what the manager's checks and metrics read ----------------------------------------

    def queues(self) -> dict[str, InspectableQueue]:
        """The controllers' work queues by controller name (none before StartControllers: while
        not leading, unless the replica is a warm standby, whose queues fill as it watches)."""
        ctx = self.context
        if ctx is None:
            return {}
        return {name: controller.queue for name, controller in ctx.queues.items()}

    def informers(self) -> list[tuple[Any, Any]]:
        """The controllers' informers, of both factories (none while not leading, unless the
        replica is a warm standby): a controller (a plugin's, say) may watch metadata only."""
        ctx = self.context
        if ctx is None:
            return []
        factories = (ctx.informer_factory, ctx.metadata_informer_factory)
        return [pair for factory in factories for pair in factory.informers.items()]

    # -- the phases -------------------------------------------------------------------------

    async def start(self) -> int:
        """Build every enabled controller, start the informers, run the controllers."""
        return await self._run(await self._prepare(standby=False))

    async def warm_up(self) -> None:
        """The warm standby's half, leading or not: everything up to InformersStarted."""
        assert self._warmed is not None
        self._warmed.set_result(await self._prepare(standby=True))

    async def take_over(self) -> None:
        """OnStartedLeading: run the controllers — warm, on the informers started while this
        replica was a standby (waiting for that start-up if it has not finished), or cold,
        building and starting everything now."""
        if self._warmed is None:
            self.bus.point(ControllersTookOver(warm=False))
            await self.start()
            return
        prepared = await asyncio.shield(self._warmed)
        ctx = prepared.ctx
        informers = [informer for _, informer in self.informers()]
        synced = sum(1 for informer in informers if informer.has_synced())
        queued = sum(len(controller.queue) for controller in ctx.queues.values())
        self.bus.point(
            ControllersTookOver(warm=True, informers=len(informers), synced=synced, queued=queued)
        )
        log.info(
            "leaderelection: taking over with warm caches (%d of %d informers synced, "
            "%d keys queued)",
            synced,
            len(informers),
            queued,
        )
        await self._run(prepared)

    def _gate(self) -> ControllerGate | None:
        """What fences the writes and the workers: the member's Lease for the sharded
        controllers, else the elector's renew gate (None: neither)."""
        if self.member is not None:
            return self.member.fence
        return self.elector.gate if self.elector is not None else None

    async def _prepare(self, *, standby: bool) -> _Prepared:
        """StartControllers up to InformersStarted: the context, each enabled controller's init
        (its informers and event handlers registered), both factories started. ``standby``:
        done before leading (--leader-elect-warm-standby); nothing here writes — an init's
        client is fenced by the elector's gate, closed until this replica leads."""
        cfg = self.config
        build = None
        if self.service_accounts is not None:
            build = await self.service_accounts.builder()
        ctx = build_context(
            self.parts,
            self.root,
            rng=self.rng,
            metrics=self.metrics,
            gate=self._gate(),
            service_accounts=build,
        )
        self.context = ctx
        enabled = set(cfg.controllers.enabled) or {
            name for name, on in self.registry.resolve(cfg.controllers.controllers).items() if on
        }
        descriptors = list(self.registry)
        random.shuffle(descriptors)  # KCM starts them in random order
        prepared = _Prepared(ctx, standby=standby)
        interval = cfg.controllers.controller_start_interval
        for descriptor in descriptors:
            if self.only is not None and not self.only(descriptor):
                continue  # the other starter's (sharded mode)
            if descriptor.name not in enabled:
                self.bus.point(
                    ControllerDisabled(controller=descriptor.name, reason="--controllers")
                )
                continue
            if interval > 0:
                await self.clock.sleep(self.rng.uniform(0, 2 * interval))
            try:
                runnable = await self._init(ctx, descriptor)
            except NoKindMatchError as exc:
                # Its kind is not served (a CRD not installed yet): one line naming both and
                # exit 1, as controller-runtime stops at start — unless it may wait for it.
                if not (cfg.controllers.wait_for_resources or descriptor.wait_for_resources):
                    raise ManagerError(f"{self._who(descriptor)} failed to start: {exc}") from None
                prepared.waiting.append((descriptor, exc))
                continue
            if runnable is not None:
                prepared.runnables.append((descriptor.name, runnable))
        if self._has_tokens() and not standby:
            await self._first_tokens()
        if self.member is not None:
            self._shard(ctx)
        informers = _InformerFactories(ctx)
        name = "informer factories" + (
            f" (sharded by {_FIELD_NAMES[self.shard_field]})" if self.member is not None else ""
        )
        await self.groups.add_service(Group.CACHES, name, informers)
        await self.groups.start(Group.CACHES)
        ctx.informers_started.set()
        # (A warm start-up whose election was won meanwhile is no standby's any more.)
        leading = self.elector is None or self.elector.is_leader()
        self.bus.point(
            InformersStarted(informers=informers.started, standby=standby and not leading)
        )
        return prepared

    async def _run(self, prepared: _Prepared) -> int:
        """StartControllers from InformersStarted on: the reconcile gate on every queue, the
        controllers' runs (their workers start once their caches sync), the controllers still
        waiting for their kinds, the background tasks. Returns how many controllers run."""
        ctx = prepared.ctx
        if prepared.standby and self._has_tokens():
            # A standby asks for no service account or token (they are writes): its informers
            # read with the root client, and its controllers' clients wait for the lease too.
            await self._first_tokens()
        gate = self._gate()
        if gate is not None:
            # Before any worker runs: no reconcile starts on a stale lease (leaderelection/gate;
            # the controllers' clients fence each write with the same gate: build_context).
            for controller in ctx.queues.values():
                controller.gate = gate
        for name, runnable in prepared.runnables:
            self.groups.add(Group.CONTROLLERS, f"controller {name}", runnable)
        for descriptor, missing in prepared.waiting:
            wait_for_resource(
                ctx,
                descriptor,
                missing,
                init=functools.partial(self._init, ctx, descriptor),
                health=self.parts.health,
                clock=self.clock,
                groups=self.groups,
                gate=gate,
                # (Sharded: the late controller's keys gated, its informers on the share too.)
                before_start=functools.partial(self._shard, ctx) if self.member else None,
            )

        # Plugins' own background tasks run with the controllers, added now or later; their
        # failure is one line too.
        def add_task(name: str, run: Runnable) -> None:
            task = checked_runnable(run, f"background task {name!r}", self.fail, self.stopping)
            self.groups.add(Group.CONTROLLERS, name, task)

        for name, runnable in ctx.pending_runnables:
            add_task(name, runnable)
        ctx.pending_runnables.clear()
        ctx.on_runnable = add_task
        threshold = self.config.controllers.stuck_worker_threshold
        if threshold > 0:
            watcher = StuckWorkerWatcher(self.queues, threshold, bus=self.bus, clock=self.clock)
            self.groups.add(Group.CONTROLLERS, "stuck-worker watcher", watcher.run)
        await self.groups.start(Group.CONTROLLERS)
        return len(prepared.runnables)

    def _shard(self, ctx: ControllerContext) -> None:
        """Before the informers start: each controller's keys through the member's gate; by
        namespace, each namespaced informer listing and watching the member's share only; by
        uid, each controller's primary informer (the others cache everything: a secondary
        object's uid says nothing of its owner's). Run again when a controller that waited for
        its kind is built (--wait-for-resources): what is already gated or sharded stays so."""
        member = self.member
        assert member is not None
        field = self.shard_field
        controllers = list(ctx.queues.values())
        for controller in controllers:
            try:
                member.add_controller(controller, field)
            except ValueError as exc:
                raise ManagerError(str(exc)) from None
        primaries = {c.primary for c in controllers if c.primary is not None}
        # By uid, an informer another controller reads as a secondary stays whole for it (its
        # primary's gate still admits only this member's keys: memory is not divided there).
        whole = set()
        if field == FIELD_UID:
            whole = {i for c in controllers for i in c.watched if i is not c.primary}
        sharded: list[str] = []
        for factory in (ctx.informer_factory, ctx.metadata_informer_factory):
            for name, informer in factory.informers.items():
                if field == FIELD_UID and (informer not in primaries or informer in whole):
                    continue
                if member.add_informer(informer, field, keys=informer in primaries):
                    sharded.append(str(name))
        log.info(
            "sharding: %d controllers gated by this member's share of %s; informers sharded: %s",
            len(controllers),
            _FIELD_NAMES[field],
            ", ".join(sharded) or "none",
        )
        for informer in sorted(primaries & whole, key=lambda i: i.resource):
            log.info(
                "sharding: %s is read by other uid-sharded controllers too, so every member "
                "caches all of it (only its keys are divided)",
                informer.resource,
            )

    # -- one controller -----------------------------------------------------------------------

    def _who(self, descriptor: ControllerDescriptor) -> str:
        return f"controller {descriptor.name!r} ({self.registry.source(descriptor.name)})"

    async def _init(
        self, ctx: ControllerContext, descriptor: ControllerDescriptor
    ) -> Runnable | None:
        return await init_controller(
            ctx,
            descriptor,
            who=self._who(descriptor),
            bus=self.bus,
            fail=self.fail,
            stopping=self.stopping,
        )

    def _has_tokens(self) -> bool:
        return self.service_accounts is not None and bool(self.service_accounts.sources)

    async def _first_tokens(self) -> None:
        assert self.service_accounts is not None
        await self.service_accounts.first_tokens()


class _InformerFactories:
    """Both informer factories as a CACHES-group service: started once every controller is
    built (so each informer a controller asked for starts at once), shut down after them."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.started = 0

    async def start(self) -> None:
        ctx = self.ctx
        self.started = ctx.informer_factory.start() + ctx.metadata_informer_factory.start()

    async def stop(self) -> None:
        await self.ctx.informer_factory.shutdown(timeout=INFORMER_STOP_TIMEOUT)
        await self.ctx.metadata_informer_factory.shutdown(timeout=INFORMER_STOP_TIMEOUT)
