"""Serving an ASGI app on the emulator's HTTP stack: the listening socket, the connection gate
(cap, TLS, handshake and request-head timeouts: :mod:`pycm.util.serving_limits`), uvicorn with
its C-parser protocol bounded by :mod:`pycm.sim.http_protocol`, and stopping it.

The emulator serves its API with it (:mod:`pycm.sim.server`); ``bench sim`` serves a minimal
endpoint with it too, as the floor its request path is measured against (the same stack and
TLS, nothing of the API behind it).

Start order: bind (a port in use fails here, as :class:`ServingError`) → uvicorn serves in a
named task → wait until it is started. Stop: ask uvicorn to exit (connections in a TLS
handshake are the gate's: aborted) and await its task, forced after a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import socket
import ssl
from collections.abc import Generator
from pathlib import Path
from typing import cast

import uvicorn
from starlette.types import ASGIApp

from pycm.sim.certs import write_serving_cert
from pycm.sim.http_protocol import HeadLimitedHttpToolsProtocol
from pycm.util.serving_limits import ConnectionGate, ServingLimits, fit_open_files
from pycm.util.tasks import create_guarded_task

__all__ = ["AppServer", "ServingError", "tls_context"]

# How long stop() lets uvicorn finish open requests before cancelling them.
SHUTDOWN_TIMEOUT = 3.0
_STARTUP_TIMEOUT = 10.0


class ServingError(RuntimeError):
    """The server cannot start (port in use, the server stopped or hung while starting)."""


def tls_context(directory: Path, host: str) -> tuple[ssl.SSLContext, bytes]:
    """A server TLS context with a fresh throwaway CA's certificate for ``host`` (written to
    ``directory``), and the CA's PEM for the clients to trust."""
    cert = write_serving_cert(directory, host)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert.cert_file), str(cert.key_file))
    return context, cert.ca_pem


class _Server(uvicorn.Server):
    """uvicorn without its signal handling: the owner of the event loop decides about signals."""

    def __init__(self, config: uvicorn.Config, gate: ConnectionGate) -> None:
        super().__init__(config)
        self.gate = gate

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Connections still in their TLS handshake are the gate's, not yet uvicorn's.
        self.gate.abort_handshakes()
        try:
            await super().shutdown(sockets=sockets)
        finally:
            self.gate.close()


class AppServer:
    """``app`` served on ``host:port`` (0: any free port) with ``limits``, over TLS when
    ``ssl_context`` is given. ``url`` and ``address`` are set once :meth:`start` returned."""

    def __init__(
        self,
        app: ASGIApp,
        host: str,
        port: int,
        limits: ServingLimits,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.limits = limits
        self.ssl_context = ssl_context
        self.url = ""
        self.address = ""  # host:port as a client writes it ("[::1]:443")
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    def _bind(self) -> socket.socket:
        host, port = self.host, self.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP
        # (without it every response waits ~40 ms on Nagle and delayed ACKs).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except OSError as err:
            sock.close()
            raise ServingError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("the server is already started")
        sock = self._bind()
        port = sock.getsockname()[1]
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        self.address = f"{shown}:{port}"
        self.url = f"{'https' if self.ssl_context else 'http'}://{self.address}"
        limits = fit_open_files(self.limits)
        # The connection cap, TLS (done by the gate, so uvicorn gets no certificate) and the
        # handshake and request-head timeouts: pycm.util.serving_limits.
        gate = ConnectionGate(
            functools.partial(HeadLimitedHttpToolsProtocol, max_head_bytes=limits.max_header_bytes),
            limits,
            ssl_context=self.ssl_context,
        )
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            proxy_headers=False,  # nothing sits in front of the emulator: trust no X-Forwarded-*
            # uvicorn's C-parser implementation: its send path frames a watch's chunk in a few
            # lines where h11's runs a state machine per chunk (~half the serving cost before).
            # The gate makes it (uvicorn calls ``http`` as it would a protocol class).
            http=cast(type[asyncio.Protocol], gate),
            ws="none",  # nothing here serves websockets; an upgrade would leave the gate's count
            timeout_graceful_shutdown=int(SHUTDOWN_TIMEOUT),
            # The idle timeout: uvicorn's keep-alive timer, in whole seconds.
            timeout_keep_alive=(
                max(1, math.ceil(limits.idle_timeout)) if limits.idle_timeout else 2**31
            ),
        )
        self._server = server = _Server(config, gate)
        self._task = create_guarded_task(server.serve(sockets=[sock]), name="pycm-sim-uvicorn")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _STARTUP_TIMEOUT
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what uvicorn raised
                raise ServingError("the server stopped while starting")
            if loop.time() > deadline:
                raise ServingError("the server did not start in time")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        """Stop serving (a no-op when not started); open requests get SHUTDOWN_TIMEOUT."""
        task, server = self._task, self._server
        if task is not None and server is not None:
            server.should_exit = True
            try:
                async with asyncio.timeout(SHUTDOWN_TIMEOUT + 2):
                    await asyncio.shield(task)
            except TimeoutError:
                server.force_exit = True
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._server = None
