"""The ReplicaSet controller end to end: ``pycm run`` against the emulator with its kubelet.

Scaling, replacement of deleted pods, convergence through injected API errors and latency
without ever running more pods than asked, the reconcile spans in the trace and the metrics.
"""

from __future__ import annotations

from typing import Any

import pytest

from pycm.trace.recorder import read_events
from tests.e2e_controllers.conftest import (
    MANAGER_USER,
    POD_PATH,
    RS_PATH,
    Cluster,
    Watch,
    poll,
)
from tests.support.manifests import workload

pytestmark = pytest.mark.e2e


def _live(pod: dict[str, Any]) -> bool:
    return "deletionTimestamp" not in pod["metadata"]


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def count_pods(spec_replicas: list[int]) -> Any:
    """A watch check: the live pods never exceed the size asked.

    The bound is exactly ``replicas``, with no slack: the controller creates at most
    ``replicas − live`` pods per sync and only once its expectations for earlier creates and
    deletes are met, so even a failed or slow write cannot make it overshoot. ``spec_replicas``
    is a one-element list holding the bound; a test raises it before a scale-up and lowers it
    only once a scale-down has settled.
    """

    def check(watch: Watch, event: dict[str, Any]) -> None:
        live = sum(1 for p in watch.objects.values() if _live(p))
        if live > spec_replicas[0]:
            watch.violations.append(f"{live} live pods > {spec_replicas[0]} after {event['type']}")

    return check


async def _settled(c: Cluster, name: str, replicas: int) -> bool:
    pods = [p for p in await c.items(POD_PATH) if _live(p)]
    if len(pods) != replicas or not all(_ready(p) for p in pods):
        return False
    rs = await c.get(f"{RS_PATH}/{name}")
    status = rs.get("status") or {}
    return (
        status.get("replicas", 0) == replicas
        and status.get("readyReplicas", 0) == replicas
        and status.get("observedGeneration") == rs["metadata"]["generation"]
    )


async def _scale(c: Cluster, name: str, replicas: int) -> None:
    await c.patch(f"{RS_PATH}/{name}", {"spec": {"replicas": replicas}})


@pytest.mark.asyncio
async def test_replicaset_scales_up_and_down_with_ready_pods(cluster: Cluster) -> None:
    asked = [5]
    pods = cluster.watch(POD_PATH, count_pods(asked))
    await cluster.watching()
    await cluster.create(RS_PATH, workload("ReplicaSet", "web", 5))
    await poll(lambda: _settled(cluster, "web", 5))
    asked[0] = 12
    await _scale(cluster, "web", 12)
    await poll(lambda: _settled(cluster, "web", 12))
    await _scale(cluster, "web", 3)
    await poll(lambda: _settled(cluster, "web", 3))
    asked[0] = 3
    # Once scaled down, no further pod is created: 12 were ever made, never more.
    assert sum(1 for e in pods.events if e["type"] == "ADDED") == 12
    assert pods.violations == []
    owners = {p["metadata"]["ownerReferences"][0]["name"] for p in pods.objects.values()}
    assert owners == {"web"}


@pytest.mark.asyncio
async def test_replicaset_replaces_deleted_pods(cluster: Cluster) -> None:
    await cluster.create(RS_PATH, workload("ReplicaSet", "web", 4))
    await poll(lambda: _settled(cluster, "web", 4))
    before = {p["metadata"]["name"] for p in await cluster.items(POD_PATH)}
    victims = sorted(before)[:2]
    for name in victims:
        r = await cluster.api.delete(f"{POD_PATH}/{name}")
        assert r.status_code == 200, r.text
    await poll(lambda: _settled(cluster, "web", 4))
    after = {p["metadata"]["name"] for p in await cluster.items(POD_PATH)}
    assert not after & set(victims)
    assert len(after - before) == 2


@pytest.mark.parametrize(
    "emulator_options",
    [
        {
            "tls": False,
            "kubelet": True,
            "pod_ready_delay": 0.0,
            "pod_terminate_delay": 3.0,  # a deleted pod stays terminating for 3 s
            "nodes": 2,
        }
    ],
)
@pytest.mark.asyncio
async def test_replicaset_reports_terminating_replicas(cluster: Cluster) -> None:
    # KCM 1.36 (DeploymentReplicaSetTerminatingReplicas, on): a deleted pod is replaced at
    # once and counted in status.terminatingReplicas until the kubelet confirms it gone.
    await cluster.create(RS_PATH, workload("ReplicaSet", "web", 3))
    await poll(lambda: _settled(cluster, "web", 3))
    rs = await cluster.get(f"{RS_PATH}/web")
    assert rs["status"]["terminatingReplicas"] == 0
    victim = sorted(p["metadata"]["name"] for p in await cluster.items(POD_PATH))[0]
    r = await cluster.api.delete(f"{POD_PATH}/{victim}")
    assert r.status_code == 200, r.text

    async def terminating(count: int) -> bool:
        status = (await cluster.get(f"{RS_PATH}/web")).get("status") or {}
        return status.get("terminatingReplicas") == count and status.get("replicas") == 3

    await poll(lambda: terminating(1))
    await poll(lambda: terminating(0))


