"""Serving, as KCM's ``app/serve.go``: the health checks, then the secure port (the handler
chain with delegated authentication and authorization, /healthz /livez /readyz, /metrics,
/configz, the z-pages, the debug routes and the mounted dashboard) and the insecure one
(health and metrics only). The servers join the SERVERS group, which opens before leader
election, so a standby serves /healthz and /metrics too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.routing import BaseRoute, Mount

from pycm import __version__
from pycm.app.clients import ReviewPosterAdapter
from pycm.app.context import ControllerContext
from pycm.app.errors import ManagerError
from pycm.app.features import COMPONENT_FLAGZ, COMPONENT_STATUSZ
from pycm.app.observers import Observers
from pycm.app.parts import Parts
from pycm.app.runnables import Group
from pycm.kube import Client
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
from pycm.server.debug import OpenStreams, debug_routes
from pycm.server.debug_objects import objects_route
from pycm.server.debug_queues import queues_route
from pycm.server.flagz import flagz_route
from pycm.server.statusz import StatuszInfo, statusz_route
from pycm.server.tlsnames import cipher_suites, tls_version
from pycm.workqueue.inspect import InspectableQueue

__all__ = ["COMPONENT", "QUEUE_STALL_THRESHOLD", "Serving", "add_health_checks"]

COMPONENT = "pycm"  # the component name the z-pages give (KCM's "kube-controller-manager")

# A queue with keys waiting and no worker progress for this long fails the workqueues check.
QUEUE_STALL_THRESHOLD = 60.0


def add_health_checks(
    health: HealthRegistry, contexts: Callable[[], list[ControllerContext]]
) -> None:
    """The manager's own checks: informers-synced (readyz only) and workqueues, over every
    controller context built — none while not leading (or not yet), unless the replica is a
    warm standby; under --sharded the sharded controllers' and, while leading, the
    singletons'."""

    async def informers_synced() -> str | None:
        # Both factories: a controller (a plugin's, say) may watch metadata only.
        waiting = [
            name
            for ctx in contexts()
            for factory in (ctx.informer_factory, ctx.metadata_informer_factory)
            for name, informer in factory.informers.items()
            if not informer.has_synced()
        ]
        return f"informers not synced: {waiting}" if waiting else None

    health.add("informers-synced", informers_synced, livez=False)

    async def workqueues() -> str | None:
        stalled = [
            f"{name}: {why}"
            for ctx in contexts()
            for name, controller in ctx.queues.items()
            if (why := controller.stalled(QUEUE_STALL_THRESHOLD)) is not None
        ]
        return "; ".join(stalled) or None

    health.add("workqueues", workqueues)


