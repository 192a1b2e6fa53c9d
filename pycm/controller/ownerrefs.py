"""Owner references on the objects a controller makes, with controller-runtime's rules
(``controllerutil.SetControllerReference`` / ``SetOwnerReference``).

- The owner's scope decides what it may own: a cluster-scoped owner may own objects anywhere; a
  namespaced owner only objects of its own namespace (the garbage collector would otherwise
  delete them as orphans of an owner it cannot find), never a cluster-scoped object.
- An object has at most one controller: setting a controller reference on an object that
  another owner controls raises :class:`AlreadyOwnedError`. A reference to the same owner
  (same group, kind and name) is replaced as a whole, not duplicated nor merged: a plain
  owner reference set over a controller reference leaves no ``controller: true`` behind.

Both return a new object (the given one, often from the cache, is never mutated) and trace
``ownerref.set``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pycm.api.meta import Obj
from pycm.kube.resources import Resource
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import OwnerReferenceSet

__all__ = ["AlreadyOwnedError", "set_controller_reference", "set_owner_reference"]


class AlreadyOwnedError(ValueError):
    """The object already has a controller reference to another owner."""


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _validate(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    owner_ns = str((owner.get("metadata") or {}).get("namespace") or "")
    obj_ns = str((obj.get("metadata") or {}).get("namespace") or "")
    if not owner_ns:
        return  # cluster-scoped owners may own anything
    if not obj_ns:
        raise ValueError(
            "cluster-scoped resource must not have a namespace-scoped owner, "
            f"owner's namespace {owner_ns}"
        )
    if owner_ns != obj_ns:
        raise ValueError(
            "cross-namespace owner references are disallowed, "
            f"owner's namespace {owner_ns}, obj's namespace {obj_ns}"
        )


def _reference(owner: Mapping[str, Any], owner_res: Resource, controller: bool) -> dict[str, Any]:
    meta = owner.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    if not name or not uid:
        raise ValueError("the owner needs metadata.name and metadata.uid (read it from the API)")
    ref: dict[str, Any] = {
        "apiVersion": owner_res.api_version,
        "kind": owner_res.kind,
        "name": name,
        "uid": uid,
    }
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    return ref


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (
        _group(str(a.get("apiVersion", ""))) == _group(str(b.get("apiVersion", "")))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _set(
    owner: Mapping[str, Any],
    obj: Mapping[str, Any],
    owner_res: Resource,
    controller: bool,
    bus: Bus | None,
) -> Obj:
    _validate(owner, obj)
    ref = _reference(owner, owner_res, controller)
    meta = dict(obj.get("metadata") or {})
    refs = [dict(r) for r in meta.get("ownerReferences") or ()]
    if controller:
        for existing in refs:
            if existing.get("controller") and not _same_owner(existing, ref):
                raise AlreadyOwnedError(
                    f"Object {meta.get('namespace', '')}/{meta.get('name', '')} is already "
                    f"owned by another {existing.get('kind')} controller {existing.get('name')}"
                )
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[i] = ref  # replaced whole, as controller-runtime's upsertOwnerRef does
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs
    (bus or default_bus()).point(
        OwnerReferenceSet(
            owner_kind=owner_res.kind,
            owner_name=ref["name"],
            object_kind=str(obj.get("kind") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            controller=controller,
        )
    )
    return {**obj, "metadata": meta}


def set_controller_reference(
    owner: Mapping[str, Any], obj: Mapping[str, Any], owner_res: Resource, *, bus: Bus | None = None
) -> Obj:
    """``obj`` with a controller reference to ``owner`` (of ``owner_res``): garbage collected
    with it, and the owner's controller is the one that reconciles it (``owns()``)."""
    return _set(owner, obj, owner_res, True, bus)


def set_owner_reference(
    owner: Mapping[str, Any], obj: Mapping[str, Any], owner_res: Resource, *, bus: Bus | None = None
) -> Obj:
    """``obj`` with a plain (non-controller) owner reference to ``owner``."""
    return _set(owner, obj, owner_res, False, bus)
