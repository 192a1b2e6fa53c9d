"""The :class:`Emulator` (store + app + options) and serving it with uvicorn.

In tests::

    async with run_emulator(tls=False, kubelet=False, nodes=2, watch_window=50) as emu:
        emu.url, emu.kubeconfig_path, emu.admin_token, emu.store

Start order: build the store and seed the fresh cluster → bind the socket (a port in use fails
here, as :class:`EmulatorError`) → uvicorn serves in a named task → wait until it is started →
write the kubeconfig → start the runnables (the kubelet). Stop order: cancel the runnables →
mark stopping and end every open watch (so no stream holds the server open) → ask uvicorn to
exit and await its task (forced after a timeout) → remove the temporary directory
(certificates, the default kubeconfig).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import shutil
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette

from pycm.sim.app import build_app
from pycm.sim.auth import Authorizer, TokenAuthenticator
from pycm.sim.certs import write_serving_cert
from pycm.sim.faults import Faults
from pycm.sim.handlers import APIContext, BeforeRequest
from pycm.sim.http_protocol import HeadLimitedHttpToolsProtocol
from pycm.sim.kubeconfig import write_kubeconfig
from pycm.sim.kubelet import Kubelet, kubelet_options
from pycm.sim.options import EmulatorOptions
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.serving_limits import ConnectionGate, fit_open_files
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = ["Emulator", "EmulatorError", "Runnable", "run_emulator"]

# A component that runs beside the server for the emulator's lifetime (the simulated kubelet):
# started once the server is up, cancelled (and awaited) before the server stops.
Runnable = Callable[["Emulator"], Awaitable[None]]

# How long stop() lets uvicorn finish open requests before cancelling them.
_SHUTDOWN_TIMEOUT = 3.0
_STARTUP_TIMEOUT = 10.0


class EmulatorError(RuntimeError):
    """The emulator cannot start (port in use, unreadable file, bad options)."""


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


class Emulator:
    """The embedded API server: ``store`` (in-process API), ``app`` (ASGI), ``options``."""

    def __init__(self, options: EmulatorOptions | None = None) -> None:
        self.options = options = options or EmulatorOptions()
        problems = options.validate()
        if problems:
            raise EmulatorError("; ".join(problems))
        self.store = Store(
            clock=options.clock,
            watch_window=options.watch_window,
            watch_history_bytes=options.watch_history_bytes,
            watch_queue_size=options.watch_queue_size,
            # A kubelet confirms terminations, so with one a pod's grace period is honoured.
            graceful_pod_deletion=options.graceful_pod_deletion or options.kubelet,
        )
        self.authenticator = TokenAuthenticator()
        self.admin_token = self.authenticator.add_admin(options.admin_token)
        try:
            if options.token_auth_file:
                self.authenticator.load_file(options.token_auth_file)
            self.authorizer = (
                Authorizer.from_file(options.authz_policy_file)
                if options.authz_policy_file
                else Authorizer()
            )
        except ValueError as err:
            raise EmulatorError(str(err)) from None
        self.api = APIContext(
            self.store,
            self.authenticator,
            self.authorizer,
            bookmark_interval=options.bookmark_interval,
            watch_list=options.watch_list,
        )
        self.app: Starlette = build_app(self.api, options.middleware)
        seed_cluster(self.store, options.nodes)
        self.url = ""
        self.kubeconfig_path = Path()
        self.ca_pem: bytes | None = None
        self._tmp: Path | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._runnables: list[tuple[str, Runnable]] = []
        self._runnable_tasks: list[asyncio.Task[None]] = []
        self.failures: list[BaseException] = []  # what runnables died of
        self.kubelet: Kubelet | None = None
        if options.kubelet:
            self.kubelet = kubelet = Kubelet(self.store, kubelet_options(options), options.clock)
            self._runnables.append(("kubelet", lambda _: kubelet.run()))
        # Faults: a request hook (and the /sim/v1/faults endpoint) plus their expiry ticker.
        self.faults = Faults(self.store, self.authenticator, options.clock, lambda: self.kubelet)
        self.api.before_request.append(self.faults.before_request)
        self._runnables.append(("faults", lambda _: self.faults.run()))

    @property
    def before_request(self) -> list[BeforeRequest]:
        """Hooks run before every request (faults): append or remove at any time."""
        return self.api.before_request

    def add_runnable(self, name: str, run: Runnable) -> None:
        """Run ``run(emulator)`` as the named task ``pycm-sim-<name>`` while serving."""
        if self._task is not None:
            raise RuntimeError("add runnables before the emulator starts")
        if any(n == name for n, _ in self._runnables):
            raise ValueError(f"runnable {name!r} added twice")
        self._runnables.append((name, run))

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1]) if self.url else 0

    def _bind(self) -> socket.socket:
        host, port = self.options.host, self.options.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP
        # (without it every response waits ~40 ms on Nagle and delayed ACKs).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except OSError as err:
            sock.close()
            raise EmulatorError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("the emulator is already started")
        self._tmp = Path(tempfile.mkdtemp(prefix="pycm-sim-"))
        try:
            await self._start(self._tmp)
        except BaseException:
            await self.stop()
            raise

    async def _start(self, tmp: Path) -> None:
        options = self.options
        context: ssl.SSLContext | None = None
        if options.tls:
            cert = write_serving_cert(tmp, options.host)
            self.ca_pem = cert.ca_pem
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(cert.cert_file), str(cert.key_file))
        sock = self._bind()
        port = sock.getsockname()[1]
        host = options.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{'https' if options.tls else 'http'}://{shown}:{port}"
        self.api.server_address = f"{shown}:{port}"
        limits = fit_open_files(options.limits)
        # The connection cap, TLS (done by the gate, so uvicorn gets no certificate) and the
        # handshake and request-head timeouts: pycm.util.serving_limits.
        gate = ConnectionGate(
            functools.partial(HeadLimitedHttpToolsProtocol, max_head_bytes=limits.max_header_bytes),
            limits,
            ssl_context=context,
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
            timeout_graceful_shutdown=int(_SHUTDOWN_TIMEOUT),
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
                raise EmulatorError("the server stopped while starting")
            if loop.time() > deadline:
                raise EmulatorError("the server did not start in time")
            await asyncio.sleep(0.005)
        self.kubeconfig_path = Path(options.kubeconfig_out or tmp / "kubeconfig")
        try:
            write_kubeconfig(self.kubeconfig_path, self.url, self.admin_token, self.ca_pem)
        except OSError as err:
            raise EmulatorError(
                f"cannot write kubeconfig {self.kubeconfig_path}: {err.strerror or err}"
            ) from None
        for name, run in self._runnables:
            self._runnable_tasks.append(
                create_guarded_task(
                    _as_coroutine(run, self),
                    name=f"pycm-sim-{name}",
                    on_failure=self.failures.append,
                )
            )

    async def stop(self) -> None:
        if self._runnable_tasks:
            await cancel_and_wait(self._runnable_tasks, timeout=_SHUTDOWN_TIMEOUT)
            self._runnable_tasks = []
        self.api.stopping = True
        self.store.drop_watches("the server is shutting down")
        task, server = self._task, self._server
        if task is not None and server is not None:
            server.should_exit = True
            try:
                async with asyncio.timeout(_SHUTDOWN_TIMEOUT + 2):
                    await asyncio.shield(task)
            except TimeoutError:
                server.force_exit = True
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._server = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


async def _as_coroutine(run: Runnable, emulator: Emulator) -> None:
    # run() is called inside the task: a task cancelled before its first step must not leave
    # a coroutine that was never awaited (a RuntimeWarning).
    await run(emulator)


@contextlib.asynccontextmanager
async def run_emulator(
    options: EmulatorOptions | None = None, **overrides: Any
) -> AsyncIterator[Emulator]:
    """Serve an emulator for the duration of the block.

    ``overrides`` are EmulatorOptions fields, plus ``runnables={name: run}`` (see Runnable).
    """
    runnables = overrides.pop("runnables", {})
    emulator = Emulator(replace(options or EmulatorOptions(), **overrides))
    for name, run in dict(runnables).items():
        emulator.add_runnable(name, run)
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()