class Serving:
    """The manager's servers. ``connect(kubeconfig)`` makes a client for the delegated
    reviews (--authentication-kubeconfig / --authorization-kubeconfig); ``adopt(client)``
    hands it to the manager, which closes it at shutdown; ``parts.fail(reason)`` stops the
    manager when a server fails after it started; ``dashboard_mounter`` builds the dashboard
    mounted at /dashboard on the secure port (none without it)."""

    def __init__(
        self,
        parts: Parts,
        *,
        observers: Observers,
        queues: Callable[[], dict[str, InspectableQueue]],
        connect: Callable[[str], Awaitable[Client]],
        adopt: Callable[[Client], None],
        dashboard_mounter: DashboardMounter | None = None,
    ) -> None:
        self.parts = parts
        self.config = parts.config
        self.observers = observers
        self.queues = queues
        self.connect = connect
        self.adopt = adopt
        self.dashboard_mounter = dashboard_mounter  # handed down by pycm.cli, or none
        self.servers: list[SecureServer | InsecureServer] = []
        self.streams = OpenStreams()
        self.dashboard: Any = None  # the web dashboard mounted on the secure port, if any

    async def start(self, client: Client) -> None:
        """The servers join the SERVERS group (started when it opens, right after)."""
        cfg = self.config
        observers = self.observers
        routes = build_routes(
            health=self.parts.health,
            metrics_registry=self.parts.metrics_registry,
            configz={"pycm": dict(cfg.changed)},
            routes=[
                *debug_routes(
                    self.parts.bus,
                    observers.snapshot,
                    streams=self.streams,
                    history=observers.state.objects.history
                    if observers.state is not None
                    else None,
                ),
                queues_route(
                    self.queues, instance=self.parts.identity, last_error=observers.last_error
                ),
                objects_route(lambda: observers.state, instance=self.parts.identity),
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
                authn_client = await self.connect(cfg.authentication.kubeconfig)
                self.adopt(authn_client)
            if cfg.authorization.kubeconfig:
                authz_client = await self.connect(cfg.authorization.kubeconfig)
                self.adopt(authz_client)
            reviewer = DelegatingTokenReviewer(
                ReviewPosterAdapter(authn_client),
                cache_ttl=cfg.authentication.token_webhook_cache_ttl,
                clock=self.parts.clock,
            )
            authorizer = DelegatingAuthorizer(
                ReviewPosterAdapter(authz_client),
                allowed_ttl=cfg.authorization.webhook_cache_authorized_ttl,
                denied_ttl=cfg.authorization.webhook_cache_unauthorized_ttl,
                clock=self.parts.clock,
            )
            routes.routes.extend(self._mount_dashboard(DashboardDoor(reviewer, authorizer)))
            always_allow = tuple(cfg.authorization.always_allow_paths)
            if self.dashboard is not None:
                # The dashboard is its own door (401/403 from its checks); its session cookie is
                # a credential for /debug/pycm/* too.
                always_allow += DASHBOARD_PATHS
            authenticator = DelegatingAuthenticator(
                reviewer,
                client_certificates=bool(cfg.authentication.client_ca_file),
                session_users=self.dashboard.session_user if self.dashboard else None,
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
                bus=self.parts.bus,
                clock=self.parts.clock,
                on_failure=lambda e: self.parts.fail(f"secure serving failed: {e}"),
            )
            await self._start_server(server)
        if cfg.insecure_serving.enabled:
            insecure = InsecureServer(
                build_routes(
                    health=self.parts.health, metrics_registry=self.parts.metrics_registry
                ),
                bind_address=cfg.insecure_serving.address,
                port=cfg.insecure_serving.port,
                limits=cfg.secure_serving.limits,
                bus=self.parts.bus,
                clock=self.parts.clock,
                on_failure=lambda e: self.parts.fail(f"insecure serving failed: {e}"),
            )
            await self._start_server(insecure)
        # Added last, so stopped first: end the event streams so the servers stop promptly.
        await self.parts.groups.add_service(
            Group.SERVERS, "debug streams", _StreamsCloser(self.streams, self.dashboard)
        )

    def _mount_dashboard(self, door: DashboardDoor) -> list[BaseRoute]:
        """The web dashboard at /dashboard, when pycm.cli handed one down: it reads this
        manager's own reducer and bus, and lets in whom ``door`` says may read the events."""
        mounter = self.dashboard_mounter
        if mounter is None:
            return []
        # (The page reads the lease timings from the trace: the elector emits them.)
        self.dashboard = mounter(
            bus=self.parts.bus,
            identity=self.parts.identity,
            snapshot=self.observers.snapshot,
            door=door,
        )
        # It folds the bus like the other observers, so it stops with them (last).
        self.parts.groups.add(Group.OBSERVERS, "dashboard", self.dashboard.run)
        return [Mount(DASHBOARD_PREFIX, app=self.dashboard.app)]

    async def _start_server(self, server: SecureServer | InsecureServer) -> None:
        self.servers.append(server)
        name = "secure serving" if isinstance(server, SecureServer) else "insecure serving"
        await self.parts.groups.add_service(Group.SERVERS, name, _Serving(server))


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
