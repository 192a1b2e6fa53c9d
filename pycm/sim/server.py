"""The :class:`Emulator` (store + app + options), served by :mod:`pycm.sim.serving`.

In tests::

    async with run_emulator(tls=False, kubelet=False, nodes=2, watch_window=50) as emu:
        emu.url, emu.kubeconfig_path, emu.admin_token, emu.store

Start order: build the store and seed the fresh cluster → bind the socket (a port in use fails
here, as :class:`EmulatorError`) → uvicorn serves in a named task → wait until it is started →
write the kubeconfig → start the runnables (the kubelet, the leader-election coordinator).
Stop order: cancel the runnables → mark stopping and end every open watch (so no stream holds
the server open) → ask uvicorn to exit and await its task (forced after a timeout) → remove the
temporary directory (certificates, the default kubeconfig).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from pycm.sim.app import build_app
from pycm.sim.auth import Authorizer, TokenAuthenticator
from pycm.sim.faults import Faults
from pycm.sim.handlers import APIContext, BeforeRequest
from pycm.sim.kubeconfig import write_kubeconfig
from pycm.sim.kubelet import Kubelet, kubelet_options
from pycm.sim.leader_coordinator import LeaderCoordinator
from pycm.sim.options import EmulatorOptions
from pycm.sim.registry.workloads import DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY
from pycm.sim.resources import REGISTRY
from pycm.sim.seed import seed_cluster
from pycm.sim.serving import SHUTDOWN_TIMEOUT, AppServer, ServingError, tls_context
from pycm.sim.store import Store
from pycm.util.tasks import cancel_and_wait, create_guarded_task

__all__ = ["Emulator", "EmulatorError", "Runnable", "run_emulator"]

# A component that runs beside the server for the emulator's lifetime (the simulated kubelet):
# started once the server is up, cancelled (and awaited) before the server stops.
Runnable = Callable[["Emulator"], Awaitable[None]]

# How long stop() gives the runnables once cancelled (as uvicorn's open requests get).
_SHUTDOWN_TIMEOUT = SHUTDOWN_TIMEOUT


class EmulatorError(RuntimeError):
    """The emulator cannot start (port in use, unreadable file, bad options)."""


class Emulator:
    """The embedded API server: ``store`` (in-process API), ``app`` (ASGI), ``options``."""

    def __init__(self, options: EmulatorOptions | None = None) -> None:
        self.options = options = options or EmulatorOptions()
        problems = options.validate()
        if problems:
            raise EmulatorError("; ".join(problems))
        registry = REGISTRY.copy()
        if options.deployment_pod_replacement_policy:
            registry.use_strategy("apps", "deployments", DEPLOYMENT_WITH_POD_REPLACEMENT_POLICY)
        self.store = Store(
            registry=registry,
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
            sharded_list_and_watch=options.sharded_list_and_watch,
        )
        self.app: Starlette = build_app(self.api, options.middleware)
        seed_cluster(self.store, options.nodes)
        self.url = ""
        self.kubeconfig_path = Path()
        self.ca_pem: bytes | None = None
        self._tmp: Path | None = None
        self._serving: AppServer | None = None
        self._runnables: list[tuple[str, Runnable]] = []
        self._runnable_tasks: list[asyncio.Task[None]] = []
        self.failures: list[BaseException] = []  # what runnables died of
        self.kubelet: Kubelet | None = None
        if options.kubelet:
            self.kubelet = kubelet = Kubelet(self.store, kubelet_options(options), options.clock)
            self._runnables.append(("kubelet", lambda _: kubelet.run()))
        if options.coordinated_leader_election:
            coordinator = LeaderCoordinator(self.store, options.clock)
            self._runnables.append(("leader-coordinator", lambda _: coordinator.run()))
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
        if self._serving is not None:
            raise RuntimeError("add runnables before the emulator starts")
        if any(n == name for n, _ in self._runnables):
            raise ValueError(f"runnable {name!r} added twice")
        self._runnables.append((name, run))

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1]) if self.url else 0

    async def start(self) -> None:
        if self._serving is not None:
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
            context, self.ca_pem = tls_context(tmp, options.host)
        self._serving = serving = AppServer(
            self.app, options.host, options.port, options.limits, context
        )
        try:
            await serving.start()
        except ServingError as err:
            raise EmulatorError(str(err)) from None
        self.url = serving.url
        self.api.server_address = serving.address
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
        if self._serving is not None:
            await self._serving.stop()
            self._serving = None
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
