"""``spec.podReplacementPolicy`` in the deployment controller (gate DeploymentPodReplacementPolicy):
KCM's TestDeploymentController_reconcileNewReplicaSet table (rolling_test.go, its
podReplacementPolicy cases) run through :func:`rolling.reconcile_new_replica_set`, and the
Recreate wait under TerminationStarted."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.controllers.deployment import replacement
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.recreate import old_pods_running
from pycm.controllers.deployment.rolling import reconcile_new_replica_set

Obj = dict[str, Any]

COMPLETE, STARTED = replacement.TERMINATION_COMPLETE, replacement.TERMINATION_STARTED


class ScaleClient:
    """Records ReplicaSet updates; any other call fails the test."""

    def __init__(self) -> None:
        self.updated: list[Obj] = []

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.updated.append(copy.deepcopy(body))
        return body

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected API call {name}")


class Recorder:
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        pass


def _rs(name: str, spec: int, replicas: int, terminating: int | None, observed: int = 1) -> Obj:
    """KCM's newRSWithFullStatus: the ReplicaSet observed (generation 1) unless ``observed``
    is 0, its status as given."""
    status: Obj = {"replicas": replicas, "observedGeneration": observed}
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    return {
        "metadata": {"name": name, "namespace": "ns", "generation": 1, "annotations": {}},
        "spec": {"replicas": spec},
        "status": status,
    }


def _deployment(replicas: int, max_surge: int, policy: str | None) -> Obj:
    spec: Obj = {
        "replicas": replicas,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": 0},
        },
    }
    if policy is not None:
        spec["podReplacementPolicy"] = policy
    return {"metadata": {"name": "foo", "namespace": "ns", "annotations": {}}, "spec": spec}


# (replicas, maxSurge, policy, old spec, new spec, old terminating, new terminating,
#  old status.replicas, new status.replicas, new RS unsynced, expected new replicas or None for
#  no scale, or "error")
CASES = [
    pytest.param(
        10, 0, None, 10, 0, None, None, 0, 0, False, None, id="old-rs-saturated-no-scale-up"
    ),
    pytest.param(10, 2, None, 10, 0, None, None, 0, 0, False, 2, id="surge-old-rs-saturated"),
    pytest.param(10, 2, None, 5, 0, None, None, 0, 0, False, 7, id="surge"),
    pytest.param(10, 2, None, 10, 2, None, None, 0, 0, False, None, id="surge-saturated"),
    pytest.param(10, 2, None, 2, 11, None, None, 0, 0, False, 10, id="above-replicas-down"),
    pytest.param(10, 2, None, 5, 0, 1, 10, 0, 0, False, 7, id="empty-policy-ignores-terminating"),
    pytest.param(10, 2, STARTED, 5, 0, 1, 10, 0, 0, False, 7, id="started-ignores-terminating"),
    pytest.param(10, 0, COMPLETE, 5, 1, 0, 1, 0, 0, False, 4, id="complete-counts-terminating"),
    pytest.param(10, 0, COMPLETE, 5, 1, 1, None, 0, 0, True, 4, id="complete-unsynced-new-rs"),
    pytest.param(
        10, 0, COMPLETE, 5, 1, 1, None, 0, 0, False, "error", id="complete-unknown-terminating"
    ),
    pytest.param(10, 0, COMPLETE, 5, 1, 0, 0, 6, 1, False, 4, id="complete-counts-status-pods"),
    pytest.param(10, 2, COMPLETE, 5, 0, 1, 2, 0, 1, False, 3, id="complete-surge-and-status"),
    pytest.param(10, 2, COMPLETE, 5, 0, 1, 10, 0, 0, False, None, id="complete-no-room"),
]


async def _reconcile(
    deployment: Obj, all_rss: list[Obj | None], new_rs: Obj, gate: bool
) -> tuple[bool, ScaleClient]:
    client = ScaleClient()
    ctx = SyncContext(client, Recorder(), pod_replacement_policy=gate)  # type: ignore[arg-type]
    scaled = await reconcile_new_replica_set(ctx, all_rss, new_rs, deployment)
    return scaled, client


@pytest.mark.parametrize(
    (
        "replicas",
        "surge",
        "policy",
        "old_spec",
        "new_spec",
        "old_term",
        "new_term",
        "old_status",
        "new_status",
        "unsynced",
        "expected",
    ),
    CASES,
)
@pytest.mark.asyncio
async def test_reconcile_new_replica_set_kcm_cases(
    replicas: int,
    surge: int,
    policy: str | None,
    old_spec: int,
    new_spec: int,
    old_term: int | None,
    new_term: int | None,
    old_status: int,
    new_status: int,
    unsynced: bool,
    expected: int | str | None,
) -> None:
    new_rs = _rs("foo-v2", new_spec, new_status, new_term, observed=0 if unsynced else 1)
    old_rs = _rs("foo-v1", old_spec, old_status, old_term)
    deployment = _deployment(replicas, surge, policy)
    if expected == "error":
        with pytest.raises(replacement.TerminatingReplicasUnknownError, match="foo-v2"):
            await _reconcile(deployment, [new_rs, old_rs], new_rs, gate=True)
        return
    scaled, client = await _reconcile(deployment, [new_rs, old_rs], new_rs, gate=True)
    if expected is None:
        assert (scaled, client.updated) == (False, [])
    else:
        assert scaled
        assert [u["spec"]["replicas"] for u in client.updated] == [expected]


@pytest.mark.asyncio
async def test_complete_policy_is_ignored_with_the_gate_off() -> None:
    # KCM's "no room" case with the gate off: the field is not read, terminating pods do not
    # count, the new ReplicaSet surges to 7 as under TerminationStarted.
    new_rs = _rs("foo-v2", 0, 0, 10)
    old_rs = _rs("foo-v1", 5, 0, 1)
    scaled, client = await _reconcile(
        _deployment(10, 2, COMPLETE), [new_rs, old_rs], new_rs, gate=False
    )
    assert scaled
    assert [u["spec"]["replicas"] for u in client.updated] == [7]


@pytest.mark.parametrize(
    ("rss", "count"),
    [
        pytest.param([_rs("a", 5, 0, 0), _rs("b", 1, 0, 1)], 7, id="spec-plus-terminating"),
        pytest.param([_rs("a", 5, 6, 0), _rs("b", 1, 1, 0)], 7, id="status-above-spec"),
        pytest.param([_rs("a", 5, 0, 1), _rs("b", 0, 1, 2)], 9, id="status-and-terminating"),
        pytest.param([_rs("a", 3, 0, None, observed=0), None], 3, id="unobserved-no-field"),
    ],
)
def test_pod_count_with_terminating(rss: list[Obj | None], count: int) -> None:
    assert replacement.pod_count_with_terminating(rss) == count


@pytest.mark.parametrize(
    ("value", "gate", "policy"),
    [
        pytest.param(COMPLETE, True, COMPLETE, id="complete"),
        pytest.param(STARTED, True, STARTED, id="started"),
        pytest.param(None, True, None, id="unset"),
        pytest.param(COMPLETE, False, None, id="gate-off"),
        pytest.param("Invalid", True, None, id="invalid-ignored"),
    ],
)
def test_policy_of(value: str | None, gate: bool, policy: str | None) -> None:
    assert replacement.policy_of(_deployment(1, 1, value), gate) == policy


def _pod(deleting: bool, phase: str = "Running") -> Obj:
    meta: Obj = {"name": "p"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("pods", "terminating_is_enough", "running"),
    [
        # Unset / TerminationComplete (KCM's TestOldPodsRunning): a terminating pod still runs.
        pytest.param([_pod(True)], False, True, id="complete-waits-for-terminating"),
        pytest.param([_pod(True, "Succeeded")], False, False, id="complete-finished"),
        # TerminationStarted: a terminating pod no longer holds the rollout back; one that has
        # not started terminating does.
        pytest.param([_pod(True)], True, False, id="started-terminating-is-enough"),
        pytest.param([_pod(True), _pod(False)], True, True, id="started-live-pod-waits"),
        pytest.param([_pod(False, "Pending")], True, True, id="started-pending-waits"),
    ],
)
def test_old_pods_running_per_policy(
    pods: list[Obj], terminating_is_enough: bool, running: bool
) -> None:
    old = _rs("old", 0, 0, len(pods))
    old["metadata"]["uid"] = "old-uid"
    assert old_pods_running(None, [old], {"old-uid": pods}, terminating_is_enough) is running


def test_old_pods_running_counts_non_terminating_status_replicas_under_every_policy() -> None:
    # status.replicas counts pods not being deleted: a ReplicaSet that still reports one has a
    # pod that has not started terminating.
    old = _rs("old", 0, 1, 0)
    assert old_pods_running(None, [old], {}, True) is True
    assert old_pods_running(None, [old], {}, False) is True


def _terminating(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("policy", "gate", "creates"),
    [
        pytest.param(STARTED, True, True, id="started-starts-beside-terminating"),
        pytest.param(COMPLETE, True, False, id="complete-waits"),
        pytest.param(None, True, False, id="unset-waits"),
        pytest.param(STARTED, False, False, id="gate-off-waits"),
    ],
)
async def test_recreate_sync_with_old_pods_terminating(
    policy: str | None, gate: bool, creates: bool
) -> None:
    # KCM's controller fixture (test_sync.py): the old ReplicaSet at 0, its last pod
    # terminating. Only TerminationStarted (with the gate on) starts the new ReplicaSet now.
    from tests.controllers.deployment.test_sync import _deployment as deployment
    from tests.controllers.deployment.test_sync import _fixture, _pod
    from tests.controllers.deployment.test_sync import _rs as rs

    extra = {} if policy is None else {"podReplacementPolicy": policy}
    d = deployment(2, "nginx:2", strategy="Recreate", **extra)
    old = rs("web-old", 0, "nginx:1")
    old["status"]["replicas"] = 0
    controller, client, _ = _fixture(d, [old], [_terminating(_pod("p1", old))])
    controller.pod_replacement_policy = gate
    await controller.sync("prod/web")
    if creates:
        (new,) = client.created
        assert new["spec"]["replicas"] == 2
    else:
        assert client.created == []
