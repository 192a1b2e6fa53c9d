"""Rollout status and the progress deadline (KCM deployment/progress.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pycm.api.meta import parse_time
from pycm.controllers.deployment import util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.sync import calculate_status, status_equal, update_status

__all__ = ["requeue_stuck_deployment", "sync_rollout_status"]

Obj = dict[str, Any]


def _replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[Obj]:
    """ReplicaFailure conditions of the new RS first, else of any RS, as deployment ones."""

    def of(rs: Obj) -> list[Obj]:
        return [
            {
                "type": c.get("type"),
                "status": c.get("status"),
                "reason": c.get("reason"),
                "message": c.get("message"),
                "lastUpdateTime": c.get("lastTransitionTime"),
                "lastTransitionTime": c.get("lastTransitionTime"),
            }
            for c in (rs.get("status") or {}).get("conditions") or ()
            if c.get("type") == util.REPLICA_FAILURE
        ]

    if new_rs is not None:
        found = of(new_rs)
        if found:
            return found
    for rs in all_rss:
        if rs is not None:
            found = of(rs)
            if found:
                return found
    return []


def _rs_name(rs: Obj | None) -> str:
    return str(((rs or {}).get("metadata") or {}).get("name", ""))


async def sync_rollout_status(
    ctx: SyncContext, all_rss: Sequence[Obj | None], new_rs: Obj | None, deployment: Obj
) -> None:
    """Status with the Progressing condition (complete / progressing / timed out), the
    replica failures, and a requeue at the progress deadline."""
    now = ctx.now()
    status = calculate_status(all_rss, new_rs, deployment, now)
    if not util.has_progress_deadline(deployment):
        util.remove_condition(status, util.PROGRESSING)
    old_status = deployment.get("status") or {}
    current = util.get_condition(old_status, util.PROGRESSING)
    complete_already = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == util.NEW_RS_AVAILABLE
    )
    if util.has_progress_deadline(deployment) and not complete_already:
        name = _rs_name(new_rs)
        if util.deployment_complete(deployment, status):
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING,
                    "True",
                    util.NEW_RS_AVAILABLE,
                    f'ReplicaSet "{name}" has successfully progressed.',
                    now,
                ),
            )
        elif util.deployment_progressing(deployment, status):
            condition = util.new_condition(
                util.PROGRESSING,
                "True",
                util.RS_UPDATED,
                f'ReplicaSet "{name}" is progressing.',
                now,
            )
            if current is not None and current.get("status") == "True":
                # Keep the transition time; refresh lastUpdateTime (the deadline restarts).
                condition["lastTransitionTime"] = current.get("lastTransitionTime")
                util.remove_condition(status, util.PROGRESSING)
            util.set_condition(status, condition)
        elif util.deployment_timed_out(deployment, status, now):
            util.set_condition(
                status,
                util.new_condition(
                    util.PROGRESSING,
                    "False",
                    util.TIMED_OUT,
                    f'ReplicaSet "{name}" has timed out progressing.',
                    now,
                ),
            )
    failures = _replica_failures(all_rss, new_rs)
    if failures:
        util.set_condition(status, failures[0])
    else:
        util.remove_condition(status, util.REPLICA_FAILURE)
    if not status.get("conditions"):
        status.pop("conditions", None)
    if status_equal(old_status, status):
        requeue_stuck_deployment(ctx, deployment, status)
        return
    await update_status(ctx, deployment, status)


def requeue_stuck_deployment(ctx: SyncContext, deployment: Obj, new_status: Obj) -> None:
    """Come back when the progress deadline would pass (+1 s), so a stalled rollout is
    marked ProgressDeadlineExceeded without waiting for another event."""
    current = util.get_condition(deployment.get("status") or {}, util.PROGRESSING)
    if not util.has_progress_deadline(deployment) or current is None:
        return
    if util.deployment_complete(deployment, new_status) or current.get("reason") == util.TIMED_OUT:
        return
    stamp = current.get("lastUpdateTime")
    if not stamp:
        return
    deadline = int((deployment.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    after = parse_time(stamp).timestamp() + deadline - ctx.now()
    if after < 1.0:
        ctx.requeue = True
    else:
        ctx.requeue_after = after + 1.0
