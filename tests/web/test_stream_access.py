"""An open ``/api/stream`` does not outlive the viewer's permission: a logout (from another tab),
an expired session or revoked access ends it, and the page's reconnect then meets the 401/403."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from pycm.util.clock import FakeClock
from tests.web.conftest import Door
from tests.web.streams import serving
from web.app import COOKIE_NAME, build_dashboard
from web.auth import DashboardAuth
from web.hub import Hub
from web.live import live_routes
from web.sessions import DEFAULT_SESSION_TTL, Viewer

pytestmark = pytest.mark.asyncio

RECHECK_S = 0.05


@pytest.mark.parametrize("end", ["logout", "session-expired", "access-revoked"])
async def test_stream_ends_once_the_viewer_may_no_longer_look(end: str) -> None:
    door = Door(tokens={"good": Viewer("alice")}, allowed={"alice"})
    clock = FakeClock()
    auth = DashboardAuth(door.check_token, authorize=door.authorize, clock=clock)
    hub = Hub("fanin")
    hub.add_source("r1")
    app = build_dashboard(live_routes(hub, recheck_interval=RECHECK_S), auth)
    outer = Starlette(routes=[Mount("/dashboard", app=app)])
    session = auth.sessions.create(Viewer("alice"))
    headers = {"Cookie": f"{COOKIE_NAME}={session}"}
    async with serving(outer) as base, httpx.AsyncClient(timeout=10) as client:
        async with client.stream("GET", base + "/dashboard/api/stream", headers=headers) as r:
            assert r.status_code == 200
            chunks = r.aiter_bytes()
            assert b"event: hello" in await anext(chunks)
            if end == "logout":  # as the other tab's Log out button does
                answer = await client.post(
                    base + "/dashboard/logout", headers={**headers, "Origin": base}
                )
                assert answer.status_code == 303
            elif end == "session-expired":
                clock.advance(DEFAULT_SESSION_TTL + 1)
            else:
                door.allowed.discard("alice")
            # The stream ends (within a few rechecks; the bound only keeps a failure short).
            async with asyncio.timeout(5):
                async for _ in chunks:
                    pass
        assert hub.broadcast.viewers == 0
        again = await client.get(base + "/dashboard/api/stream", headers=headers)
        assert again.status_code == (403 if end == "access-revoked" else 401)


async def test_stream_head_answers_the_headers_and_holds_nothing() -> None:
    hub = Hub("fanin")
    hub.add_source("r1")
    app = Starlette(routes=live_routes(hub))
    async with serving(app) as base, httpx.AsyncClient(timeout=5) as client:
        # Twice on one kept-alive connection: the first answer must end for the second.
        for _ in range(2):
            answer = await client.head(base + "/api/stream")
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
        assert hub.broadcast.viewers == 0
