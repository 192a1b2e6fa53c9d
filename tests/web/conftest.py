"""Fixtures for the web tests: a fake api (what web/live.py serves, recorded) behind a real
DashboardAuth with a token table and an access list, served in process through httpx."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import orjson
import pytest_asyncio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from pycm.util.clock import FakeClock
from web.app import build_dashboard
from web.auth import Access, DashboardAuth
from web.sessions import Viewer

ORIGIN = "https://dash.test"
HELLO = {
    "v": 1,
    "mode": "live",
    "config": {
        "jaeger_url": None,
        "kube_defaults": {
            "lease_duration_s": 15.0,
            "renew_deadline_s": 10.0,
            "retry_period_s": 2.0,
        },
    },
    "sources": [],
    "replay": None,
}


def fake_api_routes() -> list[BaseRoute]:
    """/api/state and /api/stream answering a fixed hello (the protocol's shape)."""

    async def state(request: Request) -> Response:
        return Response(orjson.dumps(HELLO), media_type="application/json")

    async def stream(request: Request) -> Response:
        async def body() -> AsyncIterator[bytes]:
            yield b"event: hello\ndata: " + orjson.dumps(HELLO) + b"\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return [Route("/api/state", state), Route("/api/stream", stream)]


@dataclass
class Door:
    """The tokens and access list the fake checks use; ``token_checks`` counts reviews."""

    tokens: dict[str, Viewer] = field(default_factory=dict)
    allowed: set[str] = field(default_factory=set)
    token_checks: int = 0

    async def check_token(self, token: str) -> Viewer | None:
        self.token_checks += 1
        return self.tokens.get(token)

    async def authorize(self, viewer: Viewer) -> Access:
        return Access(viewer.name in self.allowed, "" if viewer.name in self.allowed else "no")


@dataclass
class Dashboard:
    client: httpx.AsyncClient
    auth: DashboardAuth
    door: Door
    clock: FakeClock


@pytest_asyncio.fixture
async def dashboard() -> AsyncIterator[Dashboard]:
    door = Door(
        tokens={"good": Viewer("alice"), "nope": Viewer("mallory")},
        allowed={"alice", "pycm:login-code"},
    )
    clock = FakeClock()
    auth = DashboardAuth(door.check_token, authorize=door.authorize, clock=clock)
    app = build_dashboard(fake_api_routes(), auth)

    # Mounted as pycm run and pycm dashboard mount it: under /dashboard.
    from starlette.applications import Starlette
    from starlette.routing import Mount

    outer = Starlette(routes=[Mount("/dashboard", app=app)])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client:
        yield Dashboard(client, auth, door, clock)
