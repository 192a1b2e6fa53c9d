"""The custom resource versions a store serves, with their schemas — for the OpenAPI documents.

:func:`served_versions` lists every version of every custom resource being served (its CRD
Established, the version ``served: true``), in the registry's order, as a
:class:`ServedVersion`: ``group``, ``version``, ``kind``, ``plural``, ``scope`` ("Namespaced" or
"Cluster"), ``schema`` (the version's ``openAPIV3Schema`` as the CRD holds it: a copy, safe to
change), plus ``storage`` (is it the storage version?) and ``subresources`` ("status",
"scale"). It reads the store's registry (``store.registry``) and nothing else, so the OpenAPI
handler can call it on each request: a CRD created or deleted shows at once.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pycm.sim.crd.strategy import CustomResourceStrategy
from pycm.sim.resources import Registry

__all__ = ["ServedVersion", "served_versions"]


@dataclass(frozen=True, slots=True)
class ServedVersion:
    group: str
    version: str
    kind: str
    plural: str
    scope: str
    schema: dict[str, Any]
    storage: bool
    subresources: tuple[str, ...]


def served_versions(registry: Registry) -> list[ServedVersion]:
    out = []
    for group, version in registry.group_versions():
        for res in registry.in_group_version(group, version):
            strategy = res.strategy
            if not isinstance(strategy, CustomResourceStrategy):
                continue
            storage = registry.resources.get(res.key)
            out.append(
                ServedVersion(
                    group,
                    version,
                    res.kind,
                    res.plural,
                    "Namespaced" if res.namespaced else "Cluster",
                    copy.deepcopy(strategy.raw_schema),
                    storage is not None and storage.version == version,
                    res.subresources,
                )
            )
    return out
