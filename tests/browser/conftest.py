"""The browser suite's set-up: the emulator, three real ``pycm run`` replicas and a real
``pycm dashboard --server … ×3`` over them (the emulator and the replicas' supervision on a loop
in a background thread), so the tests drive Debian's chromium with Playwright's sync API.

One set-up for the whole module (a replica start costs seconds): the tests run in file order
and later ones build on what earlier ones did (the leader killed, then restarted).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, Self, TypeVar

import orjson
import pytest
import uvicorn
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

from pycm.demo.orchestrator import _deployment
from pycm.kube import DEPLOYMENTS, Client, load_config
from pycm.sim.server import run_emulator
from pycm.util.ports import free_port
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
from web.auth import DashboardAuth
from web.hub import DashboardConfig
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


class BrowserCluster(Cluster):
    """The e2e cluster, whose replicas restart on their own port (a restarted process is the
    same replica to the dashboard's stream reader, with a new generation)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.generations: dict[str, int] = {}
        self.ports: dict[str, int] = {}

    async def start(self, identity: str) -> Replica:
        kubeconfig = self.kubeconfig_for(identity)
        port = self.ports.setdefault(identity, free_port())
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


class CuttableProxy:
    """A TCP proxy on 127.0.0.1 in front of the dashboard: ``cut()`` drops every open
    connection (a network blip, a proxy's idle timeout) while it keeps listening, so the page's
    EventSource reconnects to the same server with its session intact."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._writers -= {writer, up_writer}

    def cut(self) -> None:
        self.cuts += 1
        for writer in list(self._writers):
            writer.transport.abort()

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class Stack:
    """Everything the page talks to, on its own event loop in a thread: the emulator and the
    replicas in process, ``pycm dashboard`` as a real process."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="browser-stack")
        self.thread.start()
        self.exit = contextlib.AsyncExitStack()
        self.tasks: list[asyncio.Task[Any]] = []
        self.login_url = ""  # the one-time URL pycm dashboard printed
        self.base = ""  # http://127.0.0.1:PORT/dashboard
        self.token = ""  # the token the dashboard uses; it may log in with it too
        self.dashboard: asyncio.subprocess.Process | None = None

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 90.0) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def start(self) -> None:
        emu = await self.exit.enter_async_context(run_emulator(tls=False, kubelet=False))
        self.cluster = BrowserCluster(emu, self.tmp)
        self.exit.push_async_callback(self.cluster.stop)
        config = await load_config(str(self.cluster.kubeconfig_for("observer")))
        self.client = await self.exit.enter_async_context(await Client.connect(config))
        self._spawn(self.cluster.leases.run(self.client), "lease-recorder")
        await self.cluster.start_all(*REPLICAS)
        await self.cluster.leases.wait_for(bool, timeout=60)
        self.token = emu.admin_token
        token_file = self.tmp / "token"
        token_file.write_text(self.token)
        argv = [sys.executable, "-m", "pycm", "dashboard", "--token-file", str(token_file)]
        for identity in REPLICAS:
            argv += ["--server", self.cluster.replicas[identity].url]
        # Each replica serves a self-signed certificate of its own: one CA flag cannot trust
        # all three, so the test (loopback only) skips verification.
        argv += ["--insecure-skip-tls-verify", "--listen", "127.0.0.1:0"]
        argv += ["--jaeger-url", JAEGER]
        with (self.tmp / "dashboard.log").open("wb") as log:
            self.dashboard = await asyncio.create_subprocess_exec(
                *argv,
                cwd=ROOT,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
            )
        self.exit.push_async_callback(self._stop_dashboard)
        assert self.dashboard.stdout is not None
        async with asyncio.timeout(60):
            line = (await self.dashboard.stdout.readline()).decode()
        prefix = "pycm dashboard: serving "
        assert line.startswith(prefix), line + (self.tmp / "dashboard.log").read_text()
        # The page goes through a proxy the tests can cut (see CuttableProxy).
        served = line[len(prefix) :].strip()
        port = int(served.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        self.proxy = CuttableProxy(port)
        await self.proxy.start()
        self.exit.push_async_callback(self.proxy.stop)
        self.login_url = served.replace(f":{port}/", f":{self.proxy.port}/", 1)
        self.base = self.login_url.split("/login?", 1)[0]
        self._spawn(self._drain(self.dashboard.stdout), "dashboard stdout")
        # A workload, so the controllers have something to reconcile.
        await self.client.create(DEPLOYMENTS, _deployment("web", 3), namespace="default")

    @staticmethod
    async def _drain(stream: asyncio.StreamReader) -> None:
        while await stream.readline():
            pass

    async def _stop_dashboard(self) -> None:
        if self.dashboard is not None and self.dashboard.returncode is None:
            self.dashboard.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.dashboard.wait(), 20)
            except TimeoutError:
                self.dashboard.kill()
                await self.dashboard.wait()

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.tasks.append(asyncio.create_task(coro, name=name))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.exit.aclose()
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
        # A failure, not a skip: a missing browser must not pass as "nothing to test".
        pytest.fail(f"{CHROMIUM} is not installed (make test installs it: tests/system-deps.sh)")
    stack = Stack(tmp_path_factory.mktemp("browser"))
    try:
        stack.run(stack.start(), timeout=150)
        yield stack
    finally:
        stack.close()


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
        self.expected: list[str] = []  # errors a test caused on purpose (a cut connection)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.messages.append(f"pageerror: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        self.messages.append(f"{message.type}: {message.text}")

    @property
    def errors(self) -> list[str]:
        return [
            m
            for m in self.messages
            if m.startswith(("error", "pageerror")) and not any(e in m for e in self.expected)
        ]


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


