"""Pure pod helpers of the ReplicaSet controller: activity, readiness, availability and
slow-start batching (KCM controller_utils.go, replica_set.go). The deletion ranking is
:mod:`pycm.controllers.replicaset.ranking`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pycm.api.meta import parse_time

__all__ = [
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminating",
    "ready_since",
    "slow_start_batch",
]

Obj = Mapping[str, Any]


def is_pod_active(pod: Obj) -> bool:
    """Not Succeeded, not Failed, not being deleted (controller.IsPodActive)."""
    phase = (pod.get("status") or {}).get("phase")
    meta = pod.get("metadata") or {}
    return phase not in ("Succeeded", "Failed") and not meta.get("deletionTimestamp")


def is_pod_terminating(pod: Obj) -> bool:
    """Being deleted and not yet Succeeded or Failed (controller.IsPodTerminating): what
    ``status.terminatingReplicas`` counts."""
    phase = (pod.get("status") or {}).get("phase")
    meta = pod.get("metadata") or {}
    return phase not in ("Succeeded", "Failed") and bool(meta.get("deletionTimestamp"))


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
