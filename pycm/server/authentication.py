"""Authentication (apiserver ``WithAuthentication`` with KCM's delegating authenticator).

Who is asking, tried in kube's order — the first that succeeds wins:

1. a TLS client certificate, verified during the handshake against ``--client-ca-file``:
   user = the subject's CN, groups = its O values. The certificate is read from the ASGI TLS
   extension (``scope["extensions"]["tls"]["client_cert_chain"][0]``, a PEM string), which
   pycm's uvicorn protocol fills in (see :mod:`pycm.server.tls_extension`).
2. ``Authorization: Bearer <token>``, reviewed by a :class:`TokenReviewer` (a TokenReview,
   cached; the client's address goes with it, for the reviews' rate limit).
3. the dashboard's session cookie (``pycm_session``), when a ``session_users`` lookup is given
   (a mounted dashboard): the session's user. A session the lookup does not know (expired,
   logged out, from before a restart) is no credential — the request is anonymous — since a
   browser sends a stale cookie without meaning to present anything.

A request with neither is the anonymous user (``system:anonymous``) and goes on to
authorization. A request whose credentials were presented but are invalid (a token the
reviewer rejects, a review that failed, a certificate without client-auth usage) is answered
401 Unauthorized at once — kube's ``union.NewFailOnError(delegating, anonymous)``. Authenticated
users also get ``system:authenticated``; the Authorization header is removed before the request
goes further in, as kube does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from starlette.types import ASGIApp, Receive, Scope, Send

from pycm.server.responses import send_status
from pycm.server.tokenreview import TokenReviewer, TokenReviewError
from pycm.server.user import ANONYMOUS, UserInfo, with_authenticated_group
from pycm.util.escape import escape_control

__all__ = [
    "SESSION_COOKIE",
    "STATE_KEY",
    "AnonymousAuthenticator",
    "AuthenticationError",
    "AuthenticationMiddleware",
    "DelegatingAuthenticator",
    "RequestAuthenticator",
    "bearer_token",
    "cookie_value",
    "get_user",
    "user_from_certificate",
]

STATE_KEY = "pycm.user"
SESSION_COOKIE = "pycm_session"  # the dashboard's (web/app.py COOKIE_NAME)


class SessionUser(Protocol):
    """Who a dashboard session stands for (web's Viewer fits: web cannot import UserInfo)."""

    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def groups(self) -> tuple[str, ...]: ...


SessionUsers = Callable[[str], SessionUser | None]

_log = logging.getLogger("pycm.server.authentication")


class AuthenticationError(Exception):
    """Credentials were presented and are not valid: the request is unauthorized."""


class RequestAuthenticator(Protocol):
    """Who made a request: a user, None when it carried no credentials (anonymous), or
    :class:`AuthenticationError` when its credentials are invalid."""

    async def authenticate(self, scope: Scope) -> UserInfo | None: ...


class AnonymousAuthenticator:
    """Every request is anonymous (insecure serving)."""

    async def authenticate(self, scope: Scope) -> UserInfo | None:
        return None


class DelegatingAuthenticator:
    """Client certificates (when the server asked for them), then bearer tokens (when a
    reviewer is given) — KCM's delegating authenticator without the request-header proxy —
    then the dashboard's session cookie (when ``session_users`` is given)."""

    def __init__(
        self,
        token_reviewer: TokenReviewer | None = None,
        *,
        client_certificates: bool = True,
        session_users: SessionUsers | None = None,
    ) -> None:
        self._reviewer = token_reviewer
        self._client_certificates = client_certificates
        self._session_users = session_users

    async def authenticate(self, scope: Scope) -> UserInfo | None:
        errors: list[str] = []
        if self._client_certificates:
            pem = client_certificate(scope)
            if pem is not None:
                try:
                    user = user_from_certificate(pem)
                except AuthenticationError as exc:
                    errors.append(str(exc))
                else:
                    if user is not None:
                        return user
        token = bearer_token(scope)
        if token is not None and self._reviewer is not None:
            try:
                user = await self._reviewer.review(token, client=_client_address(scope))
            except TokenReviewError as exc:
                errors.append(str(exc))
            else:
                if user is not None:
                    return user
                errors.append("invalid bearer token")
        if errors:
            raise AuthenticationError("; ".join(errors))
        if self._session_users is not None:
            session_id = cookie_value(scope, SESSION_COOKIE)
            found = self._session_users(session_id) if session_id else None
            if found is not None:
                return UserInfo(name=found.name, uid=found.uid, groups=tuple(found.groups))
        return None


def _client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header, or None (kube's bearertoken rules)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            parts = value.decode("latin-1").strip().split(" ")
            if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
                return None
            return str(parts[1])
    return None


def cookie_value(scope: Scope, name: str) -> str | None:
    """The value of cookie ``name`` in the request's Cookie headers, or None."""
    for header, value in scope.get("headers", ()):
        if header.lower() != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            key, sep, found = pair.strip().partition("=")
            if sep and key == name:
                return str(found).strip().strip('"')
    return None


def client_certificate(scope: Scope) -> str | None:
    """The verified client certificate (PEM) from the ASGI TLS extension, if any."""
    extensions: dict[str, Any] = scope.get("extensions") or {}
    tls = extensions.get("tls") or {}
    chain = tls.get("client_cert_chain") or ()
    return str(chain[0]) if chain else None


def user_from_certificate(pem: str) -> UserInfo | None:
    """CN → user, O → groups (kube's CommonNameUserConversion); None without a CN. A cert whose
    extended key usage excludes client auth is an :class:`AuthenticationError`."""
    try:
        cert = x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise AuthenticationError("unreadable client certificate") from exc
    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        pass
    else:
        if ExtendedKeyUsageOID.CLIENT_AUTH not in usage and (
            ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usage
        ):
            raise AuthenticationError("client certificate is not for client authentication")
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or not str(names[0].value):
        return None
    groups = tuple(
        str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )
    return UserInfo(name=str(names[0].value), groups=groups)


def get_user(scope: Scope) -> UserInfo:
    """The user the middleware found (anonymous before, or without, authentication)."""
    user = (scope.get("state") or {}).get(STATE_KEY)
    return user if isinstance(user, UserInfo) else ANONYMOUS


class AuthenticationMiddleware:
    NAME = "authentication"

    def __init__(self, app: ASGIApp, *, authenticator: RequestAuthenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # Nothing here serves websockets (uvicorn runs with ws="none"); should one ever
            # arrive, it is refused rather than let past authentication.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            user = await self.authenticator.authenticate(scope)
        except AuthenticationError as exc:
            path = escape_control(str(scope.get("path", "")))  # the client's text
            _log.info(
                "unable to authenticate the request to %s: %s",
                path,
                escape_control(str(exc)),
                extra={"http_path": path},
            )
            await send_status(send, 401, "Unauthorized", "Unauthorized")
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        if user is None:
            state[STATE_KEY] = ANONYMOUS
        else:
            state[STATE_KEY] = with_authenticated_group(user)
            headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"authorization"]
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)
