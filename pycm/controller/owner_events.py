"""KCM's event rules for objects a controller controls, written once.

The ReplicaSet controller's pod handlers (``addPod``/``updatePod``/``deletePod`` in KCM's
replica_set.go) and the Deployment controller's ReplicaSet handlers (``addReplicaSet``/
``updateReplicaSet``/``deleteReplicaSet`` in deployment_controller.go) have one shape; this
module is that shape, wired by :meth:`pycm.controller.builder.ControllerBuilder.controls`.
The owner is found as KCM's ``resolveControllerRef`` finds it: the controller reference's kind
is the owner's, an owner of that name is in the cache, and its UID is the reference's (a
re-created owner of the same name is not the one the object names).

- add: being deleted → handled as its delete; with a controller reference → the owner (its
  expectations observe one creation); an orphan → every owner that may adopt it (``adopters``).
- update: an unchanged resourceVersion → nothing (a resync: the owner's own resync covers it).
  With expectations, a new deletionTimestamp → the new object's delete, and the old one's too
  when the labels changed (KCM's controllers with expectations observe a deletion as soon as
  it starts; the Deployment controller, with none, does not). A changed controller reference
  (the whole reference, as KCM's ``reflect.DeepEqual``) → the old owner too. With a controller
  reference → the owner, then ``after_update`` may ask for the owner again after a delay (the
  ReplicaSet controller's minReadySeconds check); without one, changed labels or reference →
  the adopters.
- delete (tombstones unwrapped): with a controller reference → the owner (its expectations
  observe the deletion of the object's key).

Handlers only compute keys and enqueue, each key with the event that caused it
(:meth:`~pycm.controller.worker.Controller.trigger`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pycm.api.meta import controller_ref
from pycm.api.meta import key as key_of
from pycm.cache.listers import Lister
from pycm.cache.processor import HandlerFuncs
from pycm.cache.store import DeletedFinalStateUnknown
from pycm.controller.worker import Controller

__all__ = ["Adopters", "AfterUpdate", "ControlledRules", "ObservedExpectations", "controlled"]

Obj = dict[str, Any]

Adopters = Callable[[Obj], Iterable[Obj]]
"""The owners that may adopt an orphan (its labels match their selector)."""
AfterUpdate = Callable[[Obj, Obj, Obj], float | None]
"""``(owner, old, new) -> delay | None``: after an owned object's update enqueued its owner,
enqueue the owner again ``delay`` seconds later (None: not)."""

# The reason the queue records for an after_update delayed add.
AFTER_UPDATE_REASON = "after_update"


class ObservedExpectations(Protocol):
    """What the rules tell a controller's expectations (UIDTrackingExpectations has both)."""

    def creation_observed(self, key: str) -> None: ...

    def deletion_observed_uid(self, key: str, uid: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ControlledRules:
    """What :meth:`ControllerBuilder.controls` was told (see the module's rules)."""

    owner_kind: str
    adopters: Adopters | None = None
    expectations: ObservedExpectations | None = None
    after_update: AfterUpdate | None = None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def controlled(controller: Controller, owners: Lister, rules: ControlledRules) -> HandlerFuncs:
    """The handlers of a controlled resource's informer: events → owner keys on
    ``controller``'s queue, owners read from ``owners`` (the primary resource's cache)."""
    kind = rules.owner_kind
    adopters = rules.adopters
    expectations = rules.expectations
    after_update = rules.after_update
    enqueue = controller.enqueue
    trigger = controller.trigger

    def resolve(namespace: str, ref: Mapping[str, Any] | None) -> Obj | None:
        if ref is None or ref.get("kind") != kind:
            return None
        owner = owners.get(namespace, str(ref.get("name", "")))
        if owner is None or _meta(owner).get("uid") != ref.get("uid"):
            return None
        return owner

    def on_delete(raw: Any) -> None:
        obj: Obj = raw.obj if isinstance(raw, DeletedFinalStateUnknown) else raw
        ref = controller_ref(obj)
        if ref is None:
            return
        owner = resolve(_meta(obj).get("namespace", ""), ref)
        if owner is None:
            return
        owner_key = key_of(owner)
        if expectations is not None:
            expectations.deletion_observed_uid(owner_key, key_of(obj))
        enqueue(owner_key, trigger(obj, "delete"))

    def on_add(obj: Obj, is_in_initial_list: bool) -> None:
        meta = _meta(obj)
        if meta.get("deletionTimestamp"):
            on_delete(obj)  # added while being deleted (after a relist): a delete
            return
        ref = controller_ref(obj)
        if ref is not None:
            owner = resolve(meta.get("namespace", ""), ref)
            if owner is not None:
                owner_key = key_of(owner)
                if expectations is not None:
                    expectations.creation_observed(owner_key)
                enqueue(owner_key, trigger(obj, "add", None, is_in_initial_list))
            return
        if adopters is not None:
            for owner in adopters(obj):
                enqueue(key_of(owner), trigger(obj, "add", None, is_in_initial_list))

    def on_update(old: Obj, cur: Obj) -> None:
        old_meta, cur_meta = _meta(old), _meta(cur)
        if old_meta.get("resourceVersion") == cur_meta.get("resourceVersion"):
            return  # a resync: the owner's own resync covers it
        labels_changed = (old_meta.get("labels") or {}) != (cur_meta.get("labels") or {})
        if expectations is not None and cur_meta.get("deletionTimestamp"):
            on_delete(cur)
            if labels_changed:
                on_delete(old)  # the old labels may have matched another owner
            return
        namespace = cur_meta.get("namespace", "")
        old_ref, cur_ref = controller_ref(old), controller_ref(cur)
        ref_changed = old_ref != cur_ref
        if ref_changed and old_ref is not None:
            old_owner = resolve(namespace, old_ref)
            if old_owner is not None:
                enqueue(key_of(old_owner), trigger(cur, "update", old))
        if cur_ref is not None:
            owner = resolve(namespace, cur_ref)
            if owner is None:
                return
            owner_key = key_of(owner)
            enqueue(owner_key, trigger(cur, "update", old))
            if after_update is not None:
                delay = after_update(owner, old, cur)
                if delay is not None:
                    controller.enqueue_after(owner_key, delay, AFTER_UPDATE_REASON)
            return
        if (labels_changed or ref_changed) and adopters is not None:
            for owner in adopters(cur):
                enqueue(key_of(owner), trigger(cur, "update", old))

    return HandlerFuncs(on_add=on_add, on_update=on_update, on_delete=on_delete)
