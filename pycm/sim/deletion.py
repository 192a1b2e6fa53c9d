"""A DELETE of one object, as kube-apiserver's generic store does it: its preconditions, its
propagation policy, then removal at once or a pending deletion (a ``deletionTimestamp``, and
for a Foreground one with dependents the ``foregroundDeletion`` finalizer) that waits for
finalizers, dependents or a kubelet's confirmation (:meth:`Deleter.finish_graceful`).

The dependents themselves are the collector's (:mod:`pycm.sim.gc`); a kind may take its
deletion over (its strategy's ``delete``: a namespace terminates instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pycm.sim import errors, validation
from pycm.sim.gc import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    DeleteOptions,
    GarbageCollector,
)
from pycm.sim.objects import Obj, deep_copy, rfc3339
from pycm.sim.resources import Resource
from pycm.sim.servermeta import check_delete_preconditions

if TYPE_CHECKING:
    from pycm.sim.store import Store

__all__ = ["Deleter"]


def _policy(options: DeleteOptions) -> str:
    policy = options.propagation_policy or BACKGROUND
    if policy not in (ORPHAN, BACKGROUND, FOREGROUND):
        raise errors.invalid(
            "DeleteOptions",
            "",
            [validation.invalid_value("propagationPolicy", policy, "is not supported")],
        )
    return policy


class Deleter:
    """The deletions of one store (which keeps the objects; the collector the dependents)."""

    def __init__(self, store: Store, gc: GarbageCollector) -> None:
        self._store = store
        self._gc = gc

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: DeleteOptions
    ) -> tuple[Obj, bool]:
        """DELETE. Returns (the object, removed now?). Not removed now means pending: it has
        a deletionTimestamp and waits for finalizers, dependents (Foreground) or the kubelet."""
        store, gc = self._store, self._gc
        obj = store.peek(res, namespace, name)
        if obj is None:
            raise errors.not_found(res.plural, name, res.group)
        m = obj["metadata"]
        check_delete_preconditions(res, name, m, options)
        policy = _policy(options)
        uid = str(m.get("uid"))
        if policy == ORPHAN:
            gc.orphan(uid)
        taken = res.strategy.delete(store, res, obj, options)
        if taken is not None:
            return taken
        pending = bool(m.get("finalizers"))
        grace = res.strategy.grace_period(obj, options) if store.graceful_pod_deletion else 0
        pending = pending or grace > 0
        if policy == FOREGROUND and gc.has_dependents(uid):
            pending = True
        if not pending:
            store.remove_now(res, obj)
            return deep_copy(obj), True
        new = deep_copy(obj)
        nm = new["metadata"]
        if policy == FOREGROUND and gc.has_dependents(uid):
            finalizers = list(nm.get("finalizers") or [])
            if FOREGROUND_FINALIZER not in finalizers:
                finalizers.append(FOREGROUND_FINALIZER)
            nm["finalizers"] = finalizers
        if not nm.get("deletionTimestamp") or grace < int(
            nm.get("deletionGracePeriodSeconds") or 0
        ):
            wall = store.clock.wall_ns() + grace * 1_000_000_000
            nm["deletionTimestamp"] = rfc3339(wall)
            nm["deletionGracePeriodSeconds"] = grace
        if new != obj:
            obj = store.commit_modified(res, new, obj)
        if policy == FOREGROUND:
            gc.delete_dependents(uid, FOREGROUND)
            current = store.lookup_uid(uid)
            if current is not None:
                gc.release_foreground(current[0], current[1])
        current = store.lookup_uid(uid)
        if current is None:
            return deep_copy(obj), True
        return deep_copy(current[1]), False

    def finish_graceful(
        self, res: Resource, namespace: str | None, name: str, uid: str | None
    ) -> bool:
        """A kubelet's confirmation that an object in its grace period has stopped: it is
        removed (or, if it still has finalizers, waits only for them). Returns whether it is
        gone (also when it was already, or ``uid`` names an earlier object of that name)."""
        store = self._store
        obj = store.peek(res, namespace, name)
        if obj is None or (uid and obj["metadata"].get("uid") != uid):
            return True
        m = obj["metadata"]
        if not m.get("deletionTimestamp"):
            raise errors.conflict(
                res.plural, name, res.group, f"the {res.singular} is not being deleted"
            )
        if m.get("finalizers"):
            if m.get("deletionGracePeriodSeconds"):
                new = deep_copy(obj)
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                store.commit_modified(res, new, obj)
            return False
        store.remove_now(res, obj)
        return True
