"""Same-origin check for every state-changing request (pure ASGI).

The session cookie is SameSite=Strict already; this is the second lock (OWASP's "verify the
origin with standard headers"), using what browsers send and page scripts cannot forge:

- ``Sec-Fetch-Site``, when sent, must be ``same-origin``;
- ``Origin``, when it names an origin, must be this one. Because every answer carries
  ``Referrer-Policy: no-referrer``, a browser posts this page's own forms with ``Origin: null``
  — so ``null`` passes only with ``Sec-Fetch-Site: same-origin`` beside it;
- without either header (not a browser: curl with a bearer token) the request passes only if
  it carries no session cookie, since only a cookie is sent on another site's behalf.

Anything else is refused with 403 before a handler runs.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["SAFE_METHODS", "OriginCheckMiddleware", "refusal", "request_origin"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def request_origin(scope: Scope) -> str:
    """This request's own origin, ``scheme://host[:port]`` as the browser spells it."""
    host = Headers(scope=scope).get("host", "")
    return f"{scope.get('scheme', 'http')}://{host}".lower()


def refusal(scope: Scope, cookie_name: str) -> str | None:
    """Why this unsafe request is refused, or None when it may go on."""
    headers = Headers(scope=scope)
    site = headers.get("sec-fetch-site")
    origin = headers.get("origin")
    if site is not None and site != "same-origin":
        return f"cross-site request refused ({site})"
    if origin is not None and origin != "null":
        return None if origin.lower() == request_origin(scope) else "cross-origin request refused"
    if site == "same-origin":
        return None
    if origin == "null":
        return "a request from an opaque origin is refused"
    if cookie_name + "=" in headers.get("cookie", ""):
        return "a request with the session cookie must name its origin"
    return None


class OriginCheckMiddleware:
    def __init__(self, app: ASGIApp, *, cookie_name: str) -> None:
        self.app = app
        self.cookie_name = cookie_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        reason = refusal(scope, self.cookie_name)
        if reason is None:
            await self.app(scope, receive, send)
            return
        await PlainTextResponse(reason, status_code=403)(scope, receive, send)
