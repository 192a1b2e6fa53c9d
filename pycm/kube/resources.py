"""The resources pycm talks to: a small static registry (no discovery needed for these).

A :class:`Resource` knows its group/version, plural, kind and scope, and builds its URL paths:
``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "REGISTRY",
    "REPLICASETS",
    "SUBJECTACCESSREVIEWS",
    "TOKENREVIEWS",
    "Resource",
    "by_kind",
    "by_plural",
]


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    resource: str  # the plural, as in URLs
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def path(self, namespace: str | None = "", name: str = "", subresource: str = "") -> str:
        """The URL path; ``namespace`` is ignored for cluster-scoped resources, and an empty one
        on a namespaced resource means all namespaces (lists and watches only)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.resource)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False, frozenset({"status"}))
NODES = Resource("", "v1", "nodes", "Node", False, frozenset({"status"}))
PODS = Resource("", "v1", "pods", "Pod", True, frozenset({"status", "binding", "eviction"}))
EVENTS = Resource("", "v1", "events", "Event", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
DEPLOYMENTS = Resource(
    "apps", "v1", "deployments", "Deployment", True, frozenset({"status", "scale"})
)
REPLICASETS = Resource(
    "apps", "v1", "replicasets", "ReplicaSet", True, frozenset({"status", "scale"})
)
TOKENREVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
SUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)

REGISTRY: tuple[Resource, ...] = (
    NAMESPACES,
    NODES,
    PODS,
    EVENTS,
    CONFIGMAPS,
    LEASES,
    DEPLOYMENTS,
    REPLICASETS,
    TOKENREVIEWS,
    SUBJECTACCESSREVIEWS,
)

_BY_KIND = {r.kind: r for r in REGISTRY}
_BY_PLURAL = {r.resource: r for r in REGISTRY} | {r.group_resource: r for r in REGISTRY}


def by_kind(kind: str) -> Resource:
    """The resource of a kind (``"Pod"``); KeyError names the unknown kind."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}") from None


def by_plural(plural: str) -> Resource:
    """The resource of a plural (``"pods"``, or ``"deployments.apps"``)."""
    try:
        return _BY_PLURAL[plural]
    except KeyError:
        raise KeyError(f"unknown resource {plural!r}") from None
