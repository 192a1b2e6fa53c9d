"""The dashboard's composition: the door (login, logout, sessions), the page, B's api routes
behind the session check, and the security headers — one ASGI app to mount at ``/dashboard``.

Routes, relative to the mount (``root_path``)::

    GET  /                 the page (index.html); without a session → 303 to login
    GET  /login            the login form
    GET  /login?code=…     a one-time code → session cookie, 303 to / (the code leaves the bar)
    POST /login            form field ``token`` → session cookie (401/403 form on failure)
    POST /logout           ends the session, clears the cookie, 303 to login
    GET  /static/…         plain files: CSS, ES modules, vendored uPlot
    /api/…                 ``api_routes`` (web/live.py), after the session check:
                           cookie or ``Authorization: Bearer`` → 401 without, 403 not allowed

Middleware, outermost first: security headers (every answer, errors included) → HTTP errors
as answers → same-origin check on every POST → the routes.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from string import Template
from urllib.parse import parse_qs

from starlette._utils import get_route_path
from starlette.datastructures import Headers
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from web.auth import STILL_ALLOWED_KEY, DashboardAuth, Verdict
from web.headers import SecurityHeadersMiddleware
from web.origin import OriginCheckMiddleware

__all__ = ["COOKIE_NAME", "VIEWER_STATE_KEY", "build_dashboard"]

COOKIE_NAME = "pycm_session"
VIEWER_STATE_KEY = "pycm.dashboard.viewer"  # scope["state"] entry the api routes may read
_HERE = Path(__file__).parent
_MAX_FORM_BYTES = 16 * 1024  # a token is ~1 KiB; anything far larger is not a login


def _page(name: str) -> Template:
    return Template((_HERE / "pages" / name).read_text(encoding="utf-8"))


def _root(scope: Scope) -> str:
    return str(scope.get("root_path", "")).rstrip("/")


def _bearer(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class _ApiGuard:
    """The session check in front of the api routes: who (the session cookie, else the user
    the outer server authenticated, else a bearer token), then may they (the injected
    authorization). No credentials → 401. The same check, again, is left in the scope for a
    long answer (the stream) to ask while it lasts."""

    def __init__(self, app: ASGIApp, auth: DashboardAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        session_id = request.cookies.get(COOKIE_NAME)
        token = _bearer(request.headers)
        known = self.auth.request_viewer(scope)

        async def check() -> Verdict:
            verdict = Verdict(None, 401, "log in first")
            if session_id:
                verdict = await self.auth.check_session(session_id)
            if verdict.status == 401 and known is not None:
                verdict = await self.auth.check_viewer(known)
            elif verdict.status == 401 and token:
                verdict = await self.auth.check_token(token)
            return verdict

        async def still_allowed() -> bool:
            # Denied now (logged out, expired, revoked); a check with no answer (503) is not
            # a denial.
            return (await check()).status not in (401, 403)

        verdict = await check()
        if not verdict.ok:
            await PlainTextResponse(verdict.message, status_code=verdict.status)(
                scope, receive, send
            )
            return
        state = scope.setdefault("state", {})
        state[VIEWER_STATE_KEY] = verdict.viewer
        state[STILL_ALLOWED_KEY] = still_allowed
        await self.app(scope, receive, send)


class _Door:
    """The page and the login/logout handlers."""

    def __init__(self, auth: DashboardAuth, jaeger_url: str | None) -> None:
        self.auth = auth
        self.jaeger_url = jaeger_url or ""
        self._index = _page("index.html")
        self._login = _page("login.html")

    def login_form(self, message: str = "", status: int = 200) -> HTMLResponse:
        error = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
        body = self._login.substitute(error=error)
        return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    def _signed_in(self, request: Request, verdict: Verdict) -> Response:
        assert verdict.viewer is not None
        response = RedirectResponse(_root(request.scope) + "/", status_code=303)
        response.set_cookie(
            COOKIE_NAME,
            self.auth.sessions.create(verdict.viewer),
            max_age=int(self.auth.sessions.ttl),
            path=_root(request.scope) or "/",
            secure=True,
            httponly=True,
            samesite="strict",
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    async def index(self, request: Request) -> Response:
        session_id = request.cookies.get(COOKIE_NAME, "")
        verdict = await self.auth.check_session(session_id)
        if verdict.status == 401:
            return RedirectResponse(_root(request.scope) + "/login", status_code=303)
        if not verdict.ok:
            return self.login_form(verdict.message, verdict.status)
        body = self._index.substitute(jaeger_url=html.escape(self.jaeger_url, quote=True))
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    async def login_page(self, request: Request) -> Response:
        code = request.query_params.get("code")
        if code is None:
            return self.login_form()
        verdict = await self.auth.redeem_code(code)
        if not verdict.ok:
            return self.login_form(verdict.message, verdict.status)
        return self._signed_in(request, verdict)

    async def login(self, request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_FORM_BYTES:
                return self.login_form("the form is too large", 413)
        if request.headers.get("content-type", "").split(";")[0].strip() != (
            "application/x-www-form-urlencoded"
        ):
            return self.login_form("send the login form", 400)
        fields = parse_qs(body.decode("utf-8", "replace"))
        token = (fields.get("token") or [""])[0].strip()
        if not token:
            return self.login_form("paste a bearer token", 401)
        verdict = await self.auth.check_token(token)
        if not verdict.ok:
            return self.login_form(verdict.message, verdict.status)
        return self._signed_in(request, verdict)

    async def logout(self, request: Request) -> Response:
        session_id = request.cookies.get(COOKIE_NAME)
        if session_id:
            self.auth.sessions.end(session_id)
        response = RedirectResponse(_root(request.scope) + "/login", status_code=303)
        response.delete_cookie(
            COOKIE_NAME,
            path=_root(request.scope) or "/",
            secure=True,
            httponly=True,
            samesite="strict",
        )
        return response


class _Dashboard:
    """Dispatch: ``/api/…`` through the guard to B's routes, everything else to the door;
    the bare mount point redirects to its slash so the page's relative URLs resolve."""

    def __init__(self, api: ASGIApp, door: ASGIApp) -> None:
        self.api = api
        self.door = door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = get_route_path(scope)
            if path == "":
                await RedirectResponse(_root(scope) + "/", status_code=307)(scope, receive, send)
                return
            if path.startswith("/api/"):
                await self.api(scope, receive, send)
                return
        await self.door(scope, receive, send)


def build_dashboard(
    api_routes: Sequence[BaseRoute],
    auth: DashboardAuth,
    *,
    jaeger_url: str | None = None,
) -> ASGIApp:
    """The dashboard app, to be mounted at ``/dashboard``; ``api_routes`` are relative to it
    (``/api/state``, ``/api/stream``, ``/api/replay``) and carry no authentication."""
    door = _Door(auth, jaeger_url)
    door_router = Router(
        routes=[
            Route("/", door.index, methods=["GET"]),
            Route("/login", door.login_page, methods=["GET"]),
            Route("/login", door.login, methods=["POST"]),
            Route("/logout", door.logout, methods=["POST"]),
            Mount("/static", app=StaticFiles(directory=_HERE / "static")),
        ]
    )
    api = _ApiGuard(Router(routes=list(api_routes)), auth)
    app: ASGIApp = _Dashboard(api, door_router)
    app = OriginCheckMiddleware(app, cookie_name=COOKIE_NAME)
    # HTTP errors (a missing static file, a wrong method) become answers here, inside the
    # headers middleware, so they carry the headers too.
    app = ExceptionMiddleware(app)
    return SecurityHeadersMiddleware(app)
