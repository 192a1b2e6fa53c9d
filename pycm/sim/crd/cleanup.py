"""Deleting a CustomResourceDefinition: apiextensions-apiserver's ``customresourcecleanup``
finalizer, done inside the store.

A DELETE of a CRD that serves objects first deletes every one of them (as a client's DELETE
would: objects without finalizers go at once, DELETED to watchers). If that empties the table
the CRD goes at once (the generic deletion, its own finalizers honoured) and stops serving. If
some object waits for its finalizers (an operator's cleanup), the CRD is **terminating**: it gets
a ``deletionTimestamp``, the ``customresourcecleanup.apiextensions.k8s.io`` finalizer and the
condition ``Terminating`` (``InstanceDeletionInProgress``); its resource stays served so the
operator can finish (get, list, watch, update, delete) but a create is refused as kube refuses
it (405 ``create not allowed while custom resource definition is terminating``). When the last
object is removed, the resource stops serving and the finalizer comes off: the CRD goes (or
waits for finalizers of its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pycm.sim.crd.names import set_condition
from pycm.sim.crd.strategy import CustomResourceStrategy
from pycm.sim.gc import DeleteOptions
from pycm.sim.objects import Obj, deep_copy

if TYPE_CHECKING:
    from pycm.sim.resources import Resource
    from pycm.sim.store import Store

__all__ = ["CLEANUP_FINALIZER", "delete_crd", "instance_removed"]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


def _served_by(store: Store, crd: Obj) -> Resource | None:
    """The storage version's resource ``crd`` serves (None: it serves none)."""
    spec = crd.get("spec") or {}
    key = (str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or ""))
    storage = store.registry.resources.get(key)
    strategy = storage.strategy if storage is not None else None
    if not isinstance(strategy, CustomResourceStrategy):
        return None
    return storage if strategy.crd_uid == crd["metadata"].get("uid") else None


def _refuse_creates(store: Store, storage: Resource) -> None:
    for group, version in store.registry.group_versions():
        if group != storage.group:
            continue
        for res in store.registry.in_group_version(group, version):
            if res.plural == storage.plural and isinstance(res.strategy, CustomResourceStrategy):
                res.strategy.terminating = True


def delete_crd(store: Store, res: Resource, crd: Obj) -> tuple[Obj, bool] | None:
    """A DELETE of ``crd`` (stored, preconditions checked): None for the generic deletion (it
    serves nothing, or nothing is left), else (the terminating CRD, False)."""
    storage = _served_by(store, crd)
    if storage is None:
        return None
    for obj in list(store.list_page(storage).items):
        m = obj["metadata"]
        if store.peek(storage, m.get("namespace"), m["name"]) is not None:
            store.delete(storage, m.get("namespace"), m["name"], DeleteOptions())
    if not store.list_page(storage, limit=1).items:
        store.unserve(storage.group, storage.plural)
        return None
    _refuse_creates(store, storage)
    new = deep_copy(crd)
    m = new["metadata"]
    if not m.get("deletionTimestamp"):
        m["deletionTimestamp"] = store.now()
        m["deletionGracePeriodSeconds"] = 0
    m["finalizers"] = [*(m.get("finalizers") or []), CLEANUP_FINALIZER]
    status = new.setdefault("status", {})
    conditions = [dict(c) for c in status.get("conditions") or []]
    set_condition(
        conditions,
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        store.now(),
    )
    status["conditions"] = conditions
    return deep_copy(store.commit_modified(res, new, crd)), False


def instance_removed(store: Store, strategy: CustomResourceStrategy) -> None:
    """A custom resource of ``strategy``'s CRD was removed: a terminating CRD left without
    objects stops serving and loses its cleanup finalizer (and goes, if no other holds it)."""
    crds = store.registry.resources.get(_CRD_KEY)
    if crds is None or not strategy.terminating:
        return
    crd = store.peek(crds, None, strategy.crd_name)
    if crd is None or CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
        return
    storage = _served_by(store, crd)
    if storage is not None and store.list_page(storage, limit=1).items:
        return
    if storage is not None:
        store.unserve(storage.group, storage.plural)
    new = deep_copy(crd)
    left = [f for f in new["metadata"]["finalizers"] if f != CLEANUP_FINALIZER]
    if left:
        new["metadata"]["finalizers"] = left
        store.commit_modified(crds, new, crd)
    else:
        new["metadata"].pop("finalizers", None)
        store.remove_now(crds, store.commit_modified(crds, new, crd))
