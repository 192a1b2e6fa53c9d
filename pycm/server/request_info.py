"""Request info (apiserver ``WithRequestInfo`` / ``RequestInfoFactory``): what a request does,
worked out once from its method and path and kept in ``scope["state"]`` for the layers inside.

A path under ``/api`` or ``/apis`` is a resource request (verbs get, list, watch, create,
update, patch, delete, deletecollection); every other path is a non-resource URL whose verb is
the lower-cased method (get, post, put, patch, delete, head, options) — the verb a
SubjectAccessReview's ``nonResourceAttributes`` carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["STATE_KEY", "RequestInfo", "RequestInfoMiddleware", "get_request_info", "parse"]

STATE_KEY = "pycm.request_info"

_API_PREFIXES = frozenset({"api", "apis"})
_RESOURCE_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# Subresources of a namespace itself: /api/v1/namespaces/{name}/status is the namespace's.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    verb: str
    path: str
    is_resource_request: bool = False
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def parse(method: str, path: str, query_string: bytes = b"") -> RequestInfo:
    """The request info of one request (a pure function, for tests and the middleware)."""
    non_resource = RequestInfo(verb=method.lower(), path=path)
    parts = [p for p in path.strip("/").split("/") if p] if path else []
    if not parts or parts[0] not in _API_PREFIXES:
        return non_resource
    prefix, rest = parts[0], parts[1:]
    if prefix == "apis":
        if len(rest) < 2:
            return non_resource  # discovery of groups / one group
        group, version, rest = rest[0], rest[1], rest[2:]
    else:
        if len(rest) < 1:
            return non_resource
        group, version, rest = "", rest[0], rest[1:]
    verb = _RESOURCE_VERBS.get(method.upper(), method.lower())
    if rest and rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        # /api/v1/namespaces/{ns}[/status] stays: the namespace object itself, named ns.
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            query = parse_qs(query_string.decode("latin-1"))
            watch = query.get("watch", [""])[0].lower() in ("1", "true")
            verb = "watch" if watch else "list"
        elif verb == "delete":
            verb = "deletecollection"
    return RequestInfo(
        verb=verb,
        path=path,
        is_resource_request=True,
        api_prefix=prefix,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )


def _state(scope: Scope) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


def get_request_info(scope: Scope) -> RequestInfo:
    """The request info the middleware stored; worked out now if it is missing."""
    info = _state(scope).get(STATE_KEY)
    if isinstance(info, RequestInfo):
        return info
    return parse(scope.get("method", "GET"), scope.get("path", "/"), scope.get("query_string", b""))


class RequestInfoMiddleware:
    NAME = "request_info"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            _state(scope)[STATE_KEY] = parse(
                scope["method"], scope["path"], scope.get("query_string", b"")
            )
        await self.app(scope, receive, send)
