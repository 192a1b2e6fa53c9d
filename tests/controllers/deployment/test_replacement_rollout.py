"""A rolling update under each ``spec.podReplacementPolicy``, end to end in one process: the
emulator (its kubelet keeps a deleted pod terminating for its grace period, capped by
``pod_terminate_delay``) and a manager running the deployment and ReplicaSet controllers with
``--feature-gates=DeploymentPodReplacementPolicy=true``. A pod watch counts every pod of the
Deployment, terminating ones included, after each event.

TerminationComplete: never more than replicas + maxSurge pods. TerminationStarted: a
replacement starts beside the pod it replaces while that one terminates, so the count goes
above the bound."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import orjson
import pytest

from pycm.sim.server import Emulator, run_emulator
from pycm.testing.manager import ManagerHandle

Obj = dict[str, Any]
NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
REPLICAS, SURGE = 3, 1
GATES = "--feature-gates=DeploymentPodReplacementPolicy=true"


def _deployment(policy: str) -> Obj:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": REPLICAS,
            "podReplacementPolicy": policy,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": SURGE, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{"name": "app", "image": "v1"}],
                },
            },
        },
    }


async def _watch_pod_count(http: httpx.AsyncClient, peak: list[int]) -> None:
    """Keep ``peak[0]`` the most pods (any phase, terminating included) seen at once."""
    listed = (await http.get(PODS)).json()
    pods = {p["metadata"]["name"] for p in listed["items"]}
    rv = listed["metadata"]["resourceVersion"]
    async with http.stream("GET", f"{PODS}?watch=1&resourceVersion={rv}", timeout=None) as r:
        async for line in r.aiter_lines():
            if not line:
                continue
            event = orjson.loads(line)
            if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            name = event["object"]["metadata"]["name"]
            if event["type"] == "DELETED":
                pods.discard(name)
            else:
                pods.add(name)
            peak[0] = max(peak[0], len(pods))


async def _rolled_out(http: httpx.AsyncClient, image: str) -> bool:
    d = (await http.get(f"{DEPLOYMENTS}/web")).json()
    status = d.get("status") or {}
    pods = (await http.get(PODS)).json()["items"]
    return (
        status.get("updatedReplicas") == REPLICAS
        and status.get("availableReplicas") == REPLICAS
        and len(pods) == REPLICAS
        and all(p["spec"]["containers"][0]["image"] == image for p in pods)
    )


async def _poll(check: Any, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def _peak_during_rollout(emu: Emulator, policy: str) -> int:
    headers = {"Authorization": f"Bearer {emu.admin_token}"}
    manager = ManagerHandle(
        emu.kubeconfig_path,
        ["deployment", "replicaset"],
        args=[GATES, "--kube-api-qps=500", "--kube-api-burst=1000"],
    )
    await asyncio.to_thread(manager.start)
    try:
        async with httpx.AsyncClient(base_url=emu.url, headers=headers, timeout=10) as http:
            r = await http.post(DEPLOYMENTS, json=_deployment(policy))
            assert r.status_code == 201, r.text
            await _poll(lambda: _rolled_out(http, "v1"), timeout=10)
            peak = [0]
            watch = asyncio.create_task(_watch_pod_count(http, peak))
            try:
                patch = {
                    "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "v2"}]}}}
                }
                r = await http.patch(
                    f"{DEPLOYMENTS}/web",
                    content=orjson.dumps(patch),
                    headers={"Content-Type": "application/strategic-merge-patch+json"},
                )
                assert r.status_code == 200, r.text
                await _poll(lambda: _rolled_out(http, "v2"), timeout=15)
            finally:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                    await watch
            return peak[0]
    finally:
        assert await asyncio.to_thread(manager.stop) == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("policy", "terminate", "bounded"),
    [
        # The bound holds however slow the controllers are: a short termination keeps it quick.
        pytest.param("TerminationComplete", 0.4, True, id="complete-stays-within-surge"),
        # The overlap needs the replacement created while the old pod terminates: a long
        # termination leaves a loaded machine time for that.
        pytest.param("TerminationStarted", 1.5, False, id="started-goes-above"),
    ],
)
async def test_rolling_update_pod_count_per_policy(
    policy: str, terminate: float, bounded: bool
) -> None:
    async with run_emulator(
        tls=False,
        kubelet=True,
        nodes=2,
        pod_ready_delay=0.05,
        pod_terminate_delay=terminate,  # an old pod terminates this long (grace 30 s, capped)
        deployment_pod_replacement_policy=True,
    ) as emu:
        peak = await _peak_during_rollout(emu, policy)
    if bounded:
        assert peak == REPLICAS + SURGE
    else:
        assert peak > REPLICAS + SURGE


async def _running(http: httpx.AsyncClient, count: int) -> bool:
    """``count`` pods, none terminating, and the deployment settled at that size."""
    d = (await http.get(f"{DEPLOYMENTS}/web")).json()
    status = d.get("status") or {}
    pods = (await http.get(PODS)).json()["items"]
    return (
        status.get("observedGeneration", 0) >= d["metadata"].get("generation", 1)
        and status.get("availableReplicas") == count
        and status.get("replicas") == count
        and len(pods) == count
        and not any(p["metadata"].get("deletionTimestamp") for p in pods)
    )


async def _scale(http: httpx.AsyncClient, replicas: int) -> None:
    r = await http.patch(
        f"{DEPLOYMENTS}/web",
        content=orjson.dumps({"spec": {"replicas": replicas}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200, r.text


async def _peak_during_scale_up(emu: Emulator, policy: str) -> tuple[int, Obj]:
    """4 pods, scaled to 2 (two terminate), then at once back to 4: the most pods seen at
    once from the scale-down on, and the ReplicaSet once all 4 run."""
    headers = {"Authorization": f"Bearer {emu.admin_token}"}
    manager = ManagerHandle(
        emu.kubeconfig_path,
        ["deployment", "replicaset"],
        args=[GATES, "--kube-api-qps=500", "--kube-api-burst=1000"],
    )
    await asyncio.to_thread(manager.start)
    try:
        async with httpx.AsyncClient(base_url=emu.url, headers=headers, timeout=10) as http:
            body = _deployment(policy)
            body["spec"]["replicas"] = 4
            body["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": 0, "maxUnavailable": 1}
            r = await http.post(DEPLOYMENTS, json=body)
            assert r.status_code == 201, r.text
            await _poll(lambda: _running(http, 4), timeout=10)
            peak = [0]
            watch = asyncio.create_task(_watch_pod_count(http, peak))
            try:
                await _scale(http, 2)

                # The two pods scaled away are terminating (their ReplicaSet says so)...
                async def terminating() -> bool:
                    rss = (await http.get(f"/apis/apps/v1/namespaces/{NS}/replicasets")).json()
                    return any(
                        (rs.get("status") or {}).get("terminatingReplicas") == 2
                        for rs in rss["items"]
                    )

                await _poll(terminating, timeout=10)
                # ...when the deployment is scaled back up.
                await _scale(http, 4)
                await _poll(lambda: _running(http, 4), timeout=15)
            finally:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                    await watch
            (rs,) = (await http.get(f"/apis/apps/v1/namespaces/{NS}/replicasets")).json()["items"]
            return peak[0], rs
    finally:
        assert await asyncio.to_thread(manager.stop) == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("policy", "bounded"),
    [
        pytest.param("TerminationComplete", True, id="complete-waits-for-terminating"),
        pytest.param("TerminationStarted", False, id="started-scales-at-once"),
    ],
)
async def test_scale_up_while_pods_terminate_per_policy(policy: str, bounded: bool) -> None:
    async with run_emulator(
        tls=False,
        kubelet=True,
        nodes=2,
        pod_ready_delay=0.05,
        pod_terminate_delay=1.5,  # long enough for the scale-up to land while they terminate
        deployment_pod_replacement_policy=True,
    ) as emu:
        peak, rs = await _peak_during_scale_up(emu, policy)
    # Either way the scaling completes: 4 replicas, the annotations of the new size, no
    # pre-scale size left behind.
    annotations = rs["metadata"].get("annotations") or {}
    assert rs["spec"]["replicas"] == 4
    assert annotations.get("deployment.kubernetes.io/desired-replicas") == "4"
    assert "deployment.kubernetes.io/replicaset-replicas-before-scale" not in annotations
    if bounded:
        assert peak == 4  # the new pods waited for the terminating ones
    else:
        assert peak > 4  # new pods beside the terminating ones
