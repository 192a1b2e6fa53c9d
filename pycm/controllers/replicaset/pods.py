"""Pure pod helpers of the ReplicaSet controller: activity, readiness, availability, the
deletion ranking, and slow-start batching (KCM controller_utils.go, replica_set.go)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pycm.api.meta import parse_time

__all__ = [
    "deletion_rank_key",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "pods_to_delete",
    "ready_since",
    "slow_start_batch",
]

Obj = Mapping[str, Any]

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def is_pod_active(pod: Obj) -> bool:
    """Not Succeeded, not Failed, not being deleted (controller.IsPodActive)."""
    phase = (pod.get("status") or {}).get("phase")
    meta = pod.get("metadata") or {}
    return phase not in ("Succeeded", "Failed") and not meta.get("deletionTimestamp")


def _ready_condition(pod: Obj) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition  # type: ignore[no-any-return]
    return None


def is_pod_ready(pod: Obj) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: Obj) -> float | None:
    """Unix seconds since which the pod has been Ready, or None."""
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    stamp = condition.get("lastTransitionTime")
    if not stamp:
        return None
    try:
        return parse_time(stamp).timestamp()
    except ValueError:
        return None


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (podutil.IsPodAvailable) at wall time ``now``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= now


def _deletion_cost(pod: Obj) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount", 0)) for s in statuses), default=0)


def _created(pod: Obj) -> float:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return math.inf  # no creation time sorts first ("empty < newer < older")
    try:
        return parse_time(stamp).timestamp()
    except ValueError:
        return math.inf


def deletion_rank_key(pod: Obj, rank: int) -> tuple[float, ...]:
    """Sort key: pods that sort first are deleted first (ActivePodsWithRanks.Less)."""
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase", "")
    ready = is_pod_ready(pod)
    since = ready_since(pod) if ready else None
    return (
        1.0 if spec.get("nodeName") else 0.0,  # unassigned < assigned
        float(_PHASE_ORDINAL.get(phase, 0)),  # pending < unknown < running
        1.0 if ready else 0.0,  # not ready < ready
        float(_deletion_cost(pod)),  # lower deletion cost first
        -float(rank),  # more pods of the same owner on its node first
        -(since or 0.0),  # ready for a shorter time first
        -float(_max_restarts(pod)),  # more restarts first
        -_created(pod),  # no creation time, then newer, then older
    )


def pods_to_delete(filtered: Sequence[Obj], related: Sequence[Obj], diff: int) -> list[Obj]:
    """The ``diff`` pods to delete, by rank (getPodsToDelete with pods doubled up on nodes)."""
    if diff >= len(filtered):
        return list(filtered)
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = (pod.get("spec") or {}).get("nodeName", "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = sorted(
        filtered,
        key=lambda p: deletion_rank_key(
            p, on_node.get((p.get("spec") or {}).get("nodeName", ""), 0)
        ),
    )
    return ranked[:diff]


async def slow_start_batch(
    count: int, initial_batch_size: int, fn: Callable[[], Awaitable[None]]
) -> tuple[int, BaseException | None]:
    """Call ``fn`` ``count`` times in batches of 1, 2, 4, … (concurrently within a batch),
    stopping after the first batch with a failure. Returns (successes, first error)."""
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        successes += batch - len(errors)
        for error in errors:
            if isinstance(error, asyncio.CancelledError):
                raise error
        if errors:
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None
