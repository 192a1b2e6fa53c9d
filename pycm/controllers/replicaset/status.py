"""The ReplicaSet's status: computed from its claimed pods, written only when it changed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.controllers.replicaset.pods import is_pod_available, is_pod_ready

__all__ = ["REPLICA_FAILURE", "calculate_status", "status_unchanged"]

REPLICA_FAILURE = "ReplicaFailure"

Obj = Mapping[str, Any]


def _now_text(now: float) -> str:
    return dt.datetime.fromtimestamp(now, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def calculate_status(
    rs: Obj,
    pods: Sequence[Obj],
    manage_error: BaseException | None,
    diff: int,
    now: float,
    terminating: int | None = None,
) -> dict[str, Any]:
    """KCM's calculateStatus: counts from the claimed active pods and the ReplicaFailure
    condition (set on a create/delete error, removed once manageReplicas succeeds).
    ``terminating``: the pods of this ReplicaSet being deleted and not yet terminal, written as
    ``terminatingReplicas`` (gate ``DeploymentReplicaSetTerminatingReplicas``); None — the
    gate off — leaves the field out, so a write clears it, as KCM's nil pointer does."""
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully_labeled = ready = available = 0
    for pod in pods:
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        if all(pod_labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    old = rs.get("status") or {}
    conditions = [dict(c) for c in old.get("conditions") or ()]
    failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        conditions.append(
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "reason": "FailedCreate" if diff < 0 else "FailedDelete",
                "message": str(manage_error),
                "lastTransitionTime": _now_text(now),
            }
        )
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    status: dict[str, Any] = {
        "replicas": len(pods),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": old.get("observedGeneration", 0),
    }
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    if conditions:
        status["conditions"] = conditions
    return status


_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def status_unchanged(rs: Obj, status: Mapping[str, Any]) -> bool:
    old = rs.get("status") or {}
    generation = (rs.get("metadata") or {}).get("generation", 0)
    return (
        all(int(old.get(k) or 0) == int(status.get(k) or 0) for k in _COUNTS)
        # A pointer in KCM: absent and 0 differ (ptr.Equal).
        and old.get("terminatingReplicas") == status.get("terminatingReplicas")
        and int(old.get("observedGeneration") or 0) == int(generation or 0)
        and (old.get("conditions") or []) == (status.get("conditions") or [])
    )
