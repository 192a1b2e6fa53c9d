"""The deployment's status from its ReplicaSets (KCM sync.go calculateStatus), and the
read-only checks that let a settled sync see that nothing changed without building a status.

Every sync computes the status and writes it only when it differs from the one the
deployment holds (:func:`status_equal`: a missing field is its zero value). Building it costs a
new status, a new condition and a new condition list per sync, almost always to find it
equal; so the checks here compare first — the counts with the old status' fields, each
condition the build would set or remove with the one the old status holds — and only a
difference, or a shape they do not know, sends the sync to the build. They answer "unchanged"
only where the build would produce a status equal to the old one: tests compare the two over
tables of statuses that differ in one field at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pycm.controllers.deployment import util

__all__ = [
    "available_condition",
    "calculate_status",
    "condition_unchanged",
    "counts_unchanged",
    "replica_counts",
    "status_equal",
    "status_unchanged",
]

Obj = dict[str, Any]

# The fields of a status that calculate_status copies from the old one or builds apart from
# the counts: not compared as counts.
_NOT_COUNTS = frozenset({"conditions", "collisionCount"})
# A pointer in KCM's status (omitted when nil, written when 0): absent and 0 differ.
TERMINATING = "terminatingReplicas"


def replica_counts(
    all_rss: Sequence[Obj | None],
    new_rs: Obj | None,
    deployment: Mapping[str, Any],
    *,
    terminating: bool = True,
) -> dict[str, int]:
    """The numeric fields of the status (one pass over the ReplicaSets). ``terminating`` (gate
    ``DeploymentReplicaSetTerminatingReplicas``): add ``terminatingReplicas`` when the
    ReplicaSets tell it (:func:`util.get_terminating_replica_count`)."""
    replicas = ready = available = total = 0
    for rs in all_rss:
        if rs is None:
            continue
        status = rs.get("status") or {}
        replicas += int(status.get("replicas") or 0)
        ready += int(status.get("readyReplicas") or 0)
        available += int(status.get("availableReplicas") or 0)
        total += util.replicas_of(rs)
    updated = 0 if new_rs is None else int((new_rs.get("status") or {}).get("replicas") or 0)
    counts = {
        "observedGeneration": int((deployment.get("metadata") or {}).get("generation") or 0),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
    }
    if terminating:
        count = util.get_terminating_replica_count(all_rss)
        if count is not None:
            counts[TERMINATING] = count
    return counts


def available_condition(
    counts: Mapping[str, int], deployment: Mapping[str, Any]
) -> tuple[str, str]:
    """(status, reason) of the Available condition the counts call for."""
    if counts["availableReplicas"] >= util.replicas_of(deployment) - util.max_unavailable(
        deployment
    ):
        return "True", util.MINIMUM_REPLICAS_AVAILABLE
    return "False", util.MINIMUM_REPLICAS_UNAVAILABLE


_AVAILABLE_MESSAGES = {
    util.MINIMUM_REPLICAS_AVAILABLE: "Deployment has minimum availability.",
    util.MINIMUM_REPLICAS_UNAVAILABLE: "Deployment does not have minimum availability.",
}


def calculate_status(
    all_rss: Sequence[Obj | None],
    new_rs: Obj | None,
    deployment: Obj,
    now: float,
    *,
    terminating: bool = True,
) -> Obj:
    old = deployment.get("status") or {}
    counts = replica_counts(all_rss, new_rs, deployment, terminating=terminating)
    status: Obj = {
        **counts,
        # A new list of the same condition dicts: set_condition and remove_condition replace
        # the list and never edit a condition in place.
        "conditions": list(old.get("conditions") or ()),
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    available, reason = available_condition(counts, deployment)
    util.set_condition(
        status,
        util.new_condition(util.AVAILABLE, available, reason, _AVAILABLE_MESSAGES[reason], now),
    )
    return status


def status_equal(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Deep equality of two statuses, treating a missing field as its zero value (but for
    ``terminatingReplicas``, a pointer: absent and 0 differ)."""
    keys = set(old) | set(new)
    for key in keys:
        a, b = old.get(key), new.get(key)
        if key == TERMINATING:
            if a != b:
                return False
        elif key == "conditions":
            if (a or []) != (b or []):
                return False
        elif (a or 0) != (b or 0):
            return False
    return True


def counts_unchanged(old: Mapping[str, Any], counts: Mapping[str, int]) -> bool:
    """:func:`status_equal` over the fields other than the conditions and collisionCount
    (which calculate_status copies): each count as the old status has it, and no other field
    of the old status set."""
    for key, value in counts.items():
        if key == TERMINATING:
            if old.get(key) != value:
                return False
        elif (old.get(key) or 0) != value:
            return False
    for key, value in old.items():
        if key not in counts and key not in _NOT_COUNTS and (value or key == TERMINATING):
            return False
    return True


def condition_unchanged(old: Mapping[str, Any], type_: str, status: Any, reason: Any) -> bool:
    """Setting a ``type_`` condition with this status and reason leaves ``old``'s conditions
    as they are (util.set_condition changes nothing for the same status and reason)."""
    current = util.get_condition(old, type_)
    return (
        current is not None and current.get("status") == status and current.get("reason") == reason
    )


def status_unchanged(
    old: Mapping[str, Any], counts: Mapping[str, int], deployment: Mapping[str, Any]
) -> bool:
    """Whether :func:`calculate_status` from these counts is :func:`status_equal` to ``old``
    (the deployment's status): the counts are, and the Available condition is already set."""
    if not counts_unchanged(old, counts):
        return False
    return condition_unchanged(old, util.AVAILABLE, *available_condition(counts, deployment))