# Error faults fail the first ``count`` matching requests (deterministic, unlike a rate);
# latency holds for the whole test. Every fault lasts at most 30 s and is scoped to the
# manager's user, so the test's own reads are undisturbed.
@pytest.mark.parametrize(
    "faults",
    [
        pytest.param(
            [{"kind": "error", "status": 500, "count": 4, "resource": "pods", "verb": "create"}],
            id="pod-creates-500",
        ),
        pytest.param(
            [
                {"kind": "error", "status": 409, "count": 3, "resource": "replicasets/status"},
                {"kind": "error", "status": 409, "count": 2, "resource": "pods", "verb": "delete"},
            ],
            id="conflicts",
        ),
        pytest.param(
            [{"kind": "latency", "seconds": 0.05, "resource": "pods"}],
            id="latency",
        ),
        pytest.param(
            [
                {"kind": "error", "status": 500, "rate": 0.2, "count": 10},
                {"kind": "error", "status": 429, "count": 2, "resource": "pods"},
                {"kind": "latency", "seconds": 0.02},
            ],
            id="everything",
        ),
    ],
)
@pytest.mark.asyncio
async def test_replicaset_converges_through_api_faults_without_extra_pods(
    cluster: Cluster, faults: list[dict[str, Any]]
) -> None:
    asked = [10]
    pods = cluster.watch(POD_PATH, count_pods(asked))
    await cluster.watching()
    added = [cluster.emu.faults.add({**f, "duration": 30, "user": MANAGER_USER}) for f in faults]
    await cluster.create(RS_PATH, workload("ReplicaSet", "web", 10))
    await poll(lambda: _settled(cluster, "web", 10), timeout=30)
    await _scale(cluster, "web", 4)
    await poll(lambda: _settled(cluster, "web", 4), timeout=30)
    asked[0] = 4
    await _scale(cluster, "web", 7)
    asked[0] = 7
    await poll(lambda: _settled(cluster, "web", 7), timeout=30)
    assert pods.violations == []
    # The faults were really in the way (each one hit at least once).
    assert all(f.hits > 0 for f in added), [(f.describe(), f.hits) for f in added]


@pytest.mark.asyncio
async def test_replicaset_reconciles_are_traced_with_api_calls_and_counted(
    cluster: Cluster,
) -> None:
    await cluster.create(RS_PATH, workload("ReplicaSet", "web", 3))
    await poll(lambda: _settled(cluster, "web", 3))
    metrics = await cluster.metrics()
    reconciles = [
        line
        for line in metrics.splitlines()
        if line.startswith("controller_runtime_reconcile_total{")
        and 'controller="replicaset"' in line
    ]
    assert any(float(line.rsplit(" ", 1)[1]) > 0 for line in reconciles), reconciles
    adds = [
        line
        for line in metrics.splitlines()
        if line.startswith("workqueue_adds_total{") and 'name="replicaset"' in line
    ]
    assert adds and float(adds[0].rsplit(" ", 1)[1]) > 0, [
        line for line in metrics.splitlines() if "workqueue_adds" in line
    ]

    async def recorded() -> list[Any]:
        events = list(read_events(cluster.trace))
        begins = [
            e
            for e in events
            if e.KIND == "reconcile.begin" and getattr(e, "controller", "") == "replicaset"
        ]
        return events if begins else []

    events = await poll(recorded, timeout=10)
    begins = {
        e.span_id: e
        for e in events
        if e.KIND == "reconcile.begin" and getattr(e, "controller", "") == "replicaset"
    }
    all_ends = [
        e
        for e in events
        if e.KIND == "reconcile.end" and getattr(e, "controller", "") == "replicaset"
    ]
    ends = {e.span_id: e for e in all_ends}
    # One reconcile step per sync: each end closes one begin (same span and trace id), span
    # ids are unique, and only syncs still running (at most the 5 workers) lack their end.
    assert ends, "no finished replicaset reconcile in the trace"
    assert len(ends) == len(all_ends)
    assert set(ends) <= set(begins)
    assert len(set(begins) - set(ends)) <= 5
    for span, end in ends.items():
        assert end.trace_id == begins[span].trace_id
    # Every write the controller made is a child of the reconcile that made it.
    pod_writes = [
        e
        for e in events
        if e.KIND == "api.request" and e.resource == "pods" and e.verb in ("create", "delete")
    ]
    assert len(pod_writes) == 3
    for call in pod_writes:
        assert call.parent_id in begins, call
        assert call.trace_id == begins[call.parent_id].trace_id
        assert ends[call.parent_id].action == "created_pods"
    status_writes = [
        e
        for e in events
        if e.KIND == "api.request" and e.resource == "replicasets" and e.subresource == "status"
    ]
    assert status_writes
    assert all(call.parent_id in begins for call in status_writes)
