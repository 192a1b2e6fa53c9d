"""Completion and the progress deadline under ``spec.podReplacementPolicy`` (gate
DeploymentPodReplacementPolicy), from KEP-3973's "Deployment Completion and Progress Changes":
a TerminationComplete rollout does not reach Progressing ``NewReplicaSetAvailable`` while any
of its pods terminate, and fewer terminating pods refresh Progressing's ``lastUpdateTime`` (the
deadline restarts). Driven through :func:`progress.rollout_status` (the build),
:func:`progress.rollout_status_unchanged` (the compare-first path, which must agree with it)
and :func:`progress.requeue_stuck_deployment`."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.progress import (
    requeue_stuck_deployment,
    rollout_status,
    rollout_status_unchanged,
)
from pycm.controllers.deployment.status import replica_counts, status_equal
from pycm.util.clock import FakeClock

Obj = dict[str, Any]
NOW = 1_700_000_000.0
NOW_TEXT = "2023-11-14T22:13:20Z"
RECENT = "2023-11-14T22:10:00Z"  # 200 s before NOW
LONG_AGO = "2023-11-14T21:00:00Z"  # past a 600 s deadline
COMPLETE, STARTED = replacement.TERMINATION_COMPLETE, replacement.TERMINATION_STARTED


def _progressing(reason: str, stamp: str = RECENT, status: str = "True") -> Obj:
    return {
        "type": util.PROGRESSING,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": "m",
    }


def _rs(name: str, replicas: int, terminating: int) -> Obj:
    return {
        "metadata": {"name": name, "uid": f"{name}-uid"},
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "terminatingReplicas": terminating,
        },
    }


def _world(
    policy: str | None, terminating_now: int, terminating_before: int | None, progressing: Obj
) -> tuple[Obj, list[Obj | None], Obj]:
    """A rollout whose new ReplicaSet is full and available and whose old one is scaled to 0
    with ``terminating_now`` pods still terminating; the deployment's status as the last sync
    wrote it (``terminating_before`` pods terminating then, its Progressing condition)."""
    new_rs = _rs("web-new", 3, 0)
    old_rs = _rs("web-old", 0, terminating_now)
    all_rss: list[Obj | None] = [old_rs, new_rs]
    spec: Obj = {
        "replicas": 3,
        "progressDeadlineSeconds": 600,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
    }
    if policy is not None:
        spec["podReplacementPolicy"] = policy
    deployment: Obj = {
        "metadata": {"name": "web", "namespace": "ns", "generation": 2},
        "spec": spec,
    }
    available: Obj = {
        **_progressing(util.MINIMUM_REPLICAS_AVAILABLE, LONG_AGO),
        "type": util.AVAILABLE,
    }
    status: Obj = {
        **replica_counts(all_rss, new_rs, deployment),
        "conditions": [available, progressing],
    }
    status["replicas"] = 4  # the last sync saw an old pod not yet terminating
    if terminating_before is None:
        status.pop("terminatingReplicas")
    else:
        status["terminatingReplicas"] = terminating_before
    deployment["status"] = status
    return deployment, all_rss, new_rs


def _reason(status: Obj) -> str | None:
    condition = util.get_condition(status, util.PROGRESSING)
    return None if condition is None else condition.get("reason")


@pytest.mark.parametrize(
    ("policy", "gate", "terminating", "reason"),
    [
        pytest.param(COMPLETE, True, 2, util.RS_UPDATED, id="complete-waits-for-terminating"),
        pytest.param(COMPLETE, True, 0, util.NEW_RS_AVAILABLE, id="complete-once-none-left"),
        pytest.param(COMPLETE, False, 2, util.NEW_RS_AVAILABLE, id="gate-off-does-not-wait"),
        pytest.param(STARTED, True, 2, util.NEW_RS_AVAILABLE, id="started-does-not-wait"),
        pytest.param(None, True, 2, util.NEW_RS_AVAILABLE, id="unset-does-not-wait"),
    ],
)
def test_rollout_completes_only_when_no_pod_terminates_under_termination_complete(
    policy: str | None, gate: bool, terminating: int, reason: str
) -> None:
    deployment, all_rss, new_rs = _world(policy, terminating, 3, _progressing(util.RS_UPDATED))
    status = rollout_status(all_rss, new_rs, deployment, NOW, gate=gate)
    assert _reason(status) == reason


def test_fewer_terminating_pods_restart_the_progress_deadline() -> None:
    # 3 → 2 terminating, everything else as before: progress. lastUpdateTime moves to now
    # (the deadline restarts), lastTransitionTime stays (the condition was True already).
    deployment, all_rss, new_rs = _world(COMPLETE, 2, 3, _progressing(util.RS_UPDATED, LONG_AGO))
    deployment["status"]["replicas"] = 3  # no other progress to see
    status = rollout_status(all_rss, new_rs, deployment, NOW, gate=True)
    condition = util.get_condition(status, util.PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", util.RS_UPDATED)
    assert condition["lastUpdateTime"] == NOW_TEXT
    assert condition["lastTransitionTime"] == LONG_AGO


@pytest.mark.parametrize(
    ("policy", "before"),
    [
        pytest.param(COMPLETE, 2, id="as-many-terminating"),
        pytest.param(STARTED, 3, id="started-fewer-is-no-progress"),
    ],
)
def test_stalled_termination_times_out(policy: str, before: int) -> None:
    deployment, all_rss, new_rs = _world(policy, 2, before, _progressing(util.RS_UPDATED, LONG_AGO))
    deployment["status"]["replicas"] = 3
    deployment["spec"]["replicas"] = 4  # not complete by the counts either: only time passes
    status = rollout_status(all_rss, new_rs, deployment, NOW, gate=True)
    assert _reason(status) == util.TIMED_OUT


def test_a_complete_deployment_stays_complete_when_pods_start_terminating() -> None:
    # The KEP delays *setting* NewReplicaSetAvailable; a scale-down after completion leaves
    # terminating pods but does not take completion back.
    deployment, all_rss, new_rs = _world(COMPLETE, 2, 0, _progressing(util.NEW_RS_AVAILABLE))
    deployment["status"]["replicas"] = 3
    status = rollout_status(all_rss, new_rs, deployment, NOW, gate=True)
    assert _reason(status) == util.NEW_RS_AVAILABLE


@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
def test_compare_first_agrees_with_the_build_while_pods_terminate(gate: bool) -> None:
    conditions = {
        "complete": _progressing(util.NEW_RS_AVAILABLE),
        "updated-recently": _progressing(util.RS_UPDATED),
        "updated-long-ago": _progressing(util.RS_UPDATED, LONG_AGO),
        "timed-out": _progressing(util.TIMED_OUT, LONG_AGO, "False"),
    }
    unchanged = 0
    for policy, now, before, progressing, replicas in itertools.product(
        (COMPLETE, STARTED, None), (0, 2), (None, 0, 2, 3), conditions, (3, 4)
    ):
        case = (policy, now, before, progressing, replicas)
        deployment, all_rss, new_rs = _world(policy, now, before, conditions[progressing])
        deployment["status"]["replicas"] = replicas
        counts = replica_counts(all_rss, new_rs, deployment)
        built = rollout_status(all_rss, new_rs, deployment, NOW, gate=gate)
        equal = status_equal(deployment["status"], built)
        assert rollout_status_unchanged(all_rss, new_rs, deployment, counts, NOW, gate=gate) is (
            equal
        ), case
        unchanged += equal
    assert unchanged  # the table holds settled cases too


@pytest.mark.parametrize(
    ("gate", "requeued"), [pytest.param(True, True, id="gate-on"), (False, False)]
)
def test_a_rollout_waiting_for_terminating_pods_is_requeued_at_its_deadline(
    gate: bool, requeued: bool
) -> None:
    deployment, all_rss, new_rs = _world(COMPLETE, 2, 2, _progressing(util.RS_UPDATED))
    status = rollout_status(all_rss, new_rs, deployment, NOW, gate=gate)
    ctx = SyncContext(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        FakeClock(wall_start_ns=int(NOW * 10**9)),
        pod_replacement_policy=gate,
    )
    requeue_stuck_deployment(ctx, deployment, status)
    # RECENT is 200 s ago: the 600 s deadline passes in 400 s, requeued 1 s after it.
    assert ctx.requeue_after == (pytest.approx(401.0) if requeued else None)
