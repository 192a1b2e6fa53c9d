"""The dashboard's door: login by token and by one-time code, the session check in front of
the api, logout, the Origin check and the security headers on every answer."""

from __future__ import annotations

import pytest

from tests.web.conftest import ORIGIN, Dashboard
from web.app import COOKIE_NAME
from web.sessions import Viewer

pytestmark = pytest.mark.asyncio

FORM = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN}


async def _login(dashboard: Dashboard, token: str = "good") -> str:
    answer = await dashboard.client.post("/dashboard/login", content=f"token={token}", headers=FORM)
    assert answer.status_code == 303, answer.text
    dashboard.client.cookies.clear()  # each test sends the cookie it means to
    return answer.cookies[COOKIE_NAME]


def _cookie(session: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE_NAME}={session}"}


@pytest.mark.parametrize("path", ["/dashboard/api/state", "/dashboard/api/stream"])
async def test_api_without_cookie_or_token_is_401(dashboard: Dashboard, path: str) -> None:
    answer = await dashboard.client.get(path)
    assert answer.status_code == 401


@pytest.mark.parametrize("path", ["/dashboard/api/state", "/dashboard/api/stream"])
async def test_api_with_session_of_user_without_access_is_403(
    dashboard: Dashboard, path: str
) -> None:
    session = dashboard.auth.sessions.create(Viewer("mallory"))
    answer = await dashboard.client.get(path, headers=_cookie(session))
    assert answer.status_code == 403
    assert 'User "mallory" cannot get path "/debug/pycm/events"' in answer.text


async def test_api_after_access_revoked_is_403(dashboard: Dashboard) -> None:
    session = await _login(dashboard)
    ok = await dashboard.client.get("/dashboard/api/state", headers=_cookie(session))
    assert ok.status_code == 200
    dashboard.door.allowed.discard("alice")
    answer = await dashboard.client.get("/dashboard/api/state", headers=_cookie(session))
    assert answer.status_code == 403


@pytest.mark.parametrize("path", ["/dashboard/api/state", "/dashboard/api/stream"])
async def test_api_with_session_cookie_answers(dashboard: Dashboard, path: str) -> None:
    session = await _login(dashboard)
    answer = await dashboard.client.get(path, headers=_cookie(session))
    assert answer.status_code == 200
    if path.endswith("stream"):
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.text.startswith("event: hello\n")
    else:
        assert answer.json()["v"] == 1


async def test_api_with_bearer_token_answers_and_bad_token_is_401(dashboard: Dashboard) -> None:
    good = await dashboard.client.get(
        "/dashboard/api/state", headers={"Authorization": "Bearer good"}
    )
    bad = await dashboard.client.get(
        "/dashboard/api/state", headers={"Authorization": "Bearer wrong"}
    )
    denied = await dashboard.client.get(
        "/dashboard/api/state", headers={"Authorization": "Bearer nope"}
    )
    assert (good.status_code, bad.status_code, denied.status_code) == (200, 401, 403)


async def test_api_with_unknown_or_expired_session_is_401(dashboard: Dashboard) -> None:
    session = await _login(dashboard)
    unknown = await dashboard.client.get("/dashboard/api/state", headers=_cookie("x"))
    dashboard.clock.advance(dashboard.auth.sessions.ttl + 1)
    expired = await dashboard.client.get("/dashboard/api/state", headers=_cookie(session))
    assert (unknown.status_code, expired.status_code) == (401, 401)


async def test_login_sets_a_strict_session_cookie_that_holds_no_token(
    dashboard: Dashboard,
) -> None:
    answer = await dashboard.client.post("/dashboard/login", content="token=good", headers=FORM)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/"
    cookie = answer.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "secure", "max-age", "path"} <= attributes
    assert "samesite=strict" in cookie.lower()
    assert "path=/dashboard" in cookie.lower()
    assert "good" not in cookie.split(";")[0]
    assert dashboard.auth.sessions.lookup(answer.cookies[COOKIE_NAME]) == Viewer("alice")


async def test_login_with_bad_token_shows_the_form_again_with_401(dashboard: Dashboard) -> None:
    answer = await dashboard.client.post("/dashboard/login", content="token=wrong", headers=FORM)
    assert answer.status_code == 401
    assert '<form method="post" action="login"' in answer.text
    assert "invalid token" in answer.text
    assert "set-cookie" not in answer.headers


async def test_login_of_user_without_access_is_403_without_cookie(dashboard: Dashboard) -> None:
    answer = await dashboard.client.post("/dashboard/login", content="token=nope", headers=FORM)
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


