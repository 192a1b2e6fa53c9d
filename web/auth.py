"""Who may see the dashboard: the door's decisions, with the checks injected by the caller.

``web`` cannot import the manager's server, so the caller lends it two callables:

- ``check_token(token) -> Viewer | None`` — who a bearer token belongs to (None: not a valid
  token; raise :class:`CheckFailed` when no answer can be had). For the dashboard mounted in
  ``pycm run`` it is the manager's TokenReview; for ``pycm dashboard`` the caller decides.
- ``request_viewer(scope) -> Viewer | None`` (optional) — who the server the dashboard is
  mounted on already authenticated the request as (it consumed the bearer header);
- ``authorize(viewer) -> Access`` — may this viewer see the stream: for the mounted dashboard
  a SubjectAccessReview ``get`` on ``/debug/pycm/events`` (the same rule as the manager's own
  stream), asked on every api request (the manager's reviews are cached), so access revoked
  after login ends at once. Without it, every viewer the token check accepts may look.

A login (a token in the form, or a one-time code) becomes a session (see
:mod:`web.sessions`); the session, not the token, is what the cookie carries.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from starlette.types import Scope

from pycm.util.clock import REAL_CLOCK, Clock
from web.sessions import DEFAULT_SESSION_TTL, LoginCodes, SessionStore, Viewer

__all__ = [
    "AUTHORIZED_PATH",
    "CODE_VIEWER",
    "STILL_ALLOWED_KEY",
    "Access",
    "CheckFailed",
    "DashboardAuth",
    "ManagerDoor",
    "Verdict",
    "manager_auth",
]

AUTHORIZED_PATH = "/debug/pycm/events"  # the dashboard shows what this stream shows
# scope["state"] entry the session check leaves for the api routes: ``async () -> bool``, whether
# the request's viewer may still look (False once the session ended or access was revoked) —
# so a stream opened while allowed does not outlive the permission.
STILL_ALLOWED_KEY = "pycm.dashboard.still_allowed"
# Whom a printed login code stands for, unless the caller names someone else.
CODE_VIEWER = Viewer("pycm:login-code")


class CheckFailed(Exception):
    """A token or access check could not be answered (the review API is down)."""


@dataclass(frozen=True, slots=True)
class Access:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of a check, with the HTTP status the door answers when it is not ok."""

    viewer: Viewer | None
    status: int  # 200 ok, 401 not authenticated, 403 not allowed, 503 no answer
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200


TokenCheck = Callable[[str], Awaitable[Viewer | None]]
AccessCheck = Callable[[Viewer], Awaitable[Access]]


async def _allow_all(viewer: Viewer) -> Access:
    return Access(True)


class DashboardAuth:
    """Checks tokens at login, holds sessions and one-time login codes."""

    def __init__(
        self,
        check_token: TokenCheck,
        *,
        authorize: AccessCheck | None = None,
        request_viewer: Callable[[Scope], Viewer | None] | None = None,
        code_viewer: Viewer = CODE_VIEWER,
        session_ttl: float = DEFAULT_SESSION_TTL,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._check_token = check_token
        self._authorize = authorize or _allow_all
        self._request_viewer = request_viewer
        self._code_viewer = code_viewer
        self.sessions = SessionStore(ttl=session_ttl, clock=clock)
        self.codes = LoginCodes(clock=clock)

    def new_login_code(self) -> str:
        """A code for the printed login URL: one exchange for a session as ``code_viewer``."""
        return self.codes.new(self._code_viewer)

    async def check_token(self, token: str) -> Verdict:
        """A login or a bearer request: authenticate the token, then authorize its viewer."""
        try:
            viewer = await self._check_token(token)
        except CheckFailed as exc:
            return Verdict(None, 503, f"the token could not be checked: {exc}")
        if viewer is None:
            return Verdict(None, 401, "invalid token")
        return await self.check_viewer(viewer)

    async def check_viewer(self, viewer: Viewer) -> Verdict:
        try:
            access = await self._authorize(viewer)
        except CheckFailed as exc:
            return Verdict(viewer, 503, f"access could not be checked: {exc}")
        if not access.allowed:
            message = f'User "{viewer.name}" cannot get path "{AUTHORIZED_PATH}"'
            if access.reason:
                message += f": {access.reason}"
            return Verdict(viewer, 403, message)
        return Verdict(viewer, 200)

    def request_viewer(self, scope: Scope) -> Viewer | None:
        """Who the server this dashboard is mounted on already authenticated the request as
        (a client certificate, a bearer token it reviewed), if it says."""
        return None if self._request_viewer is None else self._request_viewer(scope)

    async def check_session(self, session_id: str) -> Verdict:
        viewer = self.sessions.lookup(session_id)
        if viewer is None:
            return Verdict(None, 401, "no session: log in again")
        return await self.check_viewer(viewer)

    async def redeem_code(self, code: str) -> Verdict:
        viewer = self.codes.redeem(code)
        if viewer is None:
            return Verdict(None, 401, "this login link was already used or has expired")
        return await self.check_viewer(viewer)


class _Reviewed(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def groups(self) -> tuple[str, ...]: ...


class _Decided(Protocol):
    @property
    def allowed(self) -> bool: ...
    @property
    def reason(self) -> str: ...


class ManagerDoor(Protocol):
    """The manager's reviews lent to a mounted dashboard (pycm.server.DashboardDoor)."""

    def request_user(self, scope: Scope) -> _Reviewed | None: ...

    async def review(self, token: str) -> _Reviewed | None: ...

    async def may_view(self, name: str, uid: str, groups: tuple[str, ...]) -> _Decided: ...


def manager_auth(
    door: ManagerDoor,
    *,
    code_viewer: Viewer = CODE_VIEWER,
    session_ttl: float = DEFAULT_SESSION_TTL,
    clock: Clock = REAL_CLOCK,
) -> DashboardAuth:
    """The dashboard's auth for ``pycm run``: tokens by the manager's TokenReview, access by its
    SubjectAccessReview of ``get /debug/pycm/events``; a review that cannot be had is a
    :class:`CheckFailed` (503 at the door), whatever the server's exception was."""

    async def check_token(token: str) -> Viewer | None:
        try:
            user = await door.review(token)
        except Exception as exc:  # the door's review errors: no answer, not a denial
            raise CheckFailed(str(exc)) from exc
        return None if user is None else Viewer(user.name, user.uid, tuple(user.groups))

    async def authorize(viewer: Viewer) -> Access:
        try:
            decision = await door.may_view(viewer.name, viewer.uid, viewer.groups)
        except Exception as exc:
            raise CheckFailed(str(exc)) from exc
        return Access(decision.allowed, decision.reason)

    def request_viewer(scope: Scope) -> Viewer | None:
        user = door.request_user(scope)
        return None if user is None else Viewer(user.name, user.uid, tuple(user.groups))

    return DashboardAuth(
        check_token,
        authorize=authorize,
        request_viewer=request_viewer,
        code_viewer=code_viewer,
        session_ttl=session_ttl,
        clock=clock,
    )
