"""The browser suite's set-up: the emulator, three real ``pycm run`` replicas, and a fan-in
dashboard over them — the hub (web/hub.py) fed by each replica's ``/debug/pycm/events`` (the
demo's stream reader), the live routes and the page (web/app.py) served by uvicorn — all on a
loop in a background thread, so the tests drive Debian's chromium with Playwright's sync API.
Logins are checked by the emulator's TokenReview and SubjectAccessReview, as in ``pycm run``.

One set-up for the whole module (a replica start costs seconds): the tests run in file order
and later ones build on what earlier ones did (the leader killed, then restarted).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright
from starlette.applications import Starlette
from starlette.routing import Mount

import pycm.demo.stream as demo_stream
from pycm.demo.stream import ReplicaStream
from pycm.kube import DEPLOYMENTS, Client, load_config
from pycm.server import DashboardDoor, DelegatingAuthorizer, DelegatingTokenReviewer
from pycm.server.kube_poster import ClientReviewPoster
from pycm.sim.server import run_emulator
from tests.e2e.conftest import (
    LEASE,
    LEASE_DURATION,
    NAMESPACE,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    ROOT,
    Cluster,
    Replica,
)
from web.app import build_dashboard
from web.auth import manager_auth
from web.hub import DashboardConfig, Hub
from web.live import live_routes
from web.sessions import Viewer

CHROMIUM = "/usr/bin/chromium"
REPLICAS = ("replica-a", "replica-b", "replica-c")
JAEGER = "http://127.0.0.1:16686"
# Nothing of chromium's own phones home: no sync, updates, safe browsing, metrics or DNS
# prefetch — the page's origin on 127.0.0.1 is all it talks to.
NO_NETWORK_FEATURES = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-extensions",
    "--disable-sync",
    "--metrics-recording-only",
    "--no-first-run",
    "--no-pings",
    "--safebrowsing-disable-auto-update",
    "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
)
_T = TypeVar("_T")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BrowserCluster(Cluster):
    """The e2e cluster, whose replicas restart on their own port (a restarted process is the
    same replica to the dashboard's stream reader, with a new generation)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.generations: dict[str, int] = {}
        self.ports: dict[str, int] = {}

    async def start(self, identity: str) -> Replica:
        kubeconfig = self.kubeconfig_for(identity)
        port = self.ports.setdefault(identity, _free_port())
        trace, log = self.tmp / f"{identity}.jsonl", self.tmp / f"{identity}.log"
        argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(kubeconfig)]
        argv += ["--leader-elect-lease-duration", f"{LEASE_DURATION}s"]
        argv += ["--leader-elect-renew-deadline", f"{RENEW_DEADLINE}s"]
        argv += ["--leader-elect-retry-period", f"{RETRY_PERIOD}s"]
        argv += ["--secure-port", str(port), "--bind-address", "127.0.0.1"]
        argv += ["--cert-dir", str(self.tmp / f"certs-{identity}")]
        argv += ["--identity", identity, "--trace-file", str(trace)]
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out
            )
        self.generations[identity] = self.generations.get(identity, 0) + 1
        replica = Replica(identity, port, trace, log, process)
        self.replicas[identity] = replica
        return replica

    async def kill(self, identity: str) -> None:
        replica = self.replicas[identity]
        with contextlib.suppress(ProcessLookupError):
            os.kill(replica.process.pid, signal.SIGKILL)
        await replica.process.wait()


