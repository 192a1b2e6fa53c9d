"""Finalizers: add one before a reconcile creates what must be cleaned up, remove it once the
clean-up is done (what kopf and controller-runtime's controllerutil do, as writes).

Both are idempotent — no API call when the object already is as asked — and both write a merge
patch that carries the object's ``resourceVersion``: the server refuses it with 409 Conflict
when the object changed since it was read, so a finalizer list is never rebuilt from a stale
copy (the worker requeues a conflict quietly, and the next reconcile reads the newer object).
Each write is traced (``finalizer.added`` / ``finalizer.removed``) inside the reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pycm.api.meta import Obj
from pycm.kube.resources import Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import FinalizerAdded, FinalizerRemoved

__all__ = [
    "FinalizerClient",
    "add_finalizer",
    "has_finalizer",
    "is_being_deleted",
    "remove_finalizer",
]


class FinalizerClient(Protocol):
    """The subset of :class:`~pycm.kube.client.Client` the finalizer helpers use."""

    @property
    def bus(self) -> Bus: ...

    async def patch(
        self, res: Resource, name: str, patch: Mapping[str, Any], *, namespace: str | None = ""
    ) -> Obj: ...


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


def has_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in _finalizers(obj)


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """The object has a deletionTimestamp: it goes once its finalizers are removed."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


async def _write(
    client: FinalizerClient, res: Resource, obj: Mapping[str, Any], finalizers: list[str]
) -> Obj:
    meta = obj.get("metadata") or {}
    patch = {
        "metadata": {
            "finalizers": finalizers,
            # A precondition: a 409 when the object changed since this copy was read.
            "resourceVersion": str(meta.get("resourceVersion") or ""),
        }
    }
    return await client.patch(
        res, str(meta.get("name", "")), patch, namespace=str(meta.get("namespace") or "")
    )


async def add_finalizer(
    client: FinalizerClient, res: Resource, obj: Mapping[str, Any], finalizer: str
) -> Obj:
    """``obj`` with ``finalizer`` added (written), or ``obj`` itself when it has it already.
    An object being deleted gets no new finalizer (the server refuses one): ValueError."""
    current = _finalizers(obj)
    if finalizer in current:
        return dict(obj)
    if is_being_deleted(obj):
        raise ValueError(f"cannot add finalizer {finalizer!r} to an object being deleted")
    written = await _write(client, res, obj, [*current, finalizer])
    _trace(client.bus, FinalizerAdded, res, obj, finalizer)
    return written


async def remove_finalizer(
    client: FinalizerClient, res: Resource, obj: Mapping[str, Any], finalizer: str
) -> Obj:
    """``obj`` with ``finalizer`` removed (written), or ``obj`` itself when it has none such.
    Removing the last finalizer of an object being deleted lets the server delete it: the
    returned object is then its last state."""
    current = _finalizers(obj)
    if finalizer not in current:
        return dict(obj)
    written = await _write(client, res, obj, [f for f in current if f != finalizer])
    _trace(client.bus, FinalizerRemoved, res, obj, finalizer)
    return written


def _trace(
    bus: Bus,
    kind: type[FinalizerAdded] | type[FinalizerRemoved],
    res: Resource,
    obj: Mapping[str, Any],
    finalizer: str,
) -> None:
    meta = obj.get("metadata") or {}
    bus.point(
        kind(
            resource=res.group_resource,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            finalizer=finalizer,
        )
    )
