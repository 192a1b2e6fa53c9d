"""What the manager's secure server lends a dashboard mounted on it.

``web/`` may not import the server, so the composition root hands the dashboard this door:
the server's own TokenReview (who a login token belongs to) and its SubjectAccessReview for
the event stream (``get`` on ``/debug/pycm/events``, with the always-allowed groups honoured as
the chain honours them) — so the dashboard lets in exactly who may read the stream. The
dashboard's paths are then always allowed by the chain (:data:`DASHBOARD_PATHS`): the
dashboard is its own door, answering 401 without a session or token and 403 to a user the
review denies, which the chain (anonymous → 403) cannot tell apart.

The other direction: :class:`DelegatingAuthenticator` takes ``session_users`` (a dashboard
session id → its user), so ``/debug/pycm/*`` also accept the dashboard's session cookie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import Scope

from pycm.server.authentication import get_user
from pycm.server.chain import DEFAULT_ALWAYS_ALLOW_GROUPS
from pycm.server.subjectaccessreview import Authorizer, Decision, RequestAttributes
from pycm.server.tokenreview import TokenReviewer
from pycm.server.user import UserInfo, with_authenticated_group

__all__ = [
    "DASHBOARD_PATHS",
    "DASHBOARD_PREFIX",
    "EVENTS_PATH",
    "DashboardDoor",
    "DashboardMounter",
]

DASHBOARD_PREFIX = "/dashboard"
DASHBOARD_PATHS = (DASHBOARD_PREFIX, DASHBOARD_PREFIX + "/*")
EVENTS_PATH = "/debug/pycm/events"

DashboardMounter = Callable[..., Any]
"""``mounter(bus=, identity=, snapshot=, door=)`` builds
the web dashboard the manager mounts at ``/dashboard`` on its secure port, behind ``door`` (a
:class:`DashboardDoor`): an object with ``app`` (ASGI), ``async run()``, ``close()`` and
``session_user(session_id)`` (:func:`web.mount.live_dashboard`). ``pycm.cli`` hands it down to
the manager (pycm must not import web); without one, ``pycm run`` serves no dashboard."""


class DashboardDoor:
    def __init__(
        self,
        token_reviewer: TokenReviewer,
        authorizer: Authorizer,
        *,
        always_allow_groups: Iterable[str] = DEFAULT_ALWAYS_ALLOW_GROUPS,
    ) -> None:
        self._reviewer = token_reviewer
        self._authorizer = authorizer
        self._always_allow_groups = frozenset(always_allow_groups)

    async def review(self, token: str) -> UserInfo | None:
        """The token's user (with ``system:authenticated``), None for an invalid token; raises
        :class:`~pycm.server.tokenreview.TokenReviewError` when no review could be had."""
        user = await self._reviewer.review(token)
        return None if user is None else with_authenticated_group(user)

    def request_user(self, scope: Scope) -> UserInfo | None:
        """The user the chain authenticated this request as (client certificate, bearer token
        — the chain removed the header — or session cookie); None when anonymous."""
        user = get_user(scope)
        return None if user.is_anonymous else user

    async def may_view(self, name: str, uid: str, groups: tuple[str, ...]) -> Decision:
        """May this user get ``/debug/pycm/events``; raises
        :class:`~pycm.server.subjectaccessreview.AuthorizationError` without an answer."""
        if self._always_allow_groups.intersection(groups):
            return Decision(True, "always allowed group")
        user = UserInfo(name=name, uid=uid, groups=tuple(groups))
        return await self._authorizer.authorize(
            RequestAttributes(user=user, verb="get", path=EVENTS_PATH)
        )