class Stack:
    """Everything the page talks to, on its own event loop in a thread."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="browser-stack")
        self.thread.start()
        self.exit = contextlib.AsyncExitStack()
        self.tasks: list[asyncio.Task[Any]] = []
        self.port = _free_port()
        self.server: uvicorn.Server | None = None
        self.server_task: asyncio.Task[Any] | None = None

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 90.0) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/dashboard"

    def login_url(self) -> str:
        return f"{self.base}/login?code={self.auth.new_login_code()}"

    async def start(self) -> None:
        emu = await self.exit.enter_async_context(run_emulator())
        self.cluster = BrowserCluster(emu, self.tmp)
        self.exit.push_async_callback(self.cluster.stop)
        config = await load_config(str(self.cluster.kubeconfig_for("observer")))
        self.client = await self.exit.enter_async_context(await Client.connect(config))
        self._spawn(self.cluster.leases.run(self.client), "lease-recorder")
        await self.cluster.start_all(*REPLICAS)
        await self.cluster.leases.wait_for(bool, timeout=60)

        self.hub = Hub(
            "fanin",
            DashboardConfig(
                jaeger_url=JAEGER, renew_deadline_s=RENEW_DEADLINE, lease_duration_s=LEASE_DURATION
            ),
        )
        for identity in REPLICAS:
            self._feed(identity)
        self._spawn(self.hub.run(), "hub")
        poster = ClientReviewPoster(self.client)
        door = DashboardDoor(DelegatingTokenReviewer(poster), DelegatingAuthorizer(poster))
        # The printed code stands for the operator who started the dashboard.
        self.auth = manager_auth(door, code_viewer=Viewer("operator", groups=("system:masters",)))
        self.app = Starlette(
            routes=[Mount("/dashboard", app=build_dashboard(live_routes(self.hub), self.auth))]
        )
        await self.serve()
        # A workload, so the controllers have something to reconcile.
        from pycm.demo.orchestrator import _deployment

        await self.client.create(DEPLOYMENTS, _deployment("web", 3), namespace="default")

    def _feed(self, identity: str) -> None:
        """The replica's stream into the hub, reporting each new connection as the stream
        client does (the hub needs it to tell a restarted replica from a resumed stream)."""
        connects = [0]
        hub = self.hub

        def on_event(name: str, event: Any) -> None:
            if stream.connects != connects[0]:
                connects[0] = stream.connects
                hub.set_status(name, "reconnecting")
                hub.set_status(name, "connected")
            hub.push(name, [event])

        stream = ReplicaStream(
            identity,
            self.cluster.replicas[identity].url,
            self.tmp / f"certs-{identity}" / "pycm.crt",
            self.cluster.emu.admin_token,
            on_event,
            lambda: self.cluster.generations[identity],
        )
        self._spawn(stream.run(), f"stream {identity}")

    async def serve(self) -> None:
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
            )
        )
        self.server_task = asyncio.create_task(self.server.serve(), name="dashboard-server")
        async with asyncio.timeout(20):
            while not self.server.started:
                await asyncio.sleep(0.05)

    async def restart_server(self) -> None:
        """Stop serving (every open stream ends) and serve again on the same port."""
        assert self.server is not None and self.server_task is not None
        self.server.should_exit = True
        self.server.force_exit = True
        await self.server_task
        # The open streams outlive a stopped uvicorn on a loop that keeps running (a process
        # exiting would end them): end them as the process's end would.
        self.hub.broadcast.close_all()
        await self.serve()

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.tasks.append(asyncio.create_task(coro, name=name))

    async def stop(self) -> None:
        if self.server is not None and self.server_task is not None:
            self.server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server_task, 10)
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.exit.aclose()
        # Whatever is left (a stream's handler after its server stopped) ends here too.
        me = asyncio.current_task()
        rest = [t for t in asyncio.all_tasks() if t is not me]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
        await asyncio.get_running_loop().shutdown_asyncgens()

    def close(self) -> None:
        try:
            self.run(self.stop(), timeout=90)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            if not self.thread.is_alive():
                self.loop.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs it)")
    # Every kind, not only the ones the demo prints: the page shows them all.
    saved = demo_stream.KINDS
    demo_stream.KINDS = ""
    stack = Stack(tmp_path_factory.mktemp("browser"))
    try:
        stack.run(stack.start(), timeout=120)
        yield stack
    finally:
        stack.close()
        demo_stream.KINDS = saved


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", *NO_NETWORK_FEATURES],
        )
        try:
            yield browser
        finally:
            browser.close()


class Console:
    """Every console message and page error of a page."""

    def __init__(self, page: Page) -> None:
        self.messages: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.messages.append(f"pageerror: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        self.messages.append(f"{message.type}: {message.text}")

    @property
    def errors(self) -> list[str]:
        return [m for m in self.messages if m.startswith(("error", "pageerror"))]


def poll(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    detail: Callable[[], str] = lambda: "",
) -> None:
    """Until ``predicate()`` holds, at most ``timeout`` seconds (a bounded poll, not a sleep)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} {detail()}")
        time.sleep(0.2)


__all__ = ["LEASE", "NAMESPACE", "Console", "Stack", "poll"]