async def test_login_error_text_is_escaped(dashboard: Dashboard) -> None:
    dashboard.door.tokens["x"] = Viewer("<script>alert(1)</script>")
    answer = await dashboard.client.post("/dashboard/login", content="token=x", headers=FORM)
    assert answer.status_code == 403
    assert "<script>alert" not in answer.text
    assert "&lt;script&gt;" in answer.text


async def test_login_code_works_once(dashboard: Dashboard) -> None:
    code = dashboard.auth.new_login_code()
    first = await dashboard.client.get(f"/dashboard/login?code={code}")
    dashboard.client.cookies.clear()
    second = await dashboard.client.get(f"/dashboard/login?code={code}")
    assert first.status_code == 303
    assert first.headers["location"] == "/dashboard/", "the code leaves the address bar"
    session = first.cookies[COOKIE_NAME]
    dashboard.client.cookies.clear()
    page = await dashboard.client.get("/dashboard/", headers=_cookie(session))
    assert page.status_code == 200 and 'src="static/js/main.js"' in page.text
    assert second.status_code == 401
    assert "already used or has expired" in second.text
    assert "set-cookie" not in second.headers


async def test_login_code_expires(dashboard: Dashboard) -> None:
    code = dashboard.auth.new_login_code()
    dashboard.clock.advance(3601)
    answer = await dashboard.client.get(f"/dashboard/login?code={code}")
    assert answer.status_code == 401


async def test_page_without_session_redirects_to_login(dashboard: Dashboard) -> None:
    answer = await dashboard.client.get("/dashboard/")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/login"


async def test_bare_prefix_redirects_to_its_slash(dashboard: Dashboard) -> None:
    answer = await dashboard.client.get("/dashboard")
    assert answer.status_code in (307, 308)
    assert answer.headers["location"].endswith("/dashboard/")


async def test_logout_ends_the_session_and_clears_the_cookie(dashboard: Dashboard) -> None:
    session = await _login(dashboard)
    answer = await dashboard.client.post(
        "/dashboard/logout", headers={"Origin": ORIGIN, **_cookie(session)}
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/login"
    assert 'pycm_session=""' in answer.headers["set-cookie"]
    assert "max-age=0" in answer.headers["set-cookie"].lower()
    after = await dashboard.client.get("/dashboard/api/state", headers=_cookie(session))
    assert after.status_code == 401


@pytest.mark.parametrize(
    "origin", [pytest.param("https://evil.test", id="other"), pytest.param("null", id="null")]
)
async def test_post_from_another_origin_is_403(dashboard: Dashboard, origin: str) -> None:
    session = await _login(dashboard)
    login = await dashboard.client.post(
        "/dashboard/login", content="token=good", headers={**FORM, "Origin": origin}
    )
    logout = await dashboard.client.post(
        "/dashboard/logout", headers={"Origin": origin, **_cookie(session)}
    )
    assert (login.status_code, logout.status_code) == (403, 403)
    assert dashboard.door.token_checks == 1, "the refused login reviewed no token"
    assert dashboard.auth.sessions.lookup(session) is not None, "the session survived"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"Origin": "null", "Sec-Fetch-Site": "same-origin"}, 303, id="null-same"),
        pytest.param({"Origin": "null", "Sec-Fetch-Site": "cross-site"}, 403, id="null-cross"),
        pytest.param({"Origin": ORIGIN, "Sec-Fetch-Site": "same-site"}, 403, id="same-site"),
        pytest.param({"Sec-Fetch-Site": "same-origin"}, 303, id="fetch-site-only"),
    ],
)
async def test_login_post_origin_rules_under_no_referrer(
    dashboard: Dashboard, headers: dict[str, str], status: int
) -> None:
    """No-referrer pages post their forms with ``Origin: null``: Sec-Fetch-Site decides."""
    answer = await dashboard.client.post(
        "/dashboard/login",
        content="token=good",
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
    )
    assert answer.status_code == status


async def test_post_with_cookie_and_no_origin_is_403(dashboard: Dashboard) -> None:
    session = await _login(dashboard)
    answer = await dashboard.client.post("/dashboard/logout", headers=_cookie(session))
    assert answer.status_code == 403


async def test_post_without_origin_or_cookie_is_let_through(dashboard: Dashboard) -> None:
    answer = await dashboard.client.post(
        "/dashboard/login",
        content="token=good",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 303


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/login",
        "/dashboard/",
        "/dashboard/api/state",
        "/dashboard/static/dashboard.css",
        "/dashboard/static/missing.js",
    ],
)
async def test_every_answer_carries_the_security_headers(dashboard: Dashboard, path: str) -> None:
    answer = await dashboard.client.get(path)
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert "style-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"


async def test_static_module_is_served_as_javascript(dashboard: Dashboard) -> None:
    answer = await dashboard.client.get("/dashboard/static/js/main.js")
    assert answer.status_code == 200
    assert "javascript" in answer.headers["content-type"]
