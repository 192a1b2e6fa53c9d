"""The object metadata the server owns, and the preconditions a write names on it (kube's
``rest.BeforeCreate`` / ``BeforeUpdate`` / ``BeforeDelete`` and ObjectMeta's system fields):
what a create fills in and drops, what an update keeps from the stored object, and the 409s of
a resourceVersion or UID that names another version or object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycm.sim import errors
from pycm.sim.gc import DeleteOptions
from pycm.sim.objects import Obj, generate_name, new_uid
from pycm.sim.resources import Resource
from pycm.sim.versions import MAX_RESOURCE_VERSION

__all__ = [
    "check_delete_preconditions",
    "check_update_preconditions",
    "fill_for_create",
    "keep_for_update",
    "resource_version_is_set",
    "typed",
]

# Tries at a name from generateName before the create fails (kube's storage retries too).
_GENERATE_TRIES = 8
# What a create must not carry over from its body (the server sets what it needs of them).
_DROPPED_ON_CREATE = (
    "resourceVersion",
    "uid",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)
# What an update keeps from the stored object (or keeps absent), whatever its body says.
_KEPT_ON_UPDATE = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "namespace",
    "name",
    "generation",
)


def typed(res: Resource, obj: Obj) -> Obj:
    """``obj`` with apiVersion and kind set, first (as kube-apiserver prints them)."""
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return {"apiVersion": res.api_version, "kind": res.kind, **rest}


def fill_for_create(m: Obj, *, taken: Callable[[str], bool], now: str) -> None:
    """A create's metadata ``m``: a name from ``generateName`` (one not ``taken``), the body's
    system fields dropped, a new uid and ``creationTimestamp`` ``now`` — set before the
    strategy runs, as kube fills them before validating (a Job's generated selector names its
    uid)."""
    if not m.get("name") and m.get("generateName"):
        for _ in range(_GENERATE_TRIES):
            candidate = generate_name(str(m["generateName"]))
            if not taken(candidate):
                m["name"] = candidate
                break
        else:
            raise errors.APIError(500, "AlreadyExists", "could not generate a unique name")
    for drop in _DROPPED_ON_CREATE:
        m.pop(drop, None)
    m["uid"] = new_uid()
    m["creationTimestamp"] = now


def resource_version_is_set(value: Any) -> bool:
    """Whether a created object's resourceVersion counts as set for kube's storage: it parses
    as a uint64 (strconv.ParseUint) and is not 0."""
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isdigit()
        and 0 < int(value) <= MAX_RESOURCE_VERSION
    )


def keep_for_update(m: Obj, old_m: Obj) -> None:
    """An update's metadata ``m`` keeps the stored ``old_m``'s system fields; finalizers may
    only be removed from an object being deleted (kube forbids adds)."""
    for keep in _KEPT_ON_UPDATE:
        if keep in old_m:
            m[keep] = old_m[keep]
        else:
            m.pop(keep, None)
    m.pop("selfLink", None)
    m["resourceVersion"] = old_m["resourceVersion"]
    if old_m.get("deletionTimestamp"):
        old_finalizers = set(old_m.get("finalizers") or [])
        m["finalizers"] = [f for f in m.get("finalizers") or [] if f in old_finalizers]
        if not m["finalizers"]:
            del m["finalizers"]


def _uid_precondition_failed(res: Resource, name: str, sent: Any, stored: Any) -> errors.APIError:
    return errors.conflict(
        res.plural,
        name,
        res.group,
        f"Precondition failed: UID in precondition: {sent}, UID in object meta: {stored}",
    )


def check_update_preconditions(res: Resource, name: str, m_in: Obj, old_m: Obj) -> None:
    """409 if the body's resourceVersion or uid names another version or object than the
    stored one."""
    rv = m_in.get("resourceVersion")
    if rv and str(rv) != old_m["resourceVersion"]:
        raise errors.conflict(
            res.plural,
            name,
            res.group,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )
    if m_in.get("uid") and m_in["uid"] != old_m["uid"]:
        raise _uid_precondition_failed(res, name, m_in["uid"], old_m["uid"])


def check_delete_preconditions(res: Resource, name: str, m: Obj, options: DeleteOptions) -> None:
    """409 if a DELETE's preconditions name another object or version than the stored one."""
    if options.precondition_uid and options.precondition_uid != m.get("uid"):
        raise _uid_precondition_failed(res, name, options.precondition_uid, m.get("uid"))
    sent_rv = options.precondition_resource_version
    if sent_rv and sent_rv != m.get("resourceVersion"):
        raise errors.conflict(
            res.plural,
            name,
            res.group,
            f"Precondition failed: ResourceVersion in precondition: {sent_rv}, "
            f"ResourceVersion in object meta: {m.get('resourceVersion')}",
        )
