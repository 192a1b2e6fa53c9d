"""KCM's controller fixture for the ReplicaSet controller: preload the caches, call
sync(key), compare the recorded API actions."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pycm.cache.listwatch import FakeListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller.builder import ControllerBuilder
from pycm.controllers.replicaset.controller import ReplicaSetController
from pycm.kube.resources import PODS, REPLICASETS
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock

Obj = dict[str, Any]
NOW = 1_700_000_000.0


def _ts(seconds_ago: float) -> str:
    return dt.datetime.fromtimestamp(NOW - seconds_ago, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeClient:
    """Records every action; fails creates from the ``fail_create_from``-th one on."""

    def __init__(self, rs: Obj | None = None) -> None:
        self.actions: list[tuple[str, str]] = []
        self.created: list[Obj] = []
        self.status_writes: list[Obj] = []
        self.patches: list[tuple[str, Obj]] = []
        self.fail_create_from: int | None = None
        self.rs = rs
        self._n = 0

    async def create_pod(self, namespace: str, body: Obj) -> Obj:
        self._n += 1
        self.actions.append(("create", "pods"))
        if self.fail_create_from is not None and self._n >= self.fail_create_from:
            raise RuntimeError("pods is forbidden: exceeded quota")
        pod = {**body, "metadata": {**body["metadata"], "name": f"web-{self._n}"}}
        self.created.append(pod)
        return pod

    async def delete_pod(self, namespace: str, name: str) -> None:
        self.actions.append(("delete", f"pods/{name}"))

    async def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        self.actions.append(("patch", f"pods/{name}"))
        self.patches.append((name, patch))
        return {"metadata": {"name": name, **patch["metadata"]}}

    async def get_replica_set(self, namespace: str, name: str) -> Obj:
        self.actions.append(("get", f"replicasets/{name}"))
        assert self.rs is not None
        return self.rs

    async def update_replica_set_status(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", "replicasets/status"))
        self.status_writes.append(body["status"])
        return body


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def _rs(replicas: int, *, min_ready: int = 0, status: Obj | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "uid": "rs-uid",
            "generation": 2,
            "resourceVersion": "10",
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
        "status": status or {},
    }


def _pod(
    name: str,
    *,
    owned: bool = True,
    app: str = "web",
    node: str = "n1",
    phase: str = "Running",
    ready_for: float | None = 100.0,
    created_ago: float = 500,
    restarts: int = 0,
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": "prod",
        "uid": f"{name}-uid",
        "resourceVersion": "3",
        "labels": {"app": app},
        "creationTimestamp": _ts(created_ago),
    }
    if owned:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": "rs-uid",
                "controller": True,
            }
        ]
    conditions = []
    if ready_for is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": _ts(ready_for)})
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def _fixture(
    rs: Obj, pods: list[Obj], **gates: Any
) -> tuple[ReplicaSetController, FakeClient, Recorder]:
    clock = FakeClock(wall_start_ns=int(NOW * 1e9))
    bus = Bus()
    rs_informer = SharedIndexInformer(FakeListWatch(), "replicasets", clock=clock, bus=bus)
    pod_informer = SharedIndexInformer(FakeListWatch(), "pods", clock=clock, bus=bus)
    rs_informer.indexer.add(rs)
    for pod in pods:
        pod_informer.indexer.add(pod)
    client, recorder = FakeClient(rs), Recorder()
    builder = ControllerBuilder.standalone(
        "replicaset", {REPLICASETS: rs_informer, PODS: pod_informer}, clock=clock, bus=bus
    )
    controller = ReplicaSetController(builder, client=client, recorder=recorder, **gates)
    return controller, client, recorder


@pytest.mark.asyncio
async def test_scale_up_creates_the_missing_pods_with_owner_references() -> None:
    controller, client, recorder = _fixture(_rs(5), [])
    result = await controller.sync("prod/web")
    assert client.actions == [("create", "pods")] * 5 + [("update", "replicasets/status")]
    pod = client.created[0]
    assert pod["metadata"]["generateName"] == "web-"
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "rs-uid"
    assert pod["metadata"]["ownerReferences"][0]["controller"] is True
    assert pod["spec"] == {"containers": [{"name": "c", "image": "nginx"}]}
    assert recorder.events[0] == ("SuccessfulCreate", "Created pod: web-1")
    assert controller.expectations.get("prod/web") == (5, 0)
    assert client.status_writes[-1]["observedGeneration"] == 2
    assert result.action == "created_pods"


@pytest.mark.asyncio
async def test_a_failing_batch_stops_the_slow_start_and_sets_replica_failure() -> None:
    controller, client, recorder = _fixture(_rs(10), [])
    client.fail_create_from = 3  # batch 1: one ok; batch 2: one ok, one fails → stop
    with pytest.raises(RuntimeError, match="exceeded quota"):
        await controller.sync("prod/web")
    assert client.actions.count(("create", "pods")) == 3
    # 10 expected, 2 made, 8 skipped → only the 2 made are still expected.
    assert controller.expectations.get("prod/web") == (2, 0)
    (failure,) = client.status_writes[-1]["conditions"]
    assert (failure["type"], failure["reason"], failure["status"]) == (
        "ReplicaFailure",
        "FailedCreate",
        "True",
    )
    assert ("FailedCreate", "Error creating: pods is forbidden: exceeded quota") in recorder.events


@pytest.mark.asyncio
async def test_scale_down_deletes_the_lowest_ranked_pods_first() -> None:
    pods = [
        _pod("ready-old", ready_for=300, created_ago=900),
        _pod("unassigned", node="", phase="Pending", ready_for=None),
        _pod("not-ready", ready_for=None),
        _pod("ready-new", ready_for=10, created_ago=20),
        _pod("crashy", ready_for=300, created_ago=900, restarts=5),
    ]
    controller, client, _ = _fixture(_rs(2), pods)
    await controller.sync("prod/web")
    deleted = [name for verb, name in client.actions if verb == "delete"]
    assert deleted == ["pods/unassigned", "pods/not-ready", "pods/ready-new"]
    assert controller.expectations.expected_deletions("prod/web") == {
        "prod/unassigned",
        "prod/not-ready",
        "prod/ready-new",
    }


@pytest.mark.asyncio
async def test_matching_orphans_are_adopted_after_a_live_check() -> None:
    controller, client, _ = _fixture(_rs(1), [_pod("orphan", owned=False)])
    await controller.sync("prod/web")
    assert client.actions[:2] == [("get", "replicasets/web"), ("patch", "pods/orphan")]
    assert ("create", "pods") not in client.actions  # the adopted pod counts
    refs = client.patches[0][1]["metadata"]["ownerReferences"]
    assert refs[0]["uid"] == "rs-uid"


@pytest.mark.asyncio
async def test_owned_pod_whose_labels_changed_is_released_and_replaced() -> None:
    controller, client, _ = _fixture(_rs(1), [_pod("drifted", app="debug")])
    await controller.sync("prod/web")
    assert client.actions[0] == ("patch", "pods/drifted")
    assert client.patches[0][1]["metadata"]["ownerReferences"] is None
    assert client.actions.count(("create", "pods")) == 1


@pytest.mark.asyncio
async def test_status_counts_and_requeue_for_min_ready_seconds() -> None:
    pods = [_pod("a", ready_for=5), _pod("b", ready_for=50), _pod("c", ready_for=None)]
    controller, client, _ = _fixture(_rs(3, min_ready=30), pods)
    result = await controller.sync("prod/web")
    status = client.status_writes[-1]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (3, 2, 1)
    assert status["fullyLabeledReplicas"] == 3
    assert result.requeue_after == 0  # not all ready yet: no min-ready requeue
    pods = [_pod("a", ready_for=5), _pod("b", ready_for=50), _pod("c", ready_for=1)]
    controller, client, _ = _fixture(_rs(3, min_ready=30), pods)
    result = await controller.sync("prod/web")
    assert result.requeue_after == 30


@pytest.mark.asyncio
async def test_unsatisfied_expectations_gate_manage_replicas() -> None:
    controller, client, _ = _fixture(_rs(3), [])
    controller.expectations.expect_creations("prod/web", 3)
    await controller.sync("prod/web")
    assert ("create", "pods") not in client.actions


@pytest.mark.asyncio
async def test_unchanged_status_is_not_written() -> None:
    status = {
        "replicas": 1,
        "fullyLabeledReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "terminatingReplicas": 0,
        "observedGeneration": 2,
    }
    controller, client, _ = _fixture(_rs(1, status=status), [_pod("a")])
    result = await controller.sync("prod/web")
    assert client.actions == []
    assert result.action == "noop"


_COUNTS = {
    "replicas": 1,
    "fullyLabeledReplicas": 1,
    "readyReplicas": 1,
    "availableReplicas": 1,
    "observedGeneration": 2,
}


@pytest.mark.parametrize(
    ("gate", "old_status", "written"),
    [
        # KCM 1.36 (gate on): a status without the field gets terminatingReplicas: 0 — a
        # pointer, so absent and 0 differ (updateReplicaSetStatus' ptr.Equal).
        pytest.param(True, _COUNTS, {**_COUNTS, "terminatingReplicas": 0}, id="on-adds-0"),
        # Gate off: the field is dropped (KCM's nil), and a status without it is left alone.
        pytest.param(False, {**_COUNTS, "terminatingReplicas": 2}, _COUNTS, id="off-drops-it"),
        pytest.param(False, _COUNTS, None, id="off-unchanged"),
    ],
)
@pytest.mark.asyncio
async def test_terminating_replicas_field_follows_the_gate(
    gate: bool, old_status: Obj, written: Obj | None
) -> None:
    controller, client, _ = _fixture(
        _rs(1, status=dict(old_status)), [_pod("a")], terminating_replicas=gate
    )
    await controller.sync("prod/web")
    assert client.status_writes == ([] if written is None else [written])


def _terminating(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = _ts(1)
    return pod


@pytest.mark.asyncio
async def test_terminating_replicas_counts_own_matching_pods_being_deleted() -> None:
    # Adapted from KCM's TestCalculateStatus ("1 fully labelled pod and 1 terminating pod …"):
    # the count is the pods controlled by this ReplicaSet, matching its selector, with a
    # deletionTimestamp and not yet Succeeded/Failed (FilterTerminatingPods +
    # FilterClaimedPods); they are not active, so the ReplicaSet replaces them at once.
    pods = [
        _pod("a"),
        _terminating(_pod("going-1")),
        _terminating(_pod("going-2", phase="Pending", ready_for=None)),
        _terminating(_pod("done", phase="Succeeded")),  # terminal: not counted
        _terminating(_pod("failed", phase="Failed")),  # terminal: not counted
        _terminating(_pod("orphan", owned=False)),  # not controlled by this ReplicaSet
        _terminating(_pod("relabelled", app="other")),  # no longer matches the selector
    ]
    controller, client, _ = _fixture(_rs(2), pods)
    await controller.sync("prod/web")
    assert client.actions.count(("create", "pods")) == 1  # replaces the terminating ones
    (status,) = client.status_writes
    assert (status["replicas"], status["terminatingReplicas"]) == (1, 2)


@pytest.mark.asyncio
async def test_deleted_replica_set_forgets_its_expectations() -> None:
    controller, client, _ = _fixture(_rs(1), [])
    controller.expectations.expect_creations("prod/gone", 2)
    result = await controller.sync("prod/gone")
    assert controller.expectations.get("prod/gone") is None
    assert client.actions == []
    assert result.action == "deleted"


@pytest.mark.asyncio
async def test_sorted_scale_down_observes_the_deletion_age_ratio() -> None:
    from prometheus_client import CollectorRegistry

    from pycm.controllers.replicaset.metrics import ReplicaSetMetrics

    registry = CollectorRegistry()
    pods = [
        _pod("young", ready_for=50, created_ago=100),
        _pod("old", ready_for=50, created_ago=250),
        _pod("older", ready_for=50, created_ago=460),
    ]
    controller, client, _ = _fixture(_rs(2), pods, rs_metrics=ReplicaSetMetrics(registry))
    await controller.sync("prod/web")
    assert [name for verb, name in client.actions if verb == "delete"] == ["pods/young"]
    name = "replicaset_controller_sorting_deletion_age_ratio"
    assert registry.get_sample_value(f"{name}_count") == 1
    assert registry.get_sample_value(f"{name}_sum") == 1.0  # the youngest over itself
