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

Stop (SIGTERM / SIGINT) is the reverse, bounded by ``SHUTDOWN_TIMEOUT``: controllers (and,
leading, the lease released), informers, servers, recorder. A lost lease is fatal: the process
exits 1, as KCM's OnStoppedLeading does.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, cast

from prometheus_client import CollectorRegistry

from pycm import __version__
from pycm.app import controllers as _controllers  # noqa: F401  (registers the controllers)
from pycm.app.clients import EventSinkAdapter, LeaseClientAdapter, ReviewPosterAdapter
from pycm.app.config import CompletedConfig
from pycm.app.context import ControllerContext, resync_period
from pycm.app.logs import configure_logging
from pycm.app.registry import Registry, default_registry
from pycm.app.serviceaccounts import (
    SERVICE_ACCOUNT_NAMESPACE,
    ServiceAccountTokenSource,
    username_for,
)
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller.metrics import ControllerMetrics
from pycm.kube import Client, ConfigError, load_config
from pycm.kube.errors import KubeError
from pycm.kube.transport import build_ssl_context
from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaderHealthzAdaptor,
)
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
from pycm.server.debug import OpenStreams, debug_routes
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import (
    ControllerDisabled,
    ControllerInitBegan,
    InformersStarted,
    ManagerStopped,
    StartupBegan,
)
from pycm.trace.recorder import Recorder
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = ["SHUTDOWN_TIMEOUT", "Manager", "run_manager"]

log = logging.getLogger("pycm.app")

SHUTDOWN_TIMEOUT = 15.0
API_SERVER_WAIT = 10.0
# A queue with keys waiting and no worker progress for this long fails the workqueues check.
QUEUE_STALL_THRESHOLD = 60.0
# Reason the manager gave up, kept for the exit status and the ManagerStopped event.
EXIT_OK, EXIT_FAILED = 0, 1
# Tasks that watch the bus: stopped after everything else, so they see the shutdown too.
_OBSERVERS = ("trace recorder", "state reducer", "otel sink")


class ManagerError(Exception):
    """A start-up failure with a message fit for the user (no traceback)."""


