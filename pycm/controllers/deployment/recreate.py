"""The Recreate strategy (KCM deployment/recreate.go): old ReplicaSets to zero, wait until
no old pod runs, then the new ReplicaSet at full size — old and new never run together (with
podReplacementPolicy TerminationStarted the wait ends once every old pod is terminating)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.progress import sync_rollout_status
from pycm.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)

__all__ = ["old_pods_running", "rollout_recreate"]

Obj = dict[str, Any]


def old_pods_running(
    new_rs: Obj | None,
    old_rss: Sequence[Obj],
    pod_map: Mapping[str, Sequence[Obj]],
    terminating_is_enough: bool = False,
) -> bool:
    """Does an old pod still run — or, with ``terminating_is_enough`` (podReplacementPolicy
    TerminationStarted, replacement.py), one that has not started terminating?

    status.replicas counts only pods not being deleted, so it answers both questions alike."""
    if util.get_status_replica_count(old_rss) > 0:
        return True
    new_uid = ((new_rs or {}).get("metadata") or {}).get("uid")
    for rs_uid, pods in pod_map.items():
        if new_rs is not None and rs_uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue  # finished pods do not count
            if terminating_is_enough and (pod.get("metadata") or {}).get("deletionTimestamp"):
                continue  # terminating: its replacement may start
            return True
    return False


async def rollout_recreate(
    ctx: SyncContext, deployment: Obj, rs_list: Sequence[Obj], pod_map: Mapping[str, Sequence[Obj]]
) -> None:
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    scaled_down = False
    for rs in util.filter_active_replica_sets(old_rss):
        scaled, _ = await scale_replica_set_and_record_event(ctx, rs, 0, deployment)
        scaled_down = scaled_down or scaled
    if scaled_down:
        await sync_rollout_status(ctx, all_rss, new_rs, deployment)
        return
    enough = replacement.terminating_is_enough(deployment, ctx.pod_replacement_policy)
    if old_pods_running(new_rs, old_rss, pod_map, enough):
        await sync_rollout_status(ctx, all_rss, new_rs, deployment)
        return
    if new_rs is None:
        new_rs, old_rss = await get_all_replica_sets_and_sync_revision(
            ctx, deployment, rs_list, True
        )
        all_rss = [*old_rss, new_rs]
    assert new_rs is not None
    await scale_replica_set_and_record_event(ctx, new_rs, util.replicas_of(deployment), deployment)
    if util.deployment_complete(deployment, deployment.get("status") or {}):
        await cleanup_deployment(ctx, old_rss, deployment)
    await sync_rollout_status(ctx, all_rss, new_rs, deployment)
