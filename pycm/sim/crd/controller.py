"""What apiextensions-apiserver's controllers do for a CRD, done synchronously in the store.

After every committed write of a CRD (:meth:`CRDStrategy.committed`):

1. **Names and conditions** (:mod:`pycm.sim.crd.names`): the CRD's status is computed against
   the other CRDs of its group and, if it changed, written (a MODIFIED, as kube's controller's
   status update is).
2. **Serving**: an Established CRD whose names were accepted serves each ``served: true``
   version (a :class:`~pycm.sim.resources.Resource` with a
   :class:`~pycm.sim.crd.strategy.CustomResourceStrategy`, the storage version first) through
   ``store.serve``; a changed definition (versions, schemas, columns, subresources) is served
   anew over the same objects, which get the storage version's defaults as kube's reads give
   them; versions no longer served leave discovery.

When a CRD is deleted, its objects are deleted and the resource stops serving once they are
gone (:mod:`pycm.sim.crd.cleanup`, kube's ``customresourcecleanup`` finalizer). Once the CRD is
gone, the other CRDs of its group are synced again: one that conflicted with its names may now
be accepted.

The controller holds no state of its own: what is served is read back from the store's registry
(each served Resource's strategy knows its CRD's uid).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pycm.sim.crd.names import crd_status, is_established
from pycm.sim.crd.strategy import CustomResourceStrategy
from pycm.sim.discovery import version_priority
from pycm.sim.objects import Obj, deep_copy
from pycm.sim.resources import Resource

if TYPE_CHECKING:
    from pycm.sim.store import Store

__all__ = ["CRD_GROUP", "CRD_PLURAL", "crd_deleted", "crd_removed", "serving_strategy", "sync_crd"]

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


def serving_strategy(store: Store, group: str, plural: str) -> CustomResourceStrategy | None:
    """The strategy of the custom resource served as ``plural`` in ``group``, if one is."""
    res = store.registry.resources.get((group, plural))
    if res is None or not isinstance(res.strategy, CustomResourceStrategy):
        return None
    return res.strategy


def _group_crds(store: Store, group: str, name: str) -> list[Obj]:
    """The other stored CRDs of ``group`` (the store's own dicts, read-only: a CRD's schema
    can be large, and an install of many CRDs would otherwise copy them all at each one)."""
    crds = store.resource(CRD_PLURAL, CRD_GROUP)
    return [
        c
        for c in store.list_page(crds).items
        if (c.get("spec") or {}).get("group") == group and c["metadata"]["name"] != name
    ]


def _resources(crd: Mapping[str, Any]) -> list[Resource]:
    """One Resource per served version, the storage version first."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec.get("versions") or [] if v.get("served") is True]
    versions.sort(key=lambda v: (v.get("storage") is not True, version_priority(str(v["name"]))))
    out = []
    for version in versions:
        strategy = CustomResourceStrategy(crd, version)
        subresources = tuple(
            s for s in ("status", "scale") if s in (version.get("subresources") or {})
        )
        out.append(
            Resource(
                spec["group"],
                str(version["name"]),
                str(names["plural"]),
                str(names["kind"]),
                str(names.get("singular") or str(names["kind"]).lower()),
                spec.get("scope") == "Namespaced",
                strategy,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subresources,
                custom_list_kind=str(names.get("listKind") or ""),
            )
        )
    return out


def _served_here(store: Store, group: str, plural: str) -> list[Resource]:
    return [
        r
        for gv in store.registry.group_versions()
        if gv[0] == group
        for r in store.registry.in_group_version(*gv)
        if r.plural == plural
    ]


def _fingerprint(res: Resource) -> tuple[str, bytes]:
    strategy = res.strategy
    return res.version, strategy.fingerprint if isinstance(
        strategy, CustomResourceStrategy
    ) else b""


def _serve(store: Store, crd: Obj) -> None:
    spec = crd["spec"]
    group, plural = spec["group"], spec["names"]["plural"]
    current = serving_strategy(store, group, plural)
    uid = crd["metadata"].get("uid")
    if current is not None and current.crd_uid != uid:
        return  # another CRD serves these names (this one's were not accepted)
    if current is None and store.registry.resources.get((group, plural)) is not None:
        return  # a built-in kind has these names: it wins, as kube's own handlers come first
    wanted = _resources(crd)
    served = _served_here(store, group, plural)
    if [_fingerprint(r) for r in served] == [_fingerprint(r) for r in wanted]:
        return
    # Re-register over the same table: the objects stay, the served versions change.
    store.registry.remove(group, plural)
    for res in wanted:
        store.serve(res)
    if served and wanted:
        _default_stored(store, wanted[0])


def _default_stored(store: Store, storage: Resource) -> None:
    """The storage version's defaults on every stored object, as kube applies them when it
    reads from storage: an object written before a ``default:`` was added reads with it (same
    resourceVersion, no watch event)."""
    strategy = storage.strategy

    def defaulted(obj: Obj) -> Obj | None:
        new = deep_copy(obj)
        strategy.default(new)
        return new if new != obj else None

    store.rewrite_in_place(storage, defaulted)


def sync_crd(store: Store, crd: Obj) -> None:
    """Bring a stored CRD's status and what it serves up to date (see the module)."""
    crds = store.resource(CRD_PLURAL, CRD_GROUP)
    name = crd["metadata"]["name"]
    stored = store.peek(crds, None, name)
    if stored is None or stored["metadata"].get("deletionTimestamp"):
        return
    spec = stored.get("spec") or {}
    others = _group_crds(store, str(spec.get("group")), name)
    status = crd_status(stored, stored.get("status"), others, store.now())
    if status != stored.get("status"):
        new = deep_copy(stored)
        new["status"] = status
        stored = store.commit_modified(crds, new, stored)  # our committed() runs again: a no-op
    accepted = (stored.get("status") or {}).get("acceptedNames") or {}
    if is_established(stored) and accepted.get("plural") == spec["names"]["plural"]:
        _serve(store, stored)


def crd_deleted(store: Store, crd: Obj) -> None:
    """Stop serving what ``crd`` (being deleted) served."""
    spec = crd.get("spec") or {}
    group = str(spec.get("group") or "")
    plural = str((spec.get("names") or {}).get("plural") or "")
    current = serving_strategy(store, group, plural)
    if current is not None and current.crd_uid == crd["metadata"].get("uid"):
        store.unserve(group, plural)


def crd_removed(store: Store, crd: Obj) -> None:
    """``crd`` is gone: the other CRDs of its group are synced (its names are free now)."""
    group = str((crd.get("spec") or {}).get("group") or "")
    for other in _group_crds(store, group, crd["metadata"]["name"]):
        sync_crd(store, other)