class Manager:
    def __init__(
        self,
        config: CompletedConfig,
        *,
        bus: Bus | None = None,
        clock: Clock = REAL_CLOCK,
        registry: Registry | None = None,
        metrics_registry: CollectorRegistry | None = None,
    ) -> None:
        self.config = config
        self.identity = config.leader_election.identity
        self.bus = bus or default_bus()
        if not self.bus.instance:
            self.bus.instance = self.identity
        self.clock = clock
        self.registry = registry or default_registry()
        self.metrics_registry = metrics_registry or CollectorRegistry()
        self.health = HealthRegistry(bus=self.bus)
        self._tasks: list[asyncio.Task[Any]] = []
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
        self._snapshot: Callable[[], dict[str, Any]] | None = None

    # -- lifetime -------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    def _fail(self, reason: str) -> None:
        if self._fatal is None:
            self._fatal = reason
        self._stop.set()

    async def run(self) -> int:
        """Start, run until a signal or a fatal error, stop. Returns the exit status."""
        try:
            await self._start()
            await self._stop.wait()
        except ManagerError as exc:
            self._fatal = str(exc)
        finally:
            await asyncio.shield(self._shutdown())
        code = EXIT_FAILED if self._fatal else EXIT_OK
        if self._fatal:
            log.error("%s", self._fatal)
        self.bus.point(ManagerStopped(reason=self._fatal or "stopped", exit_code=code))
        if self._recorder is not None:
            await self._recorder.close()
        return code

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = create_guarded_task(
            coro, name=name, logger=log, on_failure=lambda e: self._fail(f"{name} failed: {e}")
        )
        self._tasks.append(task)
        return task

    async def _start(self) -> None:
        cfg = self.config
        self._start_observers()
        with self.bus.step(StartupBegan(command="run", version=__version__)) as startup:
            self.root = await self._connect()
            await self._wait_for_api_server(self.root)
            self._add_health_checks()
            await self._start_serving(self.root)
            if cfg.leader_election.leader_elect:
                self._start_election(self.root)
                startup.finish(controllers_started=0)
            else:
                started = await self.start_controllers()
                startup.finish(controllers_started=started)

    def _start_observers(self) -> None:
        cfg = self.config
        trace_file = cfg.tracing.trace_file
        if trace_file:
            self._recorder = Recorder(trace_file)
            # since=0: the ring still holds what came before (FlagsParsed), so it is recorded.
            sub = self.bus.subscribe(name="recorder", maxsize=16384, since=0)
            self._spawn(self._recorder.run(sub), "trace recorder")
        try:  # --otlp-endpoint / OTEL_EXPORTER_OTLP_*: None when neither asks for export
            otel = start_otel_sink(self.bus, cfg.tracing, self.identity, self.metrics_registry)
        except ValueError as exc:
            raise ManagerError(f"invalid OpenTelemetry configuration: {exc}") from None
        if otel is not None:
            self._export_ratio = cfg.tracing.sample_ratio
            self._spawn(otel.run(), "otel sink")  # cancelled last: it flushes, bounded
        try:
            from pycm.trace.reducer import State
        except ImportError:  # the reducer module is optional for the manager to run
            return
        state = State()
        sub = self.bus.subscribe(name="state", maxsize=65536, since=0)

        async def feed() -> None:
            while True:
                await sub.wait()
                for event in sub.drain():
                    state.apply(event)

        self._snapshot = state.snapshot
        self._spawn(feed(), "state reducer")

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
            raise ManagerError(f"invalid client configuration: {exc}") from None
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

    def _add_health_checks(self) -> None:
        async def informers_synced() -> str | None:
            ctx = self.context
            if ctx is None:
                return None  # not leading (or not yet): nothing to sync
            waiting = [
                name
                for name, informer in ctx.informer_factory.informers.items()
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
        cfg = self.config
        routes = build_routes(
            health=self.health,
            metrics_registry=self.metrics_registry,
            configz={"pycm": dict(cfg.changed)},
            routes=debug_routes(self.bus, self._snapshot, streams=self._streams),
        )
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
            authenticator = DelegatingAuthenticator(
                DelegatingTokenReviewer(ReviewPosterAdapter(authn_client), clock=self.clock),
                client_certificates=bool(cfg.authentication.client_ca_file),
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
                ),
                authenticator=authenticator,
                authorizer=DelegatingAuthorizer(
                    ReviewPosterAdapter(authz_client), clock=self.clock
                ),
                always_allow_paths=cfg.authorization.always_allow_paths,
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
                bus=self.bus,
                clock=self.clock,
                on_failure=lambda e: self._fail(f"insecure serving failed: {e}"),
            )
            await self._start_server(insecure)

    async def _start_server(self, server: SecureServer | InsecureServer) -> None:
        try:
            host, port = await server.start()
        except OSError as exc:
            raise ManagerError(f"failed to start serving: {exc}") from None
        self.servers.append(server)
        log.info("serving on %s:%d", host, port)

    # -- leader election ------------------------------------------------------------------

    def _start_election(self, client: Client) -> None:
        le = self.config.leader_election
        lock = LeaseLock(
            LeaseClientAdapter(client.with_user_agent("pycm/leader-election")),
            le.resource_namespace,
            le.resource_name,
            self.identity,
        )
        watchdog = LeaderHealthzAdaptor(clock=self.clock)
        self.health.add(watchdog.name, watchdog)

        async def lead() -> None:
            await self.start_controllers()
            # No await since the controllers were spawned: gated before a worker runs.
            for controller in self.context.queues.values() if self.context else ():
                controller.gate = elector.gate  # no reconcile starts on a stale lease
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
            ),
            clock=self.clock,
            bus=self.bus,
            metrics=LeaderMetrics(self.metrics_registry),
        )
        watchdog.set_elector(elector)
        self.elector = elector

        async def elect() -> None:
            await elector.run()
            # run() returns only when leadership was lost (cancellation raises instead).
            self._fail(f"leaderelection lost: {elector.lost_reason or 'stopped leading'}")

        self._spawn(elect(), "leader election")

    # -- StartControllers -----------------------------------------------------------------

    def _context(self, service_accounts: Callable[[str], Client] | None) -> ControllerContext:
        cfg = self.config
        root = self.root
        assert root is not None
        resync = resync_period(cfg.generic.min_resync_period, self._rng)
        # The factories' structural client protocol is wider than mypy can match to Client.
        informer_client = cast(Any, root)
        factory = SharedInformerFactory(
            informer_client, default_resync=resync, bus=self.bus, clock=self.clock, rng=self._rng
        )
        metadata_factory = MetadataInformerFactory(
            informer_client, default_resync=resync, bus=self.bus, clock=self.clock, rng=self._rng
        )
        clients: dict[str, Client] = {}
        build = service_accounts or (
            lambda name: root.with_user_agent(f"pycm/{__version__} ({name})")
        )

        def client_for(name: str) -> Client:
            # Each controller's own client: a service account's (--use-service-account-
            # credentials), or the root's credentials and connections under its own name.
            if name not in clients:
                clients[name] = build(name)
            return clients[name]

        def recorder_for(name: str) -> EventRecorder:
            recorder = EventRecorder(
                EventSinkAdapter(client_for(name)),
                component=name,
                host=self.identity.split("_")[0],
                clock=self.clock,
                bus=self.bus,
            )
            self._spawn(recorder.run(), f"event recorder {name}")
            return recorder

        return ControllerContext(
            config=cfg,
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
        runnables: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        interval = self.config.controllers.controller_start_interval
        for descriptor in descriptors:
            if descriptor.name not in enabled:
                self.bus.point(
                    ControllerDisabled(controller=descriptor.name, reason="--controllers")
                )
                continue
            if interval > 0:
                await self.clock.sleep(self._rng.uniform(0, 2 * interval))
            with self.bus.step(ControllerInitBegan(controller=descriptor.name)) as step:
                runnable = await descriptor.init(ctx)
                step.finish(started=runnable is not None)
            if runnable is not None:
                runnables.append((descriptor.name, runnable))
        if self._token_sources:
            await self._first_tokens()
        started = ctx.informer_factory.start() + ctx.metadata_informer_factory.start()
        ctx.informers_started.set()
        self.bus.point(InformersStarted(informers=started))
        for name, runnable in runnables:
            self._spawn(runnable(), f"controller {name}")
        self._spawn(self._shutdown_informers_on_cancel(ctx), "informer factories")
        return len(runnables)

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

    async def _shutdown_informers_on_cancel(self, ctx: ControllerContext) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await ctx.informer_factory.shutdown(timeout=5.0)
            await ctx.metadata_informer_factory.shutdown(timeout=5.0)

    # -- shutdown -------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        """Stop in reverse order: election and controllers (leading work), informers,
        servers, observers — each bounded."""
        # Newest first: controllers and informers were started after the election.
        for task in reversed(self._tasks):
            if task.get_name() in _OBSERVERS:
                continue
            task.cancel()
        workers = [t for t in self._tasks if t.get_name() not in _OBSERVERS]
        stuck = await cancel_and_wait(workers, timeout=SHUTDOWN_TIMEOUT)
        for task in stuck:
            log.error("task %s did not stop within %.0fs", task.get_name(), SHUTDOWN_TIMEOUT)
        self._streams.close_all()  # end the event streams so the servers stop promptly
        for server in reversed(self.servers):
            await server.stop()
        for extra in self._extra_clients:
            await extra.aclose()
        if self.root is not None:
            await self.root.aclose()
        observers = [t for t in self._tasks if t not in workers]
        await cancel_and_wait(observers, timeout=5.0)


def run_manager(config: CompletedConfig) -> int:
    """The runner of ``pycm run``: run the manager on a fresh event loop until a signal."""
    configure_logging(config.logs.format, config.logs.verbosity)

    async def main() -> int:
        manager = Manager(config)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, manager.request_stop)
        try:
            return await manager.run()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        sys.stderr.write("pycm run: interrupted\n")
        return 130
