"""The emulator's stand-in for kube-controller-manager's garbage collector.

A real cluster removes dependents asynchronously, in the garbage collector that watches every
kind's ``metadata.ownerReferences``. The emulator owns its whole store, so it does the same work
synchronously, inside the write that triggers it (the watch stream still shows the same event
order a client would see from a cluster):

- **Background** (the default for every kind, as kubectl sends it): the owner is removed at once;
  then each dependent whose every owner is gone is deleted (Background, recursively); a
  dependent that still has a live owner only loses the dangling reference.
- **Foreground**: the owner gets ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer;
  its dependents are deleted (Foreground, recursively); when the last dependent is removed —
  at once, or later when a dependent's own finalizers clear — the finalizer is dropped and the
  owner removed. Unlike kube, the emulator waits for every dependent, not only those with
  ``blockOwnerDeletion: true``.
- **Orphan**: the dependents lose their ownerReference to the owner (kube does this through the
  ``orphan`` finalizer; the emulator does it before the owner's deletion proceeds).

:class:`OwnerIndex` keeps ``owner uid → dependents`` current on every write, so none of this
scans the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pycm.sim.objects import Obj
from pycm.sim.resources import ResourceKey

__all__ = ["BACKGROUND", "FOREGROUND", "FOREGROUND_FINALIZER", "ORPHAN", "ObjectRef", "OwnerIndex"]

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN = "Orphan"
BACKGROUND = "Background"
FOREGROUND = "Foreground"

# (resource key, namespace, name): where an object lives in the store.
ObjectRef = tuple[ResourceKey, str, str]


def owner_uids(obj: Obj) -> list[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if isinstance(r, dict) and r.get("uid")]


@dataclass
class OwnerIndex:
    """``dependents[uid]`` holds every stored object with an ownerReference to ``uid``."""

    dependents: dict[str, set[ObjectRef]] = field(default_factory=dict)

    def add(self, ref: ObjectRef, obj: Obj) -> None:
        for uid in owner_uids(obj):
            self.dependents.setdefault(uid, set()).add(ref)

    def remove(self, ref: ObjectRef, obj: Obj) -> None:
        for uid in owner_uids(obj):
            refs = self.dependents.get(uid)
            if refs is not None:
                refs.discard(ref)
                if not refs:
                    del self.dependents[uid]

    def of(self, uid: str) -> Iterator[ObjectRef]:
        """The dependents of ``uid`` (a snapshot: safe to delete while iterating)."""
        return iter(sorted(self.dependents.get(uid, ())))

    def has_dependents(self, uid: str) -> bool:
        return bool(self.dependents.get(uid))
