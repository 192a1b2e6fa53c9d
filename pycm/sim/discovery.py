"""API discovery documents: /version, /api, /api/v1, /apis, /apis/<group>/<version>.

They carry what kubectl's RESTMapper and shortcut expander read: verbs, short names, kinds,
singular names, namespaced, categories ("all") and the status / scale / token subresources
(scale as ``autoscaling/v1 Scale``, a service account's token as ``authentication.k8s.io/v1
TokenRequest``).
"""

from __future__ import annotations

from typing import Any

from pycm.sim.resources import Registry, Resource

__all__ = ["KUBE_VERSION", "api_group_list", "api_resource_list", "api_versions", "version_info"]

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


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for group, version in registry.group_versions():
        if group:
            groups.setdefault(group, []).append(version)
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
