"""From a request's method, path and query to kube's RequestInfo (verb, group, resource, …).

Paths: ``/api/v1/<plural>[/<name>[/<sub>]]``, ``/api/v1/namespaces/<ns>/<plural>[/<name>[/<sub>]]``
and the same under ``/apis/<group>/<version>``. Everything else is a non-resource request
(discovery, health, openapi). Verbs follow kube: GET on an item is ``get``, on a collection
``list`` (``watch`` when a ``watch`` parameter is present and not "false" or "0"), POST
``create``, PUT ``update``, PATCH ``patch``, DELETE ``delete`` / ``deletecollection``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RequestInfo", "request_info"]

# /api/v1/namespaces/<name>/status is the namespace's own subresource, not a kind "status".
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    path: str
    verb: str
    is_resource_request: bool
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    # Path segments past <plural>/<name>/<sub>: such a path names nothing.
    extra: tuple[str, ...] = ()


def _watch_requested(value: str | None) -> bool:
    """kube's RequestInfoFactory: a ``watch`` parameter makes a list a watch unless it is
    "false" or "0" (any case) — so ``watch=``, ``watch=yes`` and ``watch=bogus`` all watch."""
    return value is not None and value.lower() not in ("false", "0")


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    non_resource = RequestInfo(path, method.lower(), False)
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    if parts[0] == "api":
        if len(parts) < 3:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return non_resource
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    extra = tuple(rest[3:])
    if resource == "namespaces" and not group and name:
        # A namespace is addressed by name; kube reports it as the namespace too.
        namespace = name
    if method in _METHOD_VERBS:
        verb = _METHOD_VERBS[method]
    elif method in ("GET", "HEAD"):
        verb = "get" if name else "watch" if _watch_requested(query.get("watch")) else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = method.lower()
    return RequestInfo(
        path,
        verb,
        True,
        group,
        version,
        namespace,
        resource,
        subresource,
        name,
        extra,
    )
