"""Authorization (apiserver ``WithAuthorization`` with KCM's union authorizer).

In order, the first "allow" wins:

1. ``--authorization-always-allow-paths`` (KCM: /healthz, /readyz, /livez): an exact path, or a
   prefix when the entry ends in ``*`` (kube's path authorizer) — allowed for anyone, the
   anonymous user included;
2. ``--authorization-always-allow-groups`` (KCM: system:masters);
3. the :class:`Authorizer` (a SubjectAccessReview) with the request's attributes — for this
   server's non-resource URLs: user, groups, verb (lower-cased method) and path.

Denied → **403 Forbidden**, whoever asked. The anonymous user is no exception: it is a user
like any other once authentication let it through, so kube answers it
``forbidden: User "system:anonymous" cannot get path "/metrics".`` (a 401 comes only from the
authentication layer, for invalid credentials). An authorizer that fails → 500, as in kube
(the error is logged, not sent).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from pycm.server.authentication import get_user
from pycm.server.request_info import get_request_info
from pycm.server.responses import send_status, send_text
from pycm.server.subjectaccessreview import (
    AuthorizationError,
    Authorizer,
    Decision,
    RequestAttributes,
)
from pycm.util.escape import escape_control

__all__ = ["AuthorizationMiddleware", "PathMatcher", "forbidden_message"]

_log = logging.getLogger("pycm.server.authorization")


class PathMatcher:
    """kube's always-allow path rule: exact paths, and prefixes written ``/prefix/*``."""

    def __init__(self, paths: Iterable[str]) -> None:
        exact: set[str] = set()
        prefixes: list[str] = []
        for path in paths:
            if path.endswith("*"):
                prefixes.append(path[:-1])
            elif path:
                exact.add(path)
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)

    def __call__(self, path: str) -> bool:
        return path in self._exact or any(path.startswith(p) for p in self._prefixes)


def forbidden_message(attrs: RequestAttributes, reason: str) -> str:
    """kube's message (``responsewriters.forbiddenMessage`` inside ``NewForbidden``)."""
    if attrs.resource_request:
        resource = attrs.resource
        if attrs.api_group:
            resource += "." + attrs.api_group
        if attrs.subresource:
            resource += "/" + attrs.subresource
        where = (
            f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        )
        msg = f'User "{attrs.user.name}" cannot {attrs.verb} {resource} {where}.'
    else:
        msg = f'User "{attrs.user.name}" cannot {attrs.verb} path "{attrs.path}".'
    msg = msg.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if reason:
        msg += ": " + reason
    return "forbidden: " + msg


class AuthorizationMiddleware:
    NAME = "authorization"

    def __init__(
        self,
        app: ASGIApp,
        *,
        authorizer: Authorizer,
        always_allow_paths: Iterable[str] = (),
        always_allow_groups: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.authorizer = authorizer
        self._always_allow_path = PathMatcher(always_allow_paths)
        self._always_allow_groups = frozenset(always_allow_groups)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        info = get_request_info(scope)
        user = get_user(scope)
        attrs = RequestAttributes(
            user=user,
            verb=info.verb,
            path=info.path,
            resource_request=info.is_resource_request,
            api_group=info.api_group,
            api_version=info.api_version,
            resource=info.resource,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
        )
        if not info.is_resource_request and self._always_allow_path(info.path):
            decision = Decision(True, "always allowed path")
        elif self._always_allow_groups.intersection(user.groups):
            decision = Decision(True, "always allowed group")
        else:
            try:
                decision = await self.authorizer.authorize(attrs)
            except AuthorizationError as exc:
                _log.error(
                    "authorization of %s %s failed: %s",
                    escape_control(user.name),
                    escape_control(info.path),
                    escape_control(str(exc)),
                )
                await send_text(send, 500, "Internal Server Error")
                return
        if decision.allowed:
            await self.app(scope, receive, send)
            return
        # The path and the user name are the client's text: escaped before they are logged.
        path, name = escape_control(info.path), escape_control(user.name)
        _log.info(
            "forbidden: %s %s %s: %s",
            name,
            escape_control(info.verb),
            path,
            escape_control(decision.reason),
            extra={"http_path": path, "user": name},
        )
        await send_status(send, 403, "Forbidden", forbidden_message(attrs, decision.reason))
