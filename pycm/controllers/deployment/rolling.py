"""The RollingUpdate strategy (KCM deployment/rolling.go).

Each sync does one step: scale the new ReplicaSet up as far as maxSurge allows; if it did not
change, scale old ones down as far as maxUnavailable allows — unhealthy old replicas first —
and when the rollout is complete, trim the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.progress import sync_rollout_status
from pycm.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)

__all__ = [
    "cleanup_unhealthy_replicas",
    "reconcile_new_replica_set",
    "reconcile_old_replica_sets",
    "rollout_rolling",
    "scale_down_old_replica_sets_for_rolling_update",
]

Obj = dict[str, Any]


def _available(rs: Obj) -> int:
    return int((rs.get("status") or {}).get("availableReplicas") or 0)


async def reconcile_new_replica_set(
    ctx: SyncContext, all_rss: Sequence[Obj | None], new_rs: Obj, deployment: Obj
) -> bool:
    """Scale the new RS towards the deployment's size (down at once if above it)."""
    replicas = util.replicas_of(deployment)
    current = util.replicas_of(new_rs)
    if current == replicas:
        return False
    if current > replicas:
        scaled, _ = await scale_replica_set_and_record_event(ctx, new_rs, replicas, deployment)
        return scaled
    target = replacement.new_rs_new_replicas(
        deployment, all_rss, new_rs, gate=ctx.pod_replacement_policy
    )
    scaled, _ = await scale_replica_set_and_record_event(ctx, new_rs, target, deployment)
    return scaled


async def reconcile_old_replica_sets(
    ctx: SyncContext,
    all_rss: Sequence[Obj | None],
    old_rss: Sequence[Obj],
    new_rs: Obj | None,
    deployment: Obj,
) -> bool:
    """Scale old ReplicaSets down while availability allows; returns whether any was."""
    if util.get_replica_count(old_rss) == 0:
        return False
    all_pods = util.get_replica_count(all_rss)
    minimum = util.replicas_of(deployment) - util.max_unavailable(deployment)
    new_unavailable = 0
    if new_rs is not None:
        new_unavailable = util.replicas_of(new_rs) - _available(new_rs)
    max_scaled_down = all_pods - minimum - new_unavailable
    if max_scaled_down <= 0:
        return False
    # Unhealthy old replicas can go first: removing them costs no availability.
    old_list, cleaned = await cleanup_unhealthy_replicas(ctx, old_rss, deployment, max_scaled_down)
    scaled_down = await scale_down_old_replica_sets_for_rolling_update(
        ctx, [*old_list, new_rs], old_list, deployment
    )
    return cleaned + scaled_down > 0


async def cleanup_unhealthy_replicas(
    ctx: SyncContext, old_rss: Sequence[Obj], deployment: Obj, max_cleanup: int
) -> tuple[list[Obj], int]:
    """Scale old RSs down by their unavailable replicas, oldest first, up to ``max_cleanup``."""
    ordered = sorted(old_rss, key=util.creation_key)
    total = 0
    for i, rs in enumerate(ordered):
        if total >= max_cleanup:
            break
        replicas = util.replicas_of(rs)
        # Available can exceed spec for a moment (the status still counts pods a scale-down
        # is removing): then nothing is unhealthy — never "clean up" by scaling up.
        if replicas == 0 or replicas <= _available(rs):
            continue
        count = min(max_cleanup - total, replicas - _available(rs))
        _, updated = await scale_replica_set_and_record_event(ctx, rs, replicas - count, deployment)
        total += count
        ordered[i] = updated
    return ordered, total


async def scale_down_old_replica_sets_for_rolling_update(
    ctx: SyncContext, all_rss: Sequence[Obj | None], old_rss: Sequence[Obj], deployment: Obj
) -> int:
    """Scale old RSs down, oldest first, by as many as are available above minAvailable.

    Deviation from KCM, on the safe side: KCM budgets from Σ status.availableReplicas, but an
    RS whose spec was just scaled down still reports the pods its controller is about to
    delete, so a sync in that window scales down twice for the same headroom and
    availability dips below the floor. An RS can only keep min(available, spec) of its
    available pods (its controller deletes unavailable pods first), so that is what counts.
    """
    minimum = util.replicas_of(deployment) - util.max_unavailable(deployment)
    available = sum(min(_available(rs), util.replicas_of(rs)) for rs in all_rss if rs is not None)
    if available <= minimum:
        return 0
    budget = available - minimum
    total = 0
    for rs in sorted(old_rss, key=util.creation_key):
        if total >= budget:
            break
        replicas = util.replicas_of(rs)
        if replicas == 0:
            continue
        count = min(replicas, budget - total)
        await scale_replica_set_and_record_event(ctx, rs, replicas - count, deployment)
        total += count
    return total


async def rollout_rolling(ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj]) -> None:
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, True)
    assert new_rs is not None  # created when missing
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    if await reconcile_new_replica_set(ctx, all_rss, new_rs, deployment):
        await sync_rollout_status(ctx, all_rss, new_rs, deployment)
        return
    active_old = util.filter_active_replica_sets(old_rss)
    if await reconcile_old_replica_sets(ctx, all_rss, active_old, new_rs, deployment):
        await sync_rollout_status(ctx, all_rss, new_rs, deployment)
        return
    if util.deployment_complete(deployment, deployment.get("status") or {}):
        await cleanup_deployment(ctx, old_rss, deployment)
    await sync_rollout_status(ctx, all_rss, new_rs, deployment)
