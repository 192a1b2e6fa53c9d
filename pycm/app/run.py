"""``pycm run``: the manager's start-up, lifetime and shutdown.

Start order (KCM's, and controller-runtime's runnable groups):

1. the trace recorder (``--trace-file``) and the state reducer, so nothing is missed;
2. the client configuration and the root client; wait for the API server's /healthz
   (polling 1 s, at most 10 s);
3. health checks, then secure and insecure serving — before leader election, so standbys
   serve /healthz and /metrics too;
4. leader election (``--leader-elect``): the rest runs only while leading (OnStartedLeading);
5. StartControllers: the controller context (clients with user agent ``pycm/<controller>``,
   the informer factories, InformersStarted), each enabled controller's init (with the
   ``--controller-start-interval`` jitter), then both factories started, InformersStarted
   closed, and the controllers' workers run once their caches sync.

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
import contextlib
import functools
import logging
import os
import random
import signal
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, cast

from prometheus_client import CollectorRegistry
from starlette.routing import BaseRoute, Mount

from pycm import __version__
from pycm.app.clients import EventSinkAdapter, LeaseClientAdapter, ReviewPosterAdapter
from pycm.app.config import CompletedConfig
from pycm.app.context import ControllerContext, resync_period
from pycm.app.controllers import build_registry
from pycm.app.features import (
    BINARY_VERSION,
    COMPONENT_FLAGZ,
    COMPONENT_STATUSZ,
    COORDINATED_LEADER_ELECTION,
    WATCH_LIST_CLIENT,
)
from pycm.app.logs import configure_logging
from pycm.app.manager_metrics import register_manager_metrics
from pycm.app.options.leaderelection import lease_namespace
from pycm.app.registry import Registry
from pycm.app.runnables import Group, RunnableGroups
from pycm.app.serviceaccounts import (
    SERVICE_ACCOUNT_NAMESPACE,
    ServiceAccountTokenSource,
    username_for,
)
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller import ControllerDescriptor, Runnable
from pycm.controller.metrics import ControllerMetrics
from pycm.controller.stuck import StuckWorkerWatcher
from pycm.kube import Client, ConfigError, load_config
from pycm.kube.errors import KubeError
from pycm.kube.restmapper import NoKindMatchError, RESTMapper
from pycm.kube.transport import build_ssl_context
from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaderHealthzAdaptor,
)
from pycm.leaderelection.candidate import LeaseCandidate, kube_version
from pycm.leaderelection.elector import LeaderMetrics
from pycm.leaderelection.resourcelock import LeaseLock
from pycm.otel import start_otel_sink
from pycm.record import EventRecorder
from pycm.server import (
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    DelegatingTokenReviewer,
    HealthRegistry,
    InsecureServer,
    SecureServer,
    SecureServingConfig,
    build_routes,
)
from pycm.server.dashboard_door import (
    DASHBOARD_PATHS,
    DASHBOARD_PREFIX,
    DashboardDoor,
    DashboardMounter,
)
from pycm.server.debug import OpenStreams, Snapshot, debug_routes
from pycm.server.debug_objects import objects_route
from pycm.server.debug_queues import LastError, queues_route
from pycm.server.flagz import flagz_route
from pycm.server.statusz import StatuszInfo, statusz_route
from pycm.server.tlsnames import cipher_suites, tls_version
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import (
    ControllerDisabled,
    ControllerInitBegan,
    ControllersTookOver,
    InformersStarted,
    ManagerStopped,
    StartupBegan,
)
from pycm.trace.recorder import Recorder
from pycm.util.clock import REAL_CLOCK, Clock, SkewedClock
from pycm.workqueue.inspect import InspectableQueue

__all__ = ["COMPONENT", "SHUTDOWN_TIMEOUT", "Manager", "debug_clock", "run_manager"]

COMPONENT = "pycm"  # the component name the z-pages give (KCM's "kube-controller-manager")

log = logging.getLogger("pycm.app")

SHUTDOWN_TIMEOUT = 15.0
API_SERVER_WAIT = 10.0
# A queue with keys waiting and no worker progress for this long fails the workqueues check.
QUEUE_STALL_THRESHOLD = 60.0
# Reason the manager gave up, kept for the exit status and the ManagerStopped event.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# Informer factories get this long to stop their informers.
INFORMER_STOP_TIMEOUT = 5.0
# How often a controller waiting for its kind (--wait-for-resources) reads discovery again: a
# CRD is served within a second or two of its creation.
RESOURCE_POLL_INTERVAL = 2.0
# The observers' own budget after the rest stopped: they flush what the shutdown emitted.
OBSERVER_STOP = 5.0


class ManagerError(Exception):
    """A start-up failure with a message fit for the user (no traceback); ``exit_code`` 2 when
    the user's configuration is at fault (a kubeconfig found bad only at start-up, such as one
    named by KUBECONFIG), as for a bad flag."""

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Manager:
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
        self._dashboard_mounter = dashboard_mounter  # handed down by pycm.cli, or none
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
        self.servers: list[SecureServer | InsecureServer] = []
        self.root: Client | None = None
        self._extra_clients: list[Client] = []
        # --use-service-account-credentials: the token source of each controller's client.
        self._token_sources: list[ServiceAccountTokenSource] = []
        self._streams = OpenStreams()
        self.elector: LeaderElector | None = None
        self.context: ControllerContext | None = None
        self._recorder: Recorder | None = None
        # The share of traces exported by ratio (0 without an exporter): the traceparent flag.
        self._export_ratio = 0.0
        self._controller_metrics = ControllerMetrics(self.metrics_registry)
        self._snapshot: Snapshot | None = None
        # What a backing-off key last failed with, from the state reducer (GET /debug/pycm/queues).
        self._last_error: LastError | None = None
        self._state: Any = None  # the reducer's State (object histories are read from it)
        self._dashboard: Any = None  # the web dashboard mounted on the secure port, if any
        # --leader-elect-warm-standby: the controllers built and their informers started before
        # leading; set once that is done (a takeover waits for it), never failed (a failure
        # stops the manager instead). None without warm standby.
        self._warmed: asyncio.Future[_Prepared] | None = None

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
        if self._recorder is not None:
            await self._recorder.close()
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
        cfg = self.config
        self._start_observers()
        await self.groups.start(Group.OBSERVERS)
        with self.bus.step(StartupBegan(command="run", version=__version__)) as startup:
            self.root = await self._connect()
            await self._wait_for_api_server(self.root)
            self._add_health_checks()
            await self._start_serving(self.root)
            await self.groups.start(Group.SERVERS)
            if cfg.leader_election.leader_elect:
                if cfg.leader_election.warm_standby:
                    self._warmed = asyncio.get_running_loop().create_future()
                self._start_election(self.root)
                await self.groups.start(Group.LEADER_ELECTION)
                if self._warmed is not None:
                    # Leading or not: the takeover (OnStartedLeading) waits for this.
                    self._warmed.set_result(await self._prepare_controllers(standby=True))
                startup.finish(controllers_started=0)
            else:
                await self.groups.start(Group.LEADER_ELECTION)  # none: we lead at once
                started = await self.start_controllers()
                startup.finish(controllers_started=started)

    def _start_observers(self) -> None:
        cfg = self.config
        trace_file = cfg.tracing.trace_file
        if trace_file:
            self._recorder = Recorder(trace_file)
            # since=0: the ring still holds what came before (FlagsParsed), so it is recorded.
            recorded = self.bus.subscribe(name="recorder", maxsize=16384, since=0)
            self.groups.add(
                Group.OBSERVERS, "trace recorder", functools.partial(self._recorder.run, recorded)
            )
        try:  # --otlp-endpoint / OTEL_EXPORTER_OTLP_*: None when neither asks for export
            otel = start_otel_sink(self.bus, cfg.tracing, self.identity, self.metrics_registry)
        except ValueError as exc:
            raise ManagerError(f"invalid OpenTelemetry configuration: {exc}") from None
        if otel is not None:
            self._export_ratio = cfg.tracing.sample_ratio
            self.groups.add(Group.OBSERVERS, "otel sink", otel.run)  # it flushes, bounded
        try:
            from pycm.trace.state import State
        except ImportError:  # the reducer module is optional for the manager to run
            return
        from pycm.trace.state.queue_contents import last_error

        state = State(histories=self.config.tracing.object_histories)
        sub = self.bus.subscribe(name="state", maxsize=65536, since=0)

        async def feed() -> None:
            while True:
                await sub.wait()
                for event in sub.drain():
                    state.apply(event)

        self._snapshot = state.snapshot
        instance = self.bus.instance
        self._last_error = lambda controller, key: last_error(state, instance, controller, key)
        self._state = state
        self.groups.add(Group.OBSERVERS, "state reducer", feed)

    async def _connect(self, kubeconfig: str | None = None) -> Client:
        """The root client (or, with ``kubeconfig``, a client for delegated authn/authz)."""
        cfg = self.config
        try:
            client_config = await load_config(
                kubeconfig=kubeconfig or cfg.misc.kubeconfig or None,
                master=None if kubeconfig else cfg.misc.master or None,
                qps=cfg.generic.kube_api_qps,
                burst=cfg.generic.kube_api_burst,
                user_agent="pycm",
            )
        except ConfigError as exc:
            raise ManagerError(
                f"invalid client configuration: {exc}", exit_code=EXIT_USAGE
            ) from None
        client_config = client_config.with_overrides(trace_sample_ratio=self._export_ratio)
        return await Client.connect(
            client_config, bus=self.bus, registry=self.metrics_registry, clock=self.clock
        )

    async def _wait_for_api_server(self, client: Client) -> None:
        deadline = self.clock.monotonic() + API_SERVER_WAIT
        last = ""
        while True:
            try:
                await client.request("GET", "/healthz", verb="get")
                return
            except Exception as exc:
                last = str(exc)
            if self.clock.monotonic() >= deadline:
                raise ManagerError(
                    f"failed to wait for apiserver being healthy: {last or 'no answer'}"
                )
            await self.clock.sleep(1.0)

    def _queues(self) -> dict[str, InspectableQueue]:
        """The controllers' work queues by controller name (none before StartControllers: while
        not leading, unless the replica is a warm standby, whose queues fill as it watches)."""
        ctx = self.context
        if ctx is None:
            return {}
        return {name: controller.queue for name, controller in ctx.queues.items()}

    def _informers(self) -> list[tuple[Any, Any]]:
        """The controllers' informers, of both factories (none while not leading, unless the
        replica is a warm standby): a controller (a plugin's, say) may watch metadata only."""
        ctx = self.context
        if ctx is None:
            return []
        factories = (ctx.informer_factory, ctx.metadata_informer_factory)
        return [pair for factory in factories for pair in factory.informers.items()]

    def _add_health_checks(self) -> None:
        async def informers_synced() -> str | None:
            ctx = self.context
            if ctx is None:
                return None  # not leading (or not yet), and not warm: nothing to sync
            # Both factories: a controller (a plugin's, say) may watch metadata only.
            factories = (ctx.informer_factory, ctx.metadata_informer_factory)
            waiting = [
                name
                for factory in factories
                for name, informer in factory.informers.items()
                if not informer.has_synced()
            ]
            return f"informers not synced: {waiting}" if waiting else None

        self.health.add("informers-synced", informers_synced, livez=False)

        async def workqueues() -> str | None:
            ctx = self.context
            if ctx is None:
                return None
            stalled = [
                f"{name}: {why}"
                for name, controller in ctx.queues.items()
                if (why := controller.stalled(QUEUE_STALL_THRESHOLD)) is not None
            ]
            return "; ".join(stalled) or None

        self.health.add("workqueues", workqueues)

    async def _start_serving(self, client: Client) -> None:
        """The servers join the SERVERS group (started when it opens, right after)."""
        cfg = self.config
        routes = build_routes(
            health=self.health,
            metrics_registry=self.metrics_registry,
            configz={"pycm": dict(cfg.changed)},
            routes=[
                *debug_routes(
                    self.bus,
                    self._snapshot,
                    streams=self._streams,
                    history=self._state.objects.history if self._state is not None else None,
                ),
                queues_route(self._queues, instance=self.identity, last_error=self._last_error),
                objects_route(lambda: self._state, instance=self.identity),
            ],
        )
        # The z-pages (KCM's gates ComponentStatusz / ComponentFlagz, on by default in 1.36),
        # authorized as /configz is: not always allowed, so a SubjectAccessReview decides.
        if cfg.feature_gates.enabled(COMPONENT_STATUSZ):
            mux = routes.routes  # its paths read at each request: later routes show too
            info = StatuszInfo(
                COMPONENT, __version__, lambda: [getattr(r, "path", "") for r in mux]
            )
            mux.append(statusz_route(info))
        if cfg.feature_gates.enabled(COMPONENT_FLAGZ):
            routes.routes.append(flagz_route(COMPONENT, dict(cfg.flags)))
        if cfg.secure_serving.enabled:
            # --authentication-kubeconfig / --authorization-kubeconfig name other API servers
            # for the reviews; without them the main client asks its own cluster.
            authn_client, authz_client = client, client
            if cfg.authentication.kubeconfig:
                authn_client = await self._connect(cfg.authentication.kubeconfig)
                self._extra_clients.append(authn_client)
            if cfg.authorization.kubeconfig:
                authz_client = await self._connect(cfg.authorization.kubeconfig)
                self._extra_clients.append(authz_client)
            reviewer = DelegatingTokenReviewer(
                ReviewPosterAdapter(authn_client),
                cache_ttl=cfg.authentication.token_webhook_cache_ttl,
                clock=self.clock,
            )
            authorizer = DelegatingAuthorizer(
                ReviewPosterAdapter(authz_client),
                allowed_ttl=cfg.authorization.webhook_cache_authorized_ttl,
                denied_ttl=cfg.authorization.webhook_cache_unauthorized_ttl,
                clock=self.clock,
            )
            routes.routes.extend(self._mount_dashboard(DashboardDoor(reviewer, authorizer)))
            always_allow = tuple(cfg.authorization.always_allow_paths)
            if self._dashboard is not None:
                # The dashboard is its own door (401/403 from its checks); its session cookie is
                # a credential for /debug/pycm/* too.
                always_allow += DASHBOARD_PATHS
            authenticator = DelegatingAuthenticator(
                reviewer,
                client_certificates=bool(cfg.authentication.client_ca_file),
                session_users=self._dashboard.session_user if self._dashboard else None,
            )
            server = SecureServer(
                routes,
                SecureServingConfig(
                    bind_address=cfg.secure_serving.bind_address,
                    port=cfg.secure_serving.port,
                    tls_cert_file=cfg.secure_serving.tls_cert_file or None,
                    tls_private_key_file=cfg.secure_serving.tls_private_key_file or None,
                    cert_dir=cfg.secure_serving.cert_dir or None,
                    client_ca_file=cfg.authentication.client_ca_file or None,
                    tls_min_version=tls_version(cfg.secure_serving.tls_min_version),
                    tls_ciphers=cipher_suites(cfg.secure_serving.tls_cipher_suites),
                    limits=cfg.secure_serving.limits,
                ),
                authenticator=authenticator,
                authorizer=authorizer,
                always_allow_paths=always_allow,
                # The replay control is a few bytes of JSON; the rest keep the chain's 64 KiB
                # (the login form stops itself at 16 KiB, with its own page).
                body_limits={DASHBOARD_PREFIX + "/api/replay": 4096},
                bus=self.bus,
                clock=self.clock,
                on_failure=lambda e: self._fail(f"secure serving failed: {e}"),
            )
            await self._start_server(server)
        if cfg.insecure_serving.enabled:
            insecure = InsecureServer(
                build_routes(health=self.health, metrics_registry=self.metrics_registry),
                bind_address=cfg.insecure_serving.address,
                port=cfg.insecure_serving.port,
                limits=cfg.secure_serving.limits,
                bus=self.bus,
                clock=self.clock,
                on_failure=lambda e: self._fail(f"insecure serving failed: {e}"),
            )
            await self._start_server(insecure)
        # Added last, so stopped first: end the event streams so the servers stop promptly.
        await self.groups.add_service(
            Group.SERVERS, "debug streams", _StreamsCloser(self._streams, self._dashboard)
        )

    def _mount_dashboard(self, door: DashboardDoor) -> list[BaseRoute]:
        """The web dashboard at /dashboard, when pycm.cli handed one down: it reads this
        manager's own reducer and bus, and lets in whom ``door`` says may read the events."""
        mounter = self._dashboard_mounter
        if mounter is None:
            return []
        le = self.config.leader_election
        self._dashboard = mounter(
            bus=self.bus,
            identity=self.identity,
            snapshot=self._snapshot,
            door=door,
            renew_deadline_s=le.renew_deadline,
            lease_duration_s=le.lease_duration,
        )
        # It folds the bus like the other observers, so it stops with them (last).
        self.groups.add(Group.OBSERVERS, "dashboard", self._dashboard.run)
        return [Mount(DASHBOARD_PREFIX, app=self._dashboard.app)]

    async def _start_server(self, server: SecureServer | InsecureServer) -> None:
        self.servers.append(server)
        name = "secure serving" if isinstance(server, SecureServer) else "insecure serving"
        await self.groups.add_service(Group.SERVERS, name, _Serving(server))

    # -- leader election ------------------------------------------------------------------

    def _start_election(self, client: Client) -> None:
        le = self.config.leader_election
        pod_namespace = client.config.namespace if client.config.in_cluster else ""
        namespace = lease_namespace(le.resource_namespace, pod_namespace)
        lock = LeaseLock(
            LeaseClientAdapter(client.with_user_agent("pycm/leader-election")),
            namespace,
            le.resource_name,
            self.identity,
        )
        # Coordinated leader election (KEP-4355): publish a LeaseCandidate and let the API
        # server's coordinator name the holder (pycm.leaderelection.candidate).
        gates = self.config.feature_gates
        coordinated = gates.enabled(COORDINATED_LEADER_ELECTION)
        if coordinated:
            candidate = LeaseCandidate(
                client.with_user_agent("pycm/leader-election"),
                namespace,
                self.identity,
                le.resource_name,
                kube_version(BINARY_VERSION),
                kube_version(gates.emulated_version),
                clock=self.clock,
                bus=self.bus,
            )
            self.groups.add(Group.LEADER_ELECTION, "lease candidate", candidate.run)
        watchdog = LeaderHealthzAdaptor(clock=self.clock)
        self.health.add(watchdog.name, watchdog)

        async def lead() -> None:
            await self._take_over()
            await asyncio.Event().wait()  # lead until cancelled

        def stopped() -> None:
            log.info("leaderelection: stopped leading (%s)", self.identity)

        elector = LeaderElector(
            LeaderElectionConfig(
                lock=lock,
                callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
                release_on_cancel=True,
                name=le.resource_name,
                coordinated=coordinated,
            ),
            clock=self.clock,
            bus=self.bus,
            metrics=LeaderMetrics(self.metrics_registry),
        )
        watchdog.set_elector(elector)
        self.elector = elector

        async def elect() -> None:
            try:
                await elector.run()
            except ManagerError as exc:
                # The leading work failed to start (a controller's init): the same one line
                # as without election, not the traceback of this task.
                self._fail(str(exc))
                return
            # run() returns only when leadership was lost (cancellation raises instead).
            self._fail(f"leaderelection lost: {elector.lost_reason or 'stopped leading'}")

        self.groups.add(Group.LEADER_ELECTION, "leader election", elect)

    # -- StartControllers -----------------------------------------------------------------

    def _context(self, service_accounts: Callable[[str], Client] | None) -> ControllerContext:
        cfg = self.config
        root = self.root
        assert root is not None
        resync = resync_period(cfg.generic.min_resync_period, self._rng)
        # The factories' structural client protocol is wider than mypy can match to Client.
        informer_client = cast(Any, root)
        # Informers stream their lists unless --feature-gates=WatchListClient=false.
        watch_list = cfg.feature_gates.enabled(WATCH_LIST_CLIENT)
        factory = SharedInformerFactory(
            informer_client,
            default_resync=resync,
            bus=self.bus,
            clock=self.clock,
            rng=self._rng,
            watch_list=watch_list,
        )
        metadata_factory = MetadataInformerFactory(
            informer_client,
            default_resync=resync,
            bus=self.bus,
            clock=self.clock,
            rng=self._rng,
            watch_list=watch_list,
        )
        clients: dict[str, Client] = {}
        fenced: dict[str, Client] = {}
        build = service_accounts or (
            lambda name: root.with_user_agent(f"pycm/{__version__} ({name})")
        )
        # With leader election, every write a controller makes passes the elector's renew gate
        # right before it is sent (pycm.leaderelection.gate): a replica whose renew is older
        # than the renew deadline writes nothing. The lease calls (the elector's own client)
        # and the Events (see recorder_for) are not fenced.
        gate = self.elector.gate if self.elector is not None else None

        def unfenced_for(name: str) -> Client:
            # Each controller's own client: a service account's (--use-service-account-
            # credentials), or the root's credentials and connections under its own name.
            if name not in clients:
                clients[name] = build(name)
            return clients[name]

        def client_for(name: str) -> Client:
            if gate is None:
                return unfenced_for(name)
            if name not in fenced:
                fenced[name] = unfenced_for(name).with_fence(gate)
            return fenced[name]

        recorders: dict[str, EventRecorder] = {}

        def recorder_for(name: str) -> EventRecorder:
            # One per name (a builder asks for its controller's on its first TerminalError).
            if name in recorders:
                return recorders[name]
            # Events are not fenced, as KCM's recorder is independent of leadership: they
            # change nothing a controller acts on, and a deposed leader's last events tell of
            # writes that did land (or were fenced) — dropping them would hide exactly that.
            recorder = EventRecorder(
                EventSinkAdapter(unfenced_for(name)),
                component=name,
                host=self.identity.split("_")[0],
                clock=self.clock,
                bus=self.bus,
            )
            # With the caches: they stop after the controllers, so the last events are sent.
            self.groups.add(Group.CACHES, f"event recorder {name}", recorder.run)
            recorders[name] = recorder
            return recorder

        return ControllerContext(
            config=cfg,
            rest_mapper=RESTMapper(root),
            bus=self.bus,
            clock=self.clock,
            client_for=client_for,
            informer_factory=factory,
            metadata_informer_factory=metadata_factory,
            recorder_for=recorder_for,
            metrics=self._controller_metrics,
        )

    async def start_controllers(self) -> int:
        """Build every enabled controller, start the informers, run the controllers."""
        return await self._run_controllers(await self._prepare_controllers(standby=False))

    async def _take_over(self) -> None:
        """OnStartedLeading: run the controllers — warm, on the informers started while this
        replica was a standby (waiting for that start-up if it has not finished), or cold,
        building and starting everything now."""
        if self._warmed is None:
            self.bus.point(ControllersTookOver(warm=False))
            await self.start_controllers()
            return
        prepared = await asyncio.shield(self._warmed)
        ctx = prepared.ctx
        informers = [informer for _, informer in self._informers()]
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
        await self._run_controllers(prepared)

    async def _prepare_controllers(self, *, standby: bool) -> _Prepared:
        """StartControllers up to InformersStarted: the context, each enabled controller's init
        (its informers and event handlers registered), both factories started. ``standby``:
        done before leading (--leader-elect-warm-standby); nothing here writes — an init's
        client is fenced by the elector's gate, closed until this replica leads."""
        service_accounts = None
        if self.config.generic.use_service_account_credentials:
            service_accounts = await self._service_account_builder()
        ctx = self._context(service_accounts)
        self.context = ctx
        enabled = set(self.config.controllers.enabled) or {
            name
            for name, on in self.registry.resolve(self.config.controllers.controllers).items()
            if on
        }
        descriptors = list(self.registry)
        random.shuffle(descriptors)  # KCM starts them in random order
        prepared = _Prepared(ctx, standby=standby)
        interval = self.config.controllers.controller_start_interval
        for descriptor in descriptors:
            if descriptor.name not in enabled:
                self.bus.point(
                    ControllerDisabled(controller=descriptor.name, reason="--controllers")
                )
                continue
            if interval > 0:
                await self.clock.sleep(self._rng.uniform(0, 2 * interval))
            try:
                runnable = await self._init_controller(ctx, descriptor)
            except NoKindMatchError as exc:
                # Its kind is not served (a CRD not installed yet): one line naming both and
                # exit 1, as controller-runtime stops at start — unless it may wait for it.
                if not (
                    self.config.controllers.wait_for_resources or descriptor.wait_for_resources
                ):
                    raise ManagerError(f"{self._who(descriptor)} failed to start: {exc}") from None
                prepared.waiting.append((descriptor, exc))
                continue
            if runnable is not None:
                prepared.runnables.append((descriptor.name, runnable))
        if self._token_sources and not standby:
            await self._first_tokens()
        informers = _InformerFactories(ctx)
        await self.groups.add_service(Group.CACHES, "informer factories", informers)
        await self.groups.start(Group.CACHES)
        ctx.informers_started.set()
        # (A warm start-up whose election was won meanwhile is no standby's any more.)
        leading = self.elector is None or self.elector.is_leader()
        self.bus.point(
            InformersStarted(informers=informers.started, standby=standby and not leading)
        )
        return prepared

    async def _run_controllers(self, prepared: _Prepared) -> int:
        """StartControllers from InformersStarted on: the reconcile gate on every queue, the
        controllers' runs (their workers start once their caches sync), the controllers still
        waiting for their kinds, the background tasks. Returns how many controllers run."""
        ctx = prepared.ctx
        if prepared.standby and self._token_sources:
            # A standby asks for no service account or token (they are writes): its informers
            # read with the root client, and its controllers' clients wait for the lease too.
            await self._first_tokens()
        if self.elector is not None:
            # Before any worker runs: no reconcile starts on a stale lease (leaderelection/gate;
            # the controllers' clients fence each write with the same gate: _context).
            for controller in ctx.queues.values():
                controller.gate = self.elector.gate
        for name, runnable in prepared.runnables:
            self.groups.add(Group.CONTROLLERS, f"controller {name}", runnable)
        for descriptor, missing in prepared.waiting:
            self._wait_for_resource(ctx, descriptor, missing)

        # Plugins' own background tasks run with the controllers, added now or later; their
        # failure is one line too.
        def add_task(name: str, run: Runnable) -> None:
            task = _checked_runnable(run, f"background task {name!r}", self._fail, self._stopping)
            self.groups.add(Group.CONTROLLERS, name, task)

        for name, runnable in ctx.pending_runnables:
            add_task(name, runnable)
        ctx.pending_runnables.clear()
        ctx.on_runnable = add_task
        threshold = self.config.controllers.stuck_worker_threshold
        if threshold > 0:
            watcher = StuckWorkerWatcher(self._queues, threshold, bus=self.bus, clock=self.clock)
            self.groups.add(Group.CONTROLLERS, "stuck-worker watcher", watcher.run)
        await self.groups.start(Group.CONTROLLERS)
        return len(prepared.runnables)

    def _who(self, descriptor: ControllerDescriptor) -> str:
        return f"controller {descriptor.name!r} ({self.registry.source(descriptor.name)})"

    async def _init_controller(
        self, ctx: ControllerContext, descriptor: ControllerDescriptor
    ) -> Runnable | None:
        """One controller's init, traced and checked: its run function (contained), or None
        ("not started"). A NoKindMatchError propagates (the caller decides: fail or wait);
        any other failure is a ManagerError naming the controller."""
        who = self._who(descriptor)
        failed = f"{who} failed to start: "
        # A builder in this init defaults to its descriptor's retries (None: for ever).
        ctx.max_retries = descriptor.max_retries
        with self.bus.step(ControllerInitBegan(controller=descriptor.name)) as step:
            try:
                runnable = await descriptor.init(ctx)
            except NoKindMatchError:
                raise
            except Exception as exc:  # a plugin's init is third-party code
                raise ManagerError(f"{failed}{type(exc).__name__}: {exc}") from None
            if runnable is not None and not callable(runnable):
                raise ManagerError(
                    f"{failed}init returned a value of type {type(runnable).__name__}, "
                    "not an async run function or None"
                )
            step.finish(started=runnable is not None)
        if runnable is None:
            return None
        return _checked_runnable(runnable, who, self._fail, self._stopping)

    def _wait_for_resource(
        self, ctx: ControllerContext, descriptor: ControllerDescriptor, missing: NoKindMatchError
    ) -> None:
        """--wait-for-resources: the controller's task polls discovery until its kind is
        served, then runs its init again, starts the informers it asked for and runs it.
        Meanwhile a readyz check named after the kind (``waiting-for:Website.v1.example.com``)
        fails, and one warning says which controller waits for what."""
        log.warning(
            "controller %r waits for %s to be served (--wait-for-resources); /readyz fails "
            "until it is",
            descriptor.name,
            missing.what,
        )
        waiting: dict[str, NoKindMatchError] = {"kind": missing}

        def check_name(exc: NoKindMatchError) -> str:
            return f"waiting-for:{exc.kind or exc.plural}.{exc.version}.{exc.group}".rstrip(".")

        def add_check(exc: NoKindMatchError) -> None:
            name = check_name(exc)

            async def served() -> str | None:
                now = waiting.get("kind")  # what the last try found missing (None: started)
                return (
                    None if now is None or check_name(now) != name else f"{exc.what} is not served"
                )

            with contextlib.suppress(ValueError):  # (two controllers may wait for one kind)
                self.health.add(name, served, livez=False)

        add_check(missing)

        async def wait_then_run() -> None:
            while True:
                await self.clock.sleep(RESOURCE_POLL_INTERVAL)
                try:
                    runnable = await self._init_controller(ctx, descriptor)
                except NoKindMatchError as exc:
                    if check_name(exc) != check_name(waiting["kind"]):
                        add_check(exc)  # it now waits for another of its kinds
                    waiting["kind"] = exc
                    continue
                break
            waiting.clear()
            log.info("controller %r: its resources are served; starting it", descriptor.name)
            ctx.informer_factory.start()
            ctx.metadata_informer_factory.start()
            if self.elector is not None:
                for controller in ctx.queues.values():
                    controller.gate = self.elector.gate
            if runnable is not None:
                await runnable()

        self.groups.add(Group.CONTROLLERS, f"controller {descriptor.name}", wait_then_run)

    async def _service_account_builder(self) -> Callable[[str], Client]:
        """KCM's dynamic client builder: ``client_for(name)`` gives a client authenticated as
        kube-system/<name> (its account made on first use), from the root's configuration
        without its credentials; the TLS context is built once, here, off the event loop."""
        root = self.root
        assert root is not None
        anonymous = root.config.with_overrides(
            token=None, token_file=None, auth_refresh=None, cert_file=None, key_file=None
        )
        ssl_context = None
        if anonymous.server.startswith("https"):
            ssl_context = await asyncio.to_thread(build_ssl_context, anonymous)

        def build(name: str) -> Client:
            source = ServiceAccountTokenSource(
                root,
                SERVICE_ACCOUNT_NAMESPACE,
                name,
                controller=name.removesuffix("-controller"),
                clock=self.clock,
                bus=self.bus,
            )
            user = username_for(SERVICE_ACCOUNT_NAMESPACE, name)
            client = Client(
                anonymous.with_overrides(
                    token_source=source, user_agent=f"pycm/{__version__} ({name})/{user}"
                ),
                ssl_context=ssl_context,
                bus=self.bus,
                registry=self.metrics_registry,
                clock=self.clock,
            )
            self._extra_clients.append(client)
            self._token_sources.append(source)
            return client

        return build

    async def _first_tokens(self) -> None:
        """Every service-account client's first token, so a cluster that cannot issue them
        stops the manager here with a clear message (KCM's ClientOrDie)."""
        results = await asyncio.gather(
            *(source.token() for source in self._token_sources), return_exceptions=True
        )
        for result in results:
            if isinstance(result, KubeError):
                raise ManagerError(f"--use-service-account-credentials: {result}")
            if isinstance(result, BaseException):
                raise result

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


@dataclass
class _Prepared:
    """What StartControllers built before the workers run: the context, the controllers' runs
    and the controllers waiting for their kinds (--wait-for-resources)."""

    ctx: ControllerContext
    standby: bool = False  # built before leading (--leader-elect-warm-standby)
    runnables: list[tuple[str, Runnable]] = field(default_factory=list)
    waiting: list[tuple[ControllerDescriptor, NoKindMatchError]] = field(default_factory=list)


class _Serving:
    """A server as a SERVERS-group service: a port that cannot be bound is a start-up error."""

    def __init__(self, server: SecureServer | InsecureServer) -> None:
        self.server = server

    async def start(self) -> None:
        try:
            await self.server.start()  # (which logs where it serves)
        except OSError as exc:
            raise ManagerError(f"failed to start serving: {exc}") from None

    async def stop(self) -> None:
        await self.server.stop()


class _StreamsCloser:
    """Ends the open debug event streams when the servers stop (they would hold them up)."""

    def __init__(self, streams: OpenStreams, dashboard: Any = None) -> None:
        self.streams = streams
        self.dashboard = dashboard  # the mounted dashboard's viewer streams end here too

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.streams.close_all()
        if self.dashboard is not None:
            self.dashboard.close()


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


def _checked_runnable(
    runnable: Runnable, who: str, fail: Callable[[str], None], stopping: Callable[[], bool]
) -> Runnable:
    """``runnable`` checked and contained: a plain function (``def run()`` where ``async def``
    was meant) is a start-up error, not a TypeError from deep in the task machinery; an
    exception out of the running controller stops the manager with one line naming it (its
    traceback at -v=4), as a failed init does; a run that returns while the manager runs (a
    controller that set itself up and returned, where it should wait until cancelled) is a
    warning, for it does no more work and nothing else would say so."""

    def run() -> Coroutine[Any, Any, None]:
        coro: object = runnable()  # typed, but a plugin is third-party code
        if not asyncio.iscoroutine(coro):
            what = "None" if coro is None else f"a value of type {type(coro).__name__}"
            raise ManagerError(
                f"{who} failed to start: run() returned {what}, not a coroutine (async def?)"
            )
        return _contained(coro, who, fail, stopping)

    return run


async def _contained(
    coro: Coroutine[Any, Any, None],
    who: str,
    fail: Callable[[str], None],
    stopping: Callable[[], bool],
) -> None:
    try:
        await coro
    except Exception as exc:  # a controller's run is third-party code; cancellation passes
        log.debug("%s failed", who, exc_info=exc)
        fail(f"{who} failed: {type(exc).__name__}: {exc}")
        return
    if not stopping():
        log.warning(
            "%s returned while the manager runs: it does no more work (a run should wait "
            "until it is cancelled)",
            who,
        )


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
