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
from typing import Protocol

from pycm.sim.objects import Obj, deep_copy
from pycm.sim.resources import Registry, Resource, ResourceKey

__all__ = ["BACKGROUND", "FOREGROUND", "FOREGROUND_FINALIZER", "ORPHAN", "ObjectRef", "OwnerIndex"]

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN = "Orphan"
BACKGROUND = "Background"
# The field manager of the collector's writes (KCM's User-Agent product, as in a cluster).
MANAGER = "kube-controller-manager"
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


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    propagation_policy: str | None = None  # Orphan | Background | Foreground (default)
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None


class CollectorStore(Protocol):
    """The subset of the Store the collector uses."""

    registry: Registry

    def lookup_uid(self, uid: str) -> tuple[Resource, Obj] | None: ...

    def peek_ref(self, ref: ObjectRef) -> Obj | None: ...

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: DeleteOptions | None
    ) -> tuple[Obj, bool]: ...

    def replace(
        self, res: Resource, new: Obj, old: Obj, *, manager: str, subresource: str = ""
    ) -> Obj:
        """Store ``new`` over ``old`` unvalidated (MODIFIED), finishing a deletion it allows."""
        ...


class GarbageCollector:
    """Owner → dependents bookkeeping and the three propagation policies (see the module)."""

    def __init__(self, store: CollectorStore) -> None:
        self._store = store
        self.index = OwnerIndex()

    def has_dependents(self, uid: str) -> bool:
        return self.index.has_dependents(uid)

    def orphan(self, uid: str) -> None:
        """Orphan: every dependent of ``uid`` loses its reference to it."""
        for ref in self.index.of(uid):
            self._drop_owner_reference(ref, uid)

    def delete_dependents(self, uid: str, policy: str) -> None:
        for ref in self.index.of(uid):
            self._delete_ref(ref, policy)

    def after_removal(self, gone: Obj) -> None:
        """``gone`` was just removed: collect its dependents, release waiting owners."""
        uid = str((gone.get("metadata") or {}).get("uid"))
        for ref in self.index.of(uid):
            dependent = self._store.peek_ref(ref)
            if dependent is None:
                continue
            live = [u for u in owner_uids(dependent) if u != uid and self._store.lookup_uid(u)]
            if live:
                self._drop_owner_reference(ref, uid)
            elif not dependent["metadata"].get("deletionTimestamp"):
                self._delete_ref(ref, BACKGROUND)
        for owner_uid in owner_uids(gone):
            found = self._store.lookup_uid(owner_uid)
            if found is not None:
                self.release_foreground(*found)

    def release_foreground(self, res: Resource, owner: Obj) -> None:
        """Drop ``foregroundDeletion`` from an owner whose dependents are all gone."""
        m = owner["metadata"]
        if (
            not m.get("deletionTimestamp")
            or FOREGROUND_FINALIZER not in (m.get("finalizers") or [])
            or self.index.has_dependents(str(m.get("uid")))
        ):
            return
        new = deep_copy(owner)
        finalizers = [f for f in new["metadata"]["finalizers"] if f != FOREGROUND_FINALIZER]
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        else:
            del new["metadata"]["finalizers"]
        self._store.replace(res, new, owner, manager=MANAGER)

    def _delete_ref(self, ref: ObjectRef, policy: str) -> None:
        if self._store.peek_ref(ref) is None:
            return
        key, ns, name = ref
        self._store.delete(self._store.registry.resources[key], ns, name, DeleteOptions(policy))

    def _drop_owner_reference(self, ref: ObjectRef, owner_uid: str) -> None:
        current = self._store.peek_ref(ref)
        if current is None:
            return
        new = deep_copy(current)
        refs = [
            r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid
        ]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self._store.replace(self._store.registry.resources[ref[0]], new, current, manager=MANAGER)
