"""``pycm run``: the manager's start-up, lifetime and shutdown.

Start order (KCM's, and controller-runtime's runnable groups), written in
:meth:`Manager._start`, each step delegated to the module named:

1. the trace recorder (``--trace-file``) and the state reducer, so nothing is missed
   (:mod:`pycm.app.observers`);
2. the client configuration and the root client; wait for the API server's /healthz
   (polling 1 s, at most 10 s) (:mod:`pycm.app.connect`);
3. health checks, then secure and insecure serving — before leader election, so standbys
   serve /healthz and /metrics too (:mod:`pycm.app.serve`);
4. leader election (``--leader-elect``): the rest runs only while leading (OnStartedLeading)
   (:mod:`pycm.app.election`);
5. StartControllers (:mod:`pycm.app.startcontrollers`): the controller context (clients with
   user agent ``pycm/<controller>``, the informer factories, InformersStarted;
   :mod:`pycm.app.context`), each enabled controller's init (with the
   ``--controller-start-interval`` jitter), then both factories started, InformersStarted
   closed, and the controllers' workers run once their caches sync.

With ``--sharded`` (pycm's own) step 4 also joins the member's ring (:mod:`pycm.app.membership`)
and step 5 runs up to three times: the namespace-sharded controllers at once on every member,
each on its share of the namespaces; the uid-sharded ones (a descriptor's ``sharding="uid"``, if
any is registered) likewise on its share of their objects' uids, in a context of their own (its
primary informers sharded by uid); and the singletons (``sharding="singleton"``) under the
leader lease.

With ``--leader-elect-warm-standby`` (controller-runtime's EnableWarmup; KCM has none) step 5 is
split at the lease: everything up to InformersStarted runs right after the election starts,
leading or not — the informers list and watch, their handlers fill the controllers' queues —
and only the workers (and the controllers' background tasks) wait for OnStartedLeading. A
standby writes nothing: no worker runs, and its controllers' clients are fenced by the
elector's gate, closed while it does not lead. On taking over, the workers start on queues
already filled from synced caches, with no list to wait for.

Each part joins a typed runnable group (:mod:`pycm.app.runnables`: observers, servers, leader
election, caches, controllers), which is where that order is written. Stop (SIGTERM / SIGINT)
is the groups' reverse, bounded by ``SHUTDOWN_TIMEOUT``: controllers, informers and event
recorders, leader election (the lease released), servers, observers. A lost lease is fatal: the
process exits 1, as KCM's OnStoppedLeading does.

The controllers come from the registry (:func:`pycm.app.controllers.build_registry`: built-ins,
controllers registered in code, plugins of the entry-point group ``pycm.controllers``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import sys
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from pycm import __version__
from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID
from pycm.app.config import CompletedConfig
from pycm.app.connect import connect, wait_for_api_server
from pycm.app.context import ControllerContext
from pycm.app.controllers import build_registry
from pycm.app.election import start_election
from pycm.app.errors import EXIT_FAILED, EXIT_OK, ManagerError
from pycm.app.logs import configure_logging
from pycm.app.manager_metrics import register_manager_metrics
from pycm.app.membership import start_membership
from pycm.app.observers import Observers
from pycm.app.parts import Parts
from pycm.app.registry import Registry
from pycm.app.runnables import Group, RunnableGroups
from pycm.app.serve import COMPONENT, Serving, add_health_checks
from pycm.app.sharding import ShardedMember
from pycm.app.startcontrollers import ControllerStarter
from pycm.controller.descriptor import (
    SHARD_BY_NAMESPACE,
    SHARD_BY_UID,
    SINGLETON,
    ControllerDescriptor,
)
from pycm.controller.metrics import ControllerMetrics
from pycm.kube import Client
from pycm.leaderelection import LeaderElector
from pycm.server import HealthRegistry
from pycm.server.dashboard_door import DashboardMounter
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import ManagerStopped, StartupBegan
from pycm.util.clock import REAL_CLOCK, Clock, SkewedClock
from pycm.workqueue.inspect import InspectableQueue

__all__ = [
    "COMPONENT",
    "SHUTDOWN_TIMEOUT",
    "Manager",
    "ManagerError",
    "debug_clock",
    "run_manager",
]

log = logging.getLogger("pycm.app")

SHUTDOWN_TIMEOUT = 15.0
# The observers' own budget after the rest stopped: they flush what the shutdown emitted.
OBSERVER_STOP = 5.0


class Manager:
    """The composition root's lifetime: it holds the runnable groups and the parts that join
    them, and writes the start order down in :meth:`_start`; each part is built by its own
    module."""

    def __init__(
        self,
        config: CompletedConfig,
        *,
        bus: Bus | None = None,
        clock: Clock = REAL_CLOCK,
        registry: Registry | None = None,
        metrics_registry: CollectorRegistry | None = None,
        dashboard_mounter: DashboardMounter | None = None,
    ) -> None:
        self.config = config
        self.identity = config.leader_election.identity
        self.bus = bus or default_bus()
        if not self.bus.instance:
            self.bus.instance = self.identity
        self.clock = clock
        # Built explicitly (never by an import): `pycm run` builds the same one for its flags.
        self.registry = registry if registry is not None else build_registry()
        self.metrics_registry = metrics_registry or CollectorRegistry()
        register_manager_metrics(self.metrics_registry, self._informers)
        self.health = HealthRegistry(bus=self.bus)
        self.groups = RunnableGroups(
            on_failure=lambda name, exc: self._fail(f"{name} failed: {exc}"), clock=clock
        )
        self._stop = asyncio.Event()
        self._fatal: str | None = None
        self._rng = random.Random()
        self.root: Client | None = None
        # Closed at shutdown, before the root: the delegated-review and service-account ones.
        self._extra_clients: list[Client] = []
        self._controller_metrics = ControllerMetrics(self.metrics_registry)
        self.parts = Parts(
            config=config,
            identity=self.identity,
            bus=self.bus,
            clock=clock,
            health=self.health,
            metrics_registry=self.metrics_registry,
            groups=self.groups,
            fail=self._fail,
        )
        self.observers = Observers(self.parts)
        self.serving = Serving(
            self.parts,
            observers=self.observers,
            queues=self._queues,
            connect=self._connect,
            adopt=self._extra_clients.append,
            dashboard_mounter=dashboard_mounter,  # handed down by pycm.cli, or none
        )
        self.elector: LeaderElector | None = None
        # StartControllers, once the root client is there (None before); under --sharded the
        # leader's one runs the singletons only.
        self.starter: ControllerStarter | None = None
        # --sharded: the member, and StartControllers of the sharded controllers: by namespace,
        # and by uid (None when no uid-sharded controller is registered).
        self.member: ShardedMember | None = None
        self.sharded_starter: ControllerStarter | None = None
        self.uid_starter: ControllerStarter | None = None

    @property
    def context(self) -> ControllerContext | None:
        """The controller context (None before StartControllers: while not leading, unless
        the replica is a warm standby); under --sharded, the sharded controllers' one."""
        contexts = self.contexts()
        return contexts[0] if contexts else None

    def contexts(self) -> list[ControllerContext]:
        """Every controller context built so far (under --sharded: the sharded controllers'
        — by namespace, and by uid if any — and, while leading, the singletons')."""
        return [s.context for s in self._starters() if s.context is not None]

    @property
    def state(self) -> Any:
        """The state reducer's State (None without the reducer): object histories are read
        from it."""
        return self.observers.state

    # -- lifetime -------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    def _stopping(self) -> bool:
        return self._stop.is_set()

    def _fail(self, reason: str) -> None:
        if self._fatal is None:
            self._fatal = reason
        self._stop.set()

    async def run(self) -> int:
        """Start, run until a signal or a fatal error, stop. Returns the exit status."""
        failed = EXIT_FAILED
        try:
            await self._start_unless_stopped()
            await self._stop.wait()
        except ManagerError as exc:
            self._fatal = str(exc)
            failed = exc.exit_code
        finally:
            await asyncio.shield(self._shutdown())
        code = failed if self._fatal else EXIT_OK
        if self._fatal:
            log.error("%s", self._fatal)
        self.bus.point(ManagerStopped(reason=self._fatal or "stopped", exit_code=code))
        await self.observers.close()
        return code

    async def _start_unless_stopped(self) -> None:
        """``_start``, cancelled when a stop is asked for first (a signal, or a fatal error of
        a task already running): a start-up step that does not return — a controller's init
        waiting for informers that only start after every init, an API server that does not
        answer — must not keep SIGTERM from stopping the manager."""
        loop = asyncio.get_running_loop()
        start = loop.create_task(self._start(), name="manager start")
        stop = loop.create_task(self._stop.wait(), name="manager start: stop requested")
        try:
            await asyncio.wait({start, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not start.done():
                start.cancel()
            await asyncio.gather(start, stop, return_exceptions=True)
        if not start.cancelled():
            start.result()  # a ManagerError is the caller's

    async def _start(self) -> None:
        """The start order: each step opens its runnable group once its members are in."""
        le = self.config.leader_election
        # 1. Observers first, so they see everything after.
        self.observers.start()
        await self.groups.start(Group.OBSERVERS)
        with self.bus.step(StartupBegan(command="run", version=__version__)) as startup:
            # 2. The root client, once the API server answers.
            self.root = root = await self._connect()
            await wait_for_api_server(root, self.clock)
            # 3. Health checks and serving, before the election: standbys serve too.
            add_health_checks(self.health, self.contexts)
            await self.serving.start(root)
            await self.groups.start(Group.SERVERS)
            if self.config.sharding.sharded:
                # 4–5, sharded: join the ring; its controllers run at once, the singletons
                # under the leader lease.
                startup.finish(controllers_started=await self._start_sharded(root))
            elif le.leader_elect:
                # 4. Leader election; leading runs the controllers (_take_over).
                self.elector = start_election(self.parts, root, take_over=self._take_over)
                # Built before the election runs: a takeover waits for the warm start-up.
                starter = self._build_starter(root, warm=le.warm_standby)
                await self.groups.start(Group.LEADER_ELECTION)
                if le.warm_standby:
                    # 5a. Leading or not: up to InformersStarted (the takeover runs the rest).
                    await starter.warm_up()
                startup.finish(controllers_started=0)
            else:
                starter = self._build_starter(root, warm=False)
                await self.groups.start(Group.LEADER_ELECTION)  # none: we lead at once
                # 5. StartControllers: CACHES, then CONTROLLERS.
                started = await starter.start()
                startup.finish(controllers_started=started)

    async def _start_sharded(self, root: Client) -> int:
        """Sharded mode's steps 4 and 5: the member joins when LEADER_ELECTION opens (before
        any informer starts, so each starts on the member's share); the sharded controllers
        start at once; the singletons start on leading (or at once without --leader-elect)."""
        le = self.config.leader_election
        self.member = member = await start_membership(self.parts, root)
        if le.leader_elect:
            self.elector = start_election(self.parts, root, take_over=self._take_over)
        singletons = self._build_starter(root, warm=False, only=_is_singleton)
        self.sharded_starter = self._new_starter(
            root, elector=None, warm=False, only=_is_namespace_sharded, member=member
        )
        if any(d.sharding == SHARD_BY_UID for d in self.registry):
            self.uid_starter = self._new_starter(
                root,
                elector=None,
                warm=False,
                only=_is_uid_sharded,
                member=member,
                shard_field=FIELD_UID,
            )
        await self.groups.start(Group.LEADER_ELECTION)
        started = await self.sharded_starter.start()
        if self.uid_starter is not None:
            started += await self.uid_starter.start()
        if not le.leader_elect:
            started += await singletons.start()
        return started

    def _build_starter(
        self,
        root: Client,
        *,
        warm: bool,
        only: Callable[[ControllerDescriptor], bool] | None = None,
    ) -> ControllerStarter:
        """The leader's StartControllers (under --sharded: the singletons')."""
        self.starter = self._new_starter(root, elector=self.elector, warm=warm, only=only)
        return self.starter

    def _new_starter(
        self,
        root: Client,
        *,
        elector: LeaderElector | None,
        warm: bool,
        only: Callable[[ControllerDescriptor], bool] | None,
        member: ShardedMember | None = None,
        shard_field: str = FIELD_NAMESPACE,
    ) -> ControllerStarter:
        return ControllerStarter(
            self.parts,
            self.registry,
            root,
            elector=elector,
            warm=warm,
            rng=self._rng,
            metrics=self._controller_metrics,
            adopt=self._extra_clients.append,
            stopping=self._stopping,
            only=only,
            member=member,
            shard_field=shard_field,
        )

    async def _take_over(self) -> None:
        """OnStartedLeading: StartControllers' run (the elector starts only once the starter
        is built)."""
        assert self.starter is not None
        await self.starter.take_over()

    async def _connect(self, kubeconfig: str | None = None) -> Client:
        """The root client (or, with ``kubeconfig``, a client for delegated authn/authz)."""
        return await connect(
            self.config,
            bus=self.bus,
            registry=self.metrics_registry,
            clock=self.clock,
            export_ratio=self.observers.export_ratio,
            kubeconfig=kubeconfig,
        )

    def _starters(self) -> list[ControllerStarter]:
        starters = (self.sharded_starter, self.uid_starter, self.starter)
        return [s for s in starters if s is not None]

    def _queues(self) -> dict[str, InspectableQueue]:
        return {name: q for s in self._starters() for name, q in s.queues().items()}

    def _informers(self) -> list[tuple[Any, Any]]:
        return [pair for s in self._starters() for pair in s.informers()]

    # -- shutdown -------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        """Stop the groups in reverse (controllers, caches, election, servers, observers —
        bounded), then close the API clients."""
        for name in await self.groups.stop(SHUTDOWN_TIMEOUT, observers_timeout=OBSERVER_STOP):
            log.error("task %s did not stop within %.0fs", name, SHUTDOWN_TIMEOUT)
        for extra in self._extra_clients:
            await extra.aclose()
        if self.root is not None:
            await self.root.aclose()


def _is_singleton(descriptor: ControllerDescriptor) -> bool:
    return descriptor.sharding == SINGLETON


def _is_namespace_sharded(descriptor: ControllerDescriptor) -> bool:
    return descriptor.sharding == SHARD_BY_NAMESPACE


def _is_uid_sharded(descriptor: ControllerDescriptor) -> bool:
    return descriptor.sharding == SHARD_BY_UID


def debug_clock(config: CompletedConfig) -> Clock:
    """The real clock, or a skewed one under --debug-clock-rate / --debug-clock-offset (a
    fault for showing leader election's margin against clock skew; loud, since a replica
    running it can take a healthy lease or keep acting after it lost one)."""
    debugging = config.debugging
    if debugging.clock_rate == 1.0 and debugging.clock_offset == 0.0:
        return REAL_CLOCK
    log.warning(
        "debugging: this replica's clock runs at %g× real time, its wall clock %+gs off "
        "(--debug-clock-rate / --debug-clock-offset); leader election is not safe beyond "
        "its margin",
        debugging.clock_rate,
        debugging.clock_offset,
    )
    return SkewedClock(debugging.clock_rate, debugging.clock_offset)


def run_manager(
    config: CompletedConfig, *, dashboard_mounter: DashboardMounter | None = None
) -> int:
    """The runner of ``pycm run``: run the manager on a fresh event loop until a signal (with
    the web dashboard on its secure port when ``pycm.cli`` hands ``dashboard_mounter`` down)."""
    configure_logging(config.logs.format, config.logs.verbosity, vmodule=config.logs.vmodule)

    async def main() -> int:
        manager = Manager(config, clock=debug_clock(config), dashboard_mounter=dashboard_mounter)
        loop = asyncio.get_running_loop()
        signals = 0

        def on_signal() -> None:
            # KCM's (apiserver's SetupSignalContext): the first SIGTERM/SIGINT stops in
            # order, a second one exits at once with status 1 — the way out of a shutdown
            # held up by a controller that does not stop.
            nonlocal signals
            signals += 1
            if signals == 1:
                manager.request_stop()
                return
            sys.stderr.write("pycm run: second signal, exiting without a clean shutdown\n")
            sys.stderr.flush()
            os._exit(EXIT_FAILED)

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        try:
            return await manager.run()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        sys.stderr.write("pycm run: interrupted\n")
        return 130
