"""Secure and insecure serving: uvicorn on the manager's own event loop.

A server is a runnable: ``await start()`` binds, starts uvicorn in a named, guarded task and
returns the bound ``(host, port)`` (port 0 picks a free one); ``await stop()`` shuts down
gracefully within ``shutdown_timeout`` (in-flight requests finish, idle keep-alive connections
close) and then cancels what is left. ServingStarted / ServingStopped are emitted.

How uvicorn is run here, and why:

- the socket is bound by pycm (``socket.create_server``, SO_REUSEADDR as Go sets it) and handed
  to ``uvicorn.Server.serve(sockets=...)``: the bound port is known before serving starts, and
  a bind error is an ``OSError`` to the caller rather than uvicorn's ``sys.exit``;
- ``capture_signals`` is a no-op: the manager owns SIGINT/SIGTERM and stops servers itself;
- ``log_config=None`` (uvicorn leaves the process's logging alone), no access log (the chain's
  request logging replaces it), no proxy headers (X-Forwarded-For is not trusted), no lifespan,
  no websockets, no ``server`` header;
- the HTTP protocol is :class:`~pycm.server.tls_extension.TLSExtensionH11Protocol`, which puts
  the client certificate into the ASGI TLS extension for the authentication layer;
- connections pass a :class:`~pycm.util.serving_limits.ConnectionGate` (uvicorn's ``http=``):
  the connection cap, the TLS handshake and request-head timeouts, TLS with a small per-connection
  footprint (the gate does TLS, so uvicorn is given no SSL context), and memory returned after a
  burst; uvicorn's own keep-alive timeout is the idle timeout and h11's incomplete-event bound
  the header-size limit (a larger head is answered 400 and closed). The limits are
  :class:`~pycm.util.serving_limits.ServingLimits` (``--max-connections`` and friends).

A plain-HTTP request to the secure port fails in the TLS handshake: the connection is closed
without an HTTP answer (Go answers a 400 first; Python's ``ssl`` cannot).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import math
import shutil
import socket
import ssl
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

import uvicorn
from starlette.types import ASGIApp

from pycm.server.authentication import RequestAuthenticator
from pycm.server.certs import ServingCert, default_hosts, load_or_generate, server_ssl_context
from pycm.server.chain import (
    DEFAULT_ALWAYS_ALLOW_GROUPS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    build_handler_chain,
    build_insecure_handler_chain,
)
from pycm.server.subjectaccessreview import Authorizer
from pycm.server.tls_extension import TLSExtensionH11Protocol
from pycm.trace.bus import Bus, default_bus
from pycm.trace.context import detached
from pycm.trace.kinds import ServingStarted, ServingStopped
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.serving_limits import DEFAULT_LIMITS, ConnectionGate, ServingLimits, fit_open_files
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = ["InsecureServer", "SecureServer", "SecureServingConfig", "is_loopback"]

_log = logging.getLogger("pycm.server.serving")

DEFAULT_SHUTDOWN_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class SecureServingConfig:
    """The secure-serving flags (KCM's names): --bind-address, --secure-port (``port``; 0 here
    means "any free port" — whether to serve at all is the caller's decision),
    --tls-cert-file, --tls-private-key-file, --cert-dir, --client-ca-file. An empty string is
    the same as None (as pycm.app's config spells "not set"). ``limits``: the connection cap and
    timeouts (--max-connections, --tls-handshake-timeout, --request-head-timeout,
    --idle-connection-timeout)."""

    bind_address: str = "0.0.0.0"
    port: int = 10257
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    cert_dir: str | None = None
    client_ca_file: str | None = None
    tls_min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    tls_ciphers: tuple[str, ...] = ()  # OpenSSL names of the TLS 1.2 suites; (): OpenSSL's
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    limits: ServingLimits = DEFAULT_LIMITS


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _UvicornServer(uvicorn.Server):
    """uvicorn's server without signal handling, telling when it is accepting."""

    def __init__(self, config: uvicorn.Config, gate: ConnectionGate) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()
        self.gate = gate

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the manager owns the signals

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Connections still in their TLS handshake are not uvicorn's yet, so it would not close
        # them (and asyncio's Server.wait_closed waits for them on Python 3.12+).
        self.gate.abort_handshakes()
        try:
            await super().shutdown(sockets=sockets)
        finally:
            self.gate.close()


async def _bind(address: str, port: int) -> socket.socket:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        address or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, _, _, _, sockaddr = infos[0]
    sock = socket.create_server(sockaddr[:2], family=family, backlog=2048)
    sock.setblocking(False)
    return sock


def _abort(server: _UvicornServer, task: asyncio.Task[None]) -> None:
    """Stop at once: the request tasks (uvicorn's own, not children of ``task``), the
    connections, and the serving task."""
    server.force_exit = True
    for request_task in list(server.server_state.tasks):
        request_task.cancel()
    for connection in list(server.server_state.connections):
        transport = getattr(connection, "transport", None)
        if transport is not None:
            transport.close()
    task.cancel()


class _Serving:
    """What both servers share: bind, run uvicorn in a task, stop it within a bound."""

    def __init__(
        self,
        *,
        kind: str,
        secure: bool,
        shutdown_timeout: float,
        limits: ServingLimits,
        bus: Bus | None,
        on_failure: Callable[[BaseException], None] | None,
    ) -> None:
        self._kind = kind
        self.limits = limits
        self._secure = secure
        self._shutdown_timeout = shutdown_timeout
        self._bus = bus
        self._on_failure = on_failure
        self._server: _UvicornServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._bound: tuple[str, int] | None = None
        self._cert_source = ""

    @property
    def gate(self) -> ConnectionGate | None:
        """The connection gate while serving (its counters: active, refused, header_timeouts)."""
        return self._server.gate if self._server is not None else None

    @property
    def bound(self) -> tuple[str, int] | None:
        """The bound (host, port) while serving."""
        return self._bound

    @property
    def port(self) -> int:
        if self._bound is None:
            raise RuntimeError("the server is not serving")
        return self._bound[1]

    async def _serve(
        self, app: ASGIApp, address: str, port: int, context: ssl.SSLContext | None
    ) -> tuple[str, int]:
        if self._task is not None:
            raise RuntimeError(f"the {self._kind} server was already started")
        sock = await _bind(address, port)
        limits = fit_open_files(self.limits)
        gate = ConnectionGate(TLSExtensionH11Protocol, limits, ssl_context=context)
        config = uvicorn.Config(
            app,
            # uvicorn calls ``http`` as it would a protocol class; the gate makes the protocol.
            http=cast(type[asyncio.Protocol], gate),
            # uvicorn arms its keep-alive timer after each response: the idle timeout. It is
            # typed int (whole seconds): round up, never to 0 (which would close at once).
            timeout_keep_alive=max(1, math.ceil(limits.idle_timeout))
            if limits.idle_timeout
            else 2**31,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            ws="none",
            lifespan="off",
            interface="asgi3",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=int(max(1, round(self._shutdown_timeout))),
        )
        server = _UvicornServer(config, gate)
        host, bound_port = sock.getsockname()[:2]
        with detached():  # each request (and its authn/authz reviews) is not start-up's
            task = create_guarded_task(
                server.serve(sockets=[sock]),
                name=f"server:{self._kind}:{bound_port}",
                logger=_log,
                on_failure=self._on_failure,
            )
        ready = asyncio.ensure_future(server.ready.wait())
        try:
            await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            await asyncio.wait({ready})
        if task.done():
            sock.close()
            if not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"the {self._kind} server failed to start") from task.exception()
            raise RuntimeError(f"the {self._kind} server stopped while starting")
        self._server, self._task, self._bound = server, task, (str(host), int(bound_port))
        (self._bus or default_bus()).point(
            ServingStarted(
                address=str(host),
                port=int(bound_port),
                secure=self._secure,
                cert_source=self._cert_source,
            )
        )
        # (host:port as Go's net.JoinHostPort writes it: an IPv6 address in brackets)
        shown = f"[{host}]" if ":" in str(host) else str(host)
        _log.info(
            "serving %s on %s:%d", "securely" if self._secure else "insecurely", shown, bound_port
        )
        return self._bound

    async def _shutdown(self) -> None:
        server, task, bound = self._server, self._task, self._bound
        if server is None or task is None or bound is None:
            return
        self._server = None
        server.should_exit = True
        # uvicorn drains for timeout_graceful_shutdown; allow one more second for its ticks.
        try:
            await asyncio.wait({task}, timeout=self._shutdown_timeout + 1.0)
        except asyncio.CancelledError:
            _abort(server, task)  # our caller gave up waiting: leave nothing running
            raise
        if not task.done():
            _log.warning("the %s server did not stop in time; cancelling it", self._kind)
            _abort(server, task)
            await cancel_and_wait([task], timeout=1.0)
        self._bound = None
        (self._bus or default_bus()).point(ServingStopped(address=bound[0], port=bound[1]))


class SecureServer(_Serving):
    """HTTPS with the full handler chain (authentication and authorization)."""

    def __init__(
        self,
        app: ASGIApp,
        config: SecureServingConfig,
        *,
        authenticator: RequestAuthenticator,
        authorizer: Authorizer,
        always_allow_paths: Iterable[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        always_allow_groups: Iterable[str] = DEFAULT_ALWAYS_ALLOW_GROUPS,
        body_limits: Mapping[str, int] | None = None,
        bus: Bus | None = None,
        clock: Clock = REAL_CLOCK,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        super().__init__(
            kind="secure",
            secure=True,
            shutdown_timeout=config.shutdown_timeout,
            limits=config.limits,
            bus=bus,
            on_failure=on_failure,
        )
        self.config = config
        self._app = app
        self._authenticator = authenticator
        self._authorizer = authorizer
        self._always_allow_paths = tuple(always_allow_paths)
        self._always_allow_groups = tuple(always_allow_groups)
        self._body_limits = dict(body_limits or {})
        self._clock = clock
        self._cert: ServingCert | None = None

    @property
    def cert_file(self) -> str:
        """The serving certificate file (for a self-signed pair also its CA: trust this file)."""
        if self._cert is None:
            raise RuntimeError("the server has no certificate before start()")
        return self._cert.cert_file

    async def start(self) -> tuple[str, int]:
        cfg = self.config
        cert = await asyncio.to_thread(
            load_or_generate,
            cert_file=cfg.tls_cert_file,
            key_file=cfg.tls_private_key_file,
            cert_dir=cfg.cert_dir,
            hosts=default_hosts(cfg.bind_address),
        )
        self._cert, self._cert_source = cert, cert.source
        try:
            context = server_ssl_context(
                cert,
                client_ca_file=cfg.client_ca_file,
                minimum_version=cfg.tls_min_version,
                ciphers=cfg.tls_ciphers,
            )
            chain = build_handler_chain(
                self._app,
                authenticator=self._authenticator,
                authorizer=self._authorizer,
                always_allow_paths=self._always_allow_paths,
                always_allow_groups=self._always_allow_groups,
                bus=self._bus,
                secure=True,
                clock=self._clock,
                body_limits=self._body_limits,
            )
            return await self._serve(chain, cfg.bind_address, cfg.port, context)
        except BaseException:
            self._remove_temp_dir()
            raise

    async def stop(self) -> None:
        try:
            await self._shutdown()
        finally:
            self._remove_temp_dir()

    def _remove_temp_dir(self) -> None:
        if self._cert is not None and self._cert.temp_dir:
            shutil.rmtree(self._cert.temp_dir, ignore_errors=True)


class InsecureServer(_Serving):
    """Plain HTTP, the same chain with everyone anonymous and everything allowed. Meant for
    loopback only: binding elsewhere is logged as a warning."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bind_address: str = "127.0.0.1",
        port: int = 0,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        limits: ServingLimits = DEFAULT_LIMITS,
        bus: Bus | None = None,
        clock: Clock = REAL_CLOCK,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        super().__init__(
            kind="insecure",
            secure=False,
            shutdown_timeout=shutdown_timeout,
            limits=limits,
            bus=bus,
            on_failure=on_failure,
        )
        self.bind_address = bind_address
        self.requested_port = port
        self._app = app
        self._clock = clock

    async def start(self) -> tuple[str, int]:
        if not is_loopback(self.bind_address):
            _log.warning(
                "serving insecurely (no authentication, no authorization) on non-loopback "
                "address %s",
                self.bind_address,
            )
        chain = build_insecure_handler_chain(self._app, bus=self._bus, clock=self._clock)
        return await self._serve(chain, self.bind_address, self.requested_port, None)

    async def stop(self) -> None:
        await self._shutdown()
