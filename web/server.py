"""The stand-alone dashboard server behind ``pycm dashboard``: the hub, its feeds (one stream
client per ``--server``, or the replay player), the dashboard app under ``/dashboard`` and
uvicorn on the bound loopback socket, until SIGINT/SIGTERM.

Start: bind (a failure is one line and exit 1), start the hub, the feeds and uvicorn, print the
login URL. Stop: end every viewer's stream (so uvicorn's graceful shutdown is not held open by
them), cancel the feeds and the hub, stop uvicorn within a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import signal
import socket
import sys
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route

from pycm.trace.replay import ReplayPlayer
from pycm.trace.stream import StreamClient
from web.app import build_dashboard
from web.auth import DashboardAuth
from web.hub import DashboardConfig, Hub
from web.live import live_routes
from web.plan import DashboardPlan
from web.sessions import Viewer

__all__ = ["PREFIX", "TOKEN_VIEWER", "build_app", "serve"]

PREFIX = "/dashboard"
TOKEN_VIEWER = Viewer("pycm-dashboard:token")


def _token_check(token: str) -> Callable[[str], Coroutine[Any, Any, Viewer | None]]:
    """Who may log in with a token: whoever holds the one this dashboard itself uses."""

    async def check(given: str) -> Viewer | None:
        if token and hmac.compare_digest(given.encode(), token.encode()):
            return TOKEN_VIEWER
        return None

    return check


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: :func:`serve` owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def build_app(hub: Hub, auth: DashboardAuth) -> Starlette:
    """The stand-alone server's app: the dashboard under /dashboard, / redirecting to it."""

    async def root(request: Request) -> Response:
        return RedirectResponse(PREFIX + "/", status_code=307)

    dashboard = build_dashboard(live_routes(hub), auth, jaeger_url=hub.config.jaeger_url)
    return Starlette(routes=[Route("/", root), Mount(PREFIX, app=dashboard)])


async def serve(
    plan: DashboardPlan,
    *,
    events: list[Any] | None = None,
    stop: asyncio.Event | None = None,
    out: Callable[[str], None] = print,
    announce: Callable[[str], None] | None = None,
    run_ids: Mapping[str, Callable[[], object]] | None = None,
    handle_signals: bool = True,
) -> int:
    """Run the dashboard the plan describes until ``stop`` is set (or SIGINT/SIGTERM, with
    ``handle_signals``). The login URL goes to ``announce`` if given, else ``out`` prints the
    ``pycm dashboard: serving <URL>`` line. ``run_ids`` names each server's current process
    generation, when a supervisor knows it (the demo), so a restart is noticed at once."""
    hub = Hub(plan.mode, plan.config)
    tasks: list[asyncio.Task[Any]] = []
    runners: list[tuple[str, Coroutine[Any, Any, Any]]] = []
    if plan.mode == "replay":
        player = ReplayPlayer(hub, events or [], speed=plan.speed)
        hub.replay = player  # what POST /api/replay drives
        runners.append(("dashboard replay", player.run()))
    else:
        for name, url, ca_file in plan.servers:
            hub.add_source(name)
            client = StreamClient(
                url,
                name=name,
                # A token file is handed on, so a rotated token is read again on reconnect.
                token=None if plan.token_file else plan.token or None,
                token_file=plan.token_file or None,
                client_cert=plan.client_cert,
                verify=plan.verify,
                ca_file=ca_file or None,
                run_id=(run_ids or {}).get(name),
            )
            runners.append((f"dashboard stream {name}", client.run(hub)))
    auth = DashboardAuth(_token_check(plan.token))
    app = build_app(hub, auth)
    try:
        sock = socket.create_server((plan.host, plan.port))
    except OSError as exc:
        for _, coro in runners:
            coro.close()
        sys.stderr.write(f"pycm dashboard: cannot listen on {plan.host}:{plan.port}: {exc}\n")
        return 1
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        ws="none",
        timeout_graceful_shutdown=2,
    )
    server = _Uvicorn(config)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM) if handle_signals else ()
    for sig in signals:
        with contextlib.suppress(ValueError, NotImplementedError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    serving = asyncio.create_task(server.serve(sockets=[sock]), name="dashboard server")
    tasks.append(asyncio.create_task(hub.run(), name="dashboard hub"))
    tasks += [asyncio.create_task(coro, name=name) for name, coro in runners]
    try:
        while not server.started and not serving.done():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        if serving.done():
            sys.stderr.write("pycm dashboard: the server stopped while starting\n")
            return 1
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}{PREFIX}/login?code={auth.new_login_code()}"
        if announce is not None:
            announce(url)
        else:
            out(f"pycm dashboard: serving {url}")
        waiter = asyncio.create_task(stop.wait(), name="dashboard stop")
        await asyncio.wait({waiter, serving}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        return 0 if not serving.done() else 1
    finally:
        for sig in signals:
            with contextlib.suppress(ValueError, NotImplementedError):
                loop.remove_signal_handler(sig)
        hub.broadcast.close_all()  # end the streams, so the server stops at once
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        server.should_exit = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(serving), 5)
        if not serving.done():
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        sock.close()


async def serve_replicas(
    replicas: Sequence[tuple[str, str, str, Callable[[], object]]],
    token: str,
    *,
    announce: Callable[[str], None],
    stop: asyncio.Event,
) -> int:
    """The dashboard of ``pycm demo``: its replicas — ``(identity, URL, CA file, generation)``,
    each trusted by its own certificate — on a free loopback port, until ``stop``."""
    plan = DashboardPlan(
        "fanin",
        "127.0.0.1",
        0,
        DashboardConfig(),
        servers=[(name, url, ca) for name, url, ca, _ in replicas],
        token=token,
    )
    run_ids = {name: generation for name, _, _, generation in replicas}
    return await serve(plan, stop=stop, announce=announce, run_ids=run_ids, handle_signals=False)
