"""API discovery documents: /version, /api, /api/v1, /apis, /apis/<group>/<version>.

They carry what kubectl's RESTMapper and shortcut expander read: verbs, short names, kinds,
singular names, namespaced, categories ("all") and the status / scale / token subresources
(scale as ``autoscaling/v1 Scale``, a service account's token as ``authentication.k8s.io/v1
TokenRequest``). Groups and kinds are read from the store's registry on each request, so a
custom resource appears once its CRD is Established and goes when it is deleted; a group served
at several versions lists them in kube's priority order, the first preferred.
"""

from __future__ import annotations

import re
from typing import Any

from pycm.sim.resources import Registry, Resource

__all__ = [
    "KUBE_VERSION",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "version_info",
    "version_priority",
]

# The Kubernetes release the emulator presents itself as (kubectl 1.20 is the reference client).
KUBE_VERSION = {"major": "1", "minor": "20", "gitVersion": "v1.20.15"}

_SUB_VERBS = ["get", "patch", "update"]


def version_info() -> dict[str, Any]:
    return {
        **KUBE_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.15.15",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STAGES = {None: 2, "beta": 1, "alpha": 0}


def version_priority(version: str) -> tuple[int, int, int, int, str]:
    """A sort key putting versions in kube's priority order (apimachinery's
    ``CompareKubeAwareVersionStrings``): GA before beta before alpha, a higher major first,
    then a higher minor (v2 > v1 > v1beta2 > v1beta1 > v1alpha1); versions not of that form
    come last, alphabetically."""
    m = _KUBE_VERSION.match(version)
    if m is None:
        return (1, 0, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return (0, -_STAGES[stage], -major, -minor, version)


def api_group_list(registry: Registry) -> dict[str, Any]:
    """Every group with its versions in priority order; the first is the preferred version
    (a custom resource's group lists each version served, v1 before v1beta1)."""
    groups: dict[str, list[str]] = {}
    for group, version in registry.group_versions():
        if group:
            groups.setdefault(group, []).append(version)
    for versions in groups.values():
        versions.sort(key=version_priority)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": name,
                "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
                "preferredVersion": {
                    "groupVersion": f"{name}/{versions[0]}",
                    "version": versions[0],
                },
            }
            for name, versions in groups.items()
        ],
    }


def _entries(resource: Resource) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        main["shortNames"] = list(resource.short_names)
    if resource.categories:
        main["categories"] = list(resource.categories)
    out = [main]
    if resource.has_status:
        out.append(
            {
                "name": f"{resource.plural}/status",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": list(_SUB_VERBS),
            }
        )
    if resource.has_scale:
        out.append(
            {
                "name": f"{resource.plural}/scale",
                "singularName": "",
                "namespaced": resource.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": list(_SUB_VERBS),
            }
        )
    if "token" in resource.subresources:
        out.append(
            {
                "name": f"{resource.plural}/token",
                "singularName": "",
                "namespaced": resource.namespaced,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }
        )
    return out


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    resources = registry.in_group_version(group, version)
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for r in resources for entry in _entries(r)],
    }