class ThreadedServer:
    """An ASGI app served by uvicorn on a free port of 127.0.0.1 in a thread (the sync
    Playwright tests' servers): ``with`` starts and stops it."""

    def __init__(self, app: Any, name: str) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=name)

    def __enter__(self) -> Self:
        self.thread.start()
        poll(lambda: self.server.started, 20, f"{self.thread.name} to start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.server.force_exit = True
        self.thread.join(20)


class ScriptedDashboard(ThreadedServer):
    """The real dashboard app over made-up streams, served by uvicorn in a thread: each
    :meth:`page` mounts a dashboard whose stream plays the given protocol messages and then
    idles (as a quiet server does), and returns its one-time login URL. For the page's views of
    a picture a test draws exactly; the real servers are :class:`Stack`'s."""

    def __init__(self) -> None:
        async def nobody(token: str) -> Viewer | None:
            return None

        self.auth = DashboardAuth(nobody)
        self.app = Starlette(routes=[])
        super().__init__(self.app, "scripted-dashboard")

    def page(self, messages: list[tuple[str, dict[str, Any]]]) -> str:
        """Mount a dashboard streaming ``messages`` (``(name, data)``: ``hello``, ``events``…)."""
        prefix = f"/page{len(self.app.router.routes)}"
        frames = [
            f"event: {name}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"
            for name, data in messages
        ]

        async def stream(request: Request) -> Response:
            async def play() -> AsyncIterator[bytes]:
                for frame in frames:
                    yield frame
                while True:
                    await asyncio.sleep(15)
                    yield b": ping\n\n"

            return StreamingResponse(play(), media_type="text/event-stream")

        dashboard = build_dashboard([Route("/api/stream", stream)], self.auth)
        self.app.router.routes.append(Mount(prefix, app=dashboard))
        return f"http://127.0.0.1:{self.port}{prefix}/login?code={self.auth.new_login_code()}"


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedDashboard]:
    with ScriptedDashboard() as served:
        yield served


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page (1280×720) whose console must stay free of errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    console = Console(page)
    yield page
    assert console.errors == []
    context.close()


def hello(sources: list[dict[str, Any]], **config: Any) -> tuple[str, dict[str, Any]]:
    """A ``hello`` message of ``sources`` (each needs at least ``name`` and ``snapshot``)."""
    return (
        "hello",
        {
            "v": 1,
            "mode": "live",
            "config": DashboardConfig().to_dict() | config,
            "sources": [
                {"status": {"state": "connected", "reason": ""}, "series": [], "incidents": []}
                | source
                for source in sources
            ],
            "replay": None,
        },
    )


__all__ = ["LEASE", "NAMESPACE", "Console", "ScriptedDashboard", "Stack", "hello", "poll"]
