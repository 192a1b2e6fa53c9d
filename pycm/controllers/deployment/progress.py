"""Rollout status and the progress deadline (KCM deployment/progress.go)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pycm.api.meta import parse_time
from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.status import (
    available_condition,
    calculate_status,
    condition_unchanged,
    counts_unchanged,
    replica_counts,
    status_equal,
)
from pycm.controllers.deployment.sync import update_status

__all__ = [
    "requeue_stuck_deployment",
    "rollout_status",
    "rollout_status_unchanged",
    "sync_rollout_status",
]

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


def _complete(deployment: Obj, status: Mapping[str, Any], gate: bool) -> bool:
    """DeploymentComplete, and (podReplacementPolicy TerminationComplete) no pod terminating
    (replacement.py)."""
    return util.deployment_complete(deployment, status) and not replacement.completion_waits(
        deployment, gate, status
    )


def _progressing(deployment: Obj, status: Mapping[str, Any], gate: bool) -> bool:
    """DeploymentProgressing, or (TerminationComplete) fewer pods terminating."""
    return util.deployment_progressing(deployment, status) or replacement.termination_progressed(
        deployment, gate, status
    )


def _rs_name(rs: Obj | None) -> str:
    return str(((rs or {}).get("metadata") or {}).get("name", ""))


def rollout_status_unchanged(
    all_rss: Sequence[Obj | None],
    new_rs: Obj | None,
    deployment: Obj,
    counts: Mapping[str, int],
    now: float,
    *,
    gate: bool = False,
) -> bool:
    """Whether the status :func:`sync_rollout_status` builds would be equal to the one the
    deployment holds — read in place, decision by decision in the build's order: the counts,
    then each condition the build sets or removes (Available; Progressing by the progress
    deadline; ReplicaFailure) must already be as the build would leave it. False sends the
    sync to the build, which decides. ``gate``: DeploymentPodReplacementPolicy."""
    old = deployment.get("status") or {}
    if not counts_unchanged(old, counts):
        return False
    if not condition_unchanged(old, util.AVAILABLE, *available_condition(counts, deployment)):
        return False
    current = util.get_condition(old, util.PROGRESSING)
    if not util.has_progress_deadline(deployment):
        if current is not None:
            return False  # the build removes it
    elif not (
        counts["replicas"] == counts["updatedReplicas"]
        and current is not None
        and current.get("reason") == util.NEW_RS_AVAILABLE
    ):
        if _complete(deployment, counts, gate):
            if not condition_unchanged(old, util.PROGRESSING, "True", util.NEW_RS_AVAILABLE):
                return False
        elif _progressing(deployment, counts, gate):
            return False  # the build refreshes lastUpdateTime (and counts differ anyway)
        elif util.deployment_timed_out(deployment, old, now) and not condition_unchanged(
            old, util.PROGRESSING, "False", util.TIMED_OUT
        ):
            return False
    failures = _replica_failures(all_rss, new_rs)
    if failures:
        first = failures[0]
        return condition_unchanged(
            old, util.REPLICA_FAILURE, first.get("status"), first.get("reason")
        )
    return util.get_condition(old, util.REPLICA_FAILURE) is None


async def sync_rollout_status(
    ctx: SyncContext, all_rss: Sequence[Obj | None], new_rs: Obj | None, deployment: Obj
) -> None:
    """Status with the Progressing condition (complete / progressing / timed out), the
    replica failures, and a requeue at the progress deadline."""
    now = ctx.now()
    old_status = deployment.get("status") or {}
    terminating = ctx.terminating_replicas
    counts = replica_counts(all_rss, new_rs, deployment, terminating=terminating)
    gate = ctx.pod_replacement_policy
    if rollout_status_unchanged(all_rss, new_rs, deployment, counts, now, gate=gate):
        # Compared first, nothing built: the old status is the one the build would equal.
        requeue_stuck_deployment(ctx, deployment, old_status)
        return
    status = rollout_status(all_rss, new_rs, deployment, now, terminating=terminating, gate=gate)
    if status_equal(old_status, status):
        requeue_stuck_deployment(ctx, deployment, status)
        return
    await update_status(ctx, deployment, status)


def rollout_status(
    all_rss: Sequence[Obj | None],
    new_rs: Obj | None,
    deployment: Obj,
    now: float,
    *,
    terminating: bool = True,
    gate: bool = False,
) -> Obj:
    """The status a rollout sync builds (calculateStatus, then the Progressing condition by
    the progress deadline and the replica failures). ``gate``: DeploymentPodReplacementPolicy
    (a TerminationComplete rollout completes only once no pod terminates)."""
    status = calculate_status(all_rss, new_rs, deployment, now, terminating=terminating)
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
        if _complete(deployment, status, gate):
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
        elif _progressing(deployment, status, gate):
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
    return status


def requeue_stuck_deployment(ctx: SyncContext, deployment: Obj, new_status: Obj) -> None:
    """Come back when the progress deadline would pass (+1 s), so a stalled rollout is
    marked ProgressDeadlineExceeded without waiting for another event."""
    current = util.get_condition(deployment.get("status") or {}, util.PROGRESSING)
    if not util.has_progress_deadline(deployment) or current is None:
        return
    if (
        _complete(deployment, new_status, ctx.pod_replacement_policy)
        or current.get("reason") == util.TIMED_OUT
    ):
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
