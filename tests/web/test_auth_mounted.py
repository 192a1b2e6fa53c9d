"""The dashboard mounted on the manager's secure server, as ``pycm run`` mounts it: the chain
takes the dashboard's session cookie for ``/debug/pycm/*``; ``/dashboard/api/*`` is authorized
as ``/debug/pycm/events`` is (the same SubjectAccessReview), and answers 401 without
credentials, 403 to a user the review denies."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry
from starlette.routing import Mount

from pycm.server import (
    DASHBOARD_PATHS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DashboardDoor,
    DelegatingAuthenticator,
    HealthRegistry,
    SecureServer,
    SecureServingConfig,
    build_routes,
)
from pycm.server.debug import debug_routes
from pycm.server.user import UserInfo
from pycm.trace.bus import Bus
from tests.server.conftest import FakeAuthorizer, FakeTokenReviewer
from tests.web.conftest import fake_api_routes
from web.app import COOKIE_NAME, build_dashboard
from web.auth import DashboardAuth, manager_auth
from web.sessions import Viewer

pytestmark = pytest.mark.asyncio

ALICE = UserInfo("alice", "u-alice", ("devs",))
MALLORY = UserInfo("mallory", "u-mallory", ())
ROOT = UserInfo("root", "u-root", ("system:masters",))


@dataclass
class Mounted:
    url: str
    http: httpx.AsyncClient
    auth: DashboardAuth
    authorizer: FakeAuthorizer


@pytest_asyncio.fixture
async def mounted() -> AsyncIterator[Mounted]:
    bus = Bus()
    reviewer = FakeTokenReviewer({"alice": ALICE, "mallory": MALLORY, "root": ROOT})
    authorizer = FakeAuthorizer(["alice"])
    auth = manager_auth(DashboardDoor(reviewer, authorizer))
    routes = [
        *debug_routes(bus, lambda: {"v": 1}),
        Mount("/dashboard", app=build_dashboard(fake_api_routes(), auth)),
    ]
    server = SecureServer(
        build_routes(
            health=HealthRegistry(bus=bus), metrics_registry=CollectorRegistry(), routes=routes
        ),
        SecureServingConfig(bind_address="127.0.0.1", port=0),
        authenticator=DelegatingAuthenticator(reviewer, session_users=auth.sessions.lookup),
        authorizer=authorizer,
        always_allow_paths=(*DEFAULT_ALWAYS_ALLOW_PATHS, *DASHBOARD_PATHS),
        bus=bus,
    )
    host, port = await server.start()
    try:
        context = ssl.create_default_context(cafile=server.cert_file)
        async with httpx.AsyncClient(verify=context, timeout=10.0) as http:
            yield Mounted(f"https://{host}:{port}", http, auth, authorizer)
    finally:
        await server.stop()


def _cookie(session: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE_NAME}={session}"}


async def test_debug_state_accepts_the_session_cookie_of_an_allowed_user(
    mounted: Mounted,
) -> None:
    session = mounted.auth.sessions.create(Viewer("alice", "u-alice", ("devs",)))
    answer = await mounted.http.get(f"{mounted.url}/debug/pycm/state", headers=_cookie(session))
    assert answer.status_code == 200
    [attrs] = mounted.authorizer.calls
    assert (attrs.user.name, attrs.verb, attrs.path) == ("alice", "get", "/debug/pycm/state")
    assert "system:authenticated" in attrs.user.groups


async def test_debug_state_with_cookie_of_user_without_access_is_403(mounted: Mounted) -> None:
    session = mounted.auth.sessions.create(Viewer("mallory"))
    answer = await mounted.http.get(f"{mounted.url}/debug/pycm/state", headers=_cookie(session))
    assert answer.status_code == 403
    assert 'User \\"mallory\\" cannot get path' in answer.text


async def test_debug_state_with_unknown_cookie_is_anonymous(mounted: Mounted) -> None:
    answer = await mounted.http.get(f"{mounted.url}/debug/pycm/state", headers=_cookie("stale"))
    assert answer.status_code == 403
    assert "system:anonymous" in answer.text


@pytest.mark.parametrize("path", ["/dashboard/api/state", "/dashboard/api/stream"])
async def test_dashboard_api_without_credentials_is_401(mounted: Mounted, path: str) -> None:
    answer = await mounted.http.get(mounted.url + path)
    assert answer.status_code == 401


@pytest.mark.parametrize(
    ("token", "status"),
    [
        pytest.param("alice", 200, id="allowed"),
        pytest.param("mallory", 403, id="denied"),
        pytest.param("root", 200, id="system-masters"),
        pytest.param("wrong", 401, id="invalid"),
    ],
)
async def test_dashboard_api_with_bearer_token_is_authorized_as_the_event_stream(
    mounted: Mounted, token: str, status: int
) -> None:
    answer = await mounted.http.get(
        f"{mounted.url}/dashboard/api/state", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == status
    for attrs in mounted.authorizer.calls:
        assert (attrs.verb, attrs.path) == ("get", "/debug/pycm/events")


async def test_dashboard_login_checks_token_review_and_access_review(mounted: Mounted) -> None:
    origin = {"Origin": mounted.url, "Content-Type": "application/x-www-form-urlencoded"}
    denied = await mounted.http.post(
        f"{mounted.url}/dashboard/login", content="token=mallory", headers=origin
    )
    bad = await mounted.http.post(
        f"{mounted.url}/dashboard/login", content="token=wrong", headers=origin
    )
    good = await mounted.http.post(
        f"{mounted.url}/dashboard/login", content="token=alice", headers=origin
    )
    assert (denied.status_code, bad.status_code, good.status_code) == (403, 401, 303)
    session = good.cookies[COOKIE_NAME]
    mounted.http.cookies.clear()
    api = await mounted.http.get(f"{mounted.url}/dashboard/api/state", headers=_cookie(session))
    assert api.status_code == 200
    assert api.headers["content-security-policy"].startswith("default-src 'none'")


async def test_dashboard_api_with_session_of_denied_user_is_403(mounted: Mounted) -> None:
    session = mounted.auth.sessions.create(Viewer("mallory"))
    answer = await mounted.http.get(f"{mounted.url}/dashboard/api/stream", headers=_cookie(session))
    assert answer.status_code == 403
