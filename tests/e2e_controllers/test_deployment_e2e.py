"""The Deployment controller end to end: ``pycm run`` (deployment + replicaset controllers)
against the emulator, whose kubelet readies pods after a short delay.

Rolling-update bounds on every ReplicaSet watch event, a stalled rollout's progress deadline,
recreate, rollover, proportional scaling, pause/resume, history cleanup, adoption and orphaning,
cascading deletion, the deprecated rollback annotation, kubectl rollout status/undo, and all of
it through injected API faults.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_controllers.conftest import (
    DEPLOY_PATH,
    MANAGER_USER,
    POD_PATH,
    RS_PATH,
    Cluster,
    Watch,
    poll,
)
from tests.sim.conftest_kubectl import kubectl

__all__ = ["kubectl"]

pytestmark = pytest.mark.e2e

HASH = "pod-template-hash"


@pytest.fixture
def emulator_options() -> dict[str, Any]:
    # A short ready delay, so a rollout takes a few steps; deleted pods terminate at once.
    return {
        "tls": False,
        "kubelet": True,
        "pod_ready_delay": 0.15,
        "pod_terminate_delay": 0.0,
        "nodes": 2,
    }


def deployment(
    name: str,
    replicas: int,
    image: str = "v1",
    *,
    surge: int | str = 1,
    unavailable: int | str = 1,
    recreate: bool = False,
    deadline: int | None = None,
    history: int | None = None,
) -> dict[str, Any]:
    strategy: dict[str, Any] = (
        {"type": "Recreate"}
        if recreate
        else {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        }
    )
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "strategy": strategy,
        "template": _template(name, image),
    }
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _template(name: str, image: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return {}


def _owned(rs: dict[str, Any], name: str) -> bool:
    refs = rs["metadata"].get("ownerReferences") or []
    return any(r.get("kind") == "Deployment" and r.get("name") == name for r in refs)


async def _owned_rss(c: Cluster, name: str) -> list[dict[str, Any]]:
    return [rs for rs in await c.items(RS_PATH) if _owned(rs, name)]


async def _complete(c: Cluster, name: str, image: str | None = None) -> bool:
    """The deployment's newest template is fully rolled out and observed."""
    d = await c.get(f"{DEPLOY_PATH}/{name}")
    spec, status = d["spec"], d.get("status") or {}
    replicas = spec["replicas"]
    if image is not None and spec["template"]["spec"]["containers"][0]["image"] != image:
        return False
    if status.get("observedGeneration") != d["metadata"]["generation"]:
        return False
    if not (
        status.get("updatedReplicas") == replicas
        and status.get("replicas") == replicas
        and status.get("availableReplicas") == replicas
    ):
        return False
    if _condition(d, "Progressing").get("reason") != "NewReplicaSetAvailable":
        return False
    # Only the new ReplicaSet has pods.
    owned = await _owned_rss(c, name)
    sized = [rs for rs in owned if rs["spec"]["replicas"]]
    names = {rs["metadata"]["name"] for rs in owned}
    pods = [
        p
        for p in await c.items(POD_PATH)
        if "deletionTimestamp" not in p["metadata"]
        and any(r["name"] in names for r in p["metadata"].get("ownerReferences") or [])
    ]
    return len(sized) == 1 and len(pods) == replicas


async def _set_image(c: Cluster, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
    await c.patch(f"{DEPLOY_PATH}/{name}", patch)


@dataclass
class Bounds:
    """A rolling update's bounds; ``min_available`` defaults to replicas − maxUnavailable (a
    scale-up mid-rollout keeps the old floor until the added pods are ready)."""

    replicas: int
    surge: int
    unavailable: int
    min_available: int | None = None

    @property
    def floor(self) -> int:
        if self.min_available is not None:
            return self.min_available
        return self.replicas - self.unavailable


def rolling_bounds(name: str, bounds: Bounds) -> Callable[[Watch, dict[str, Any]], None]:
    """A ReplicaSet watch check: Σ spec.replicas ≤ replicas + maxSurge and Σ available ≥
    replicas − maxUnavailable over the deployment's ReplicaSets, at every event.

    A test changes ``bounds`` in place when it scales. The watch starts on a settled
    deployment, so the lower bound holds from the first event.
    """

    def check(watch: Watch, event: dict[str, Any]) -> None:
        rss = [rs for rs in watch.objects.values() if _owned(rs, name)]
        size = sum(rs["spec"]["replicas"] for rs in rss)
        available = sum((rs.get("status") or {}).get("availableReplicas", 0) for rs in rss)
        where = f"{event['type']} {event['object']['metadata']['name']}"
        if size > bounds.replicas + bounds.surge:
            watch.violations.append(f"{where}: sizes {size} > {bounds.replicas} + {bounds.surge}")
        if available < bounds.floor:
            watch.violations.append(f"{where}: available {available} < {bounds.floor}")

    return check


def assert_rollout_bounds(watch: Watch) -> None:
    """Both bounds hold strictly at every ReplicaSet event: Σ spec ≤ replicas + maxSurge and
    Σ available ≥ the floor (the scale-down budgets from what each RS keeps, never from a
    status that still counts pods a scale-down is removing)."""
    assert watch.violations == []


async def _settle(c: Cluster, d: dict[str, Any], timeout: float = 20) -> None:
    await c.create(DEPLOY_PATH, d)
    name = d["metadata"]["name"]
    await poll(lambda: _complete(c, name), timeout=timeout)


@pytest.mark.asyncio
async def test_rolling_update_keeps_surge_and_unavailable_bounds(cluster: Cluster) -> None:
    await _settle(cluster, deployment("web", 6, surge=2, unavailable=1))
    rss = cluster.watch(RS_PATH, rolling_bounds("web", Bounds(6, 2, 1)))
    await cluster.watching()
    await _set_image(cluster, "web", "v2")
    await poll(lambda: _complete(cluster, "web", "v2"))
    assert_rollout_bounds(rss)
    # The rollout went through several steps (the check ran on real intermediate states).
    assert len(rss.events) >= 6
    revisions = sorted(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        for rs in rss.objects.values()
    )
    assert revisions == ["1", "2"]


@pytest.mark.asyncio
async def test_rollout_that_never_gets_ready_stops_at_the_bounds_and_times_out(
    cluster: Cluster,
) -> None:
    await _settle(cluster, deployment("web", 4, surge=1, unavailable=1, deadline=3))
    rss = cluster.watch(RS_PATH, rolling_bounds("web", Bounds(4, 1, 1)))
    await cluster.watching()
    # The kubelet stops: the new pods are never bound nor readied.
    cluster.emu.faults.add(kind="pause-kubelet", duration=60)
    await _set_image(cluster, "web", "v2")

    async def timed_out() -> dict[str, Any]:
        d = await cluster.get(f"{DEPLOY_PATH}/web")
        return d if _condition(d, "Progressing").get("reason") == "ProgressDeadlineExceeded" else {}

    d = await poll(timed_out, timeout=15)
    assert _condition(d, "Progressing")["status"] == "False"
    sizes = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in await _owned_rss(cluster, "web")
    }
    # Stalled exactly at the bounds: 4 + 1 pods in all, 4 − 1 of them the available old ones.
    assert sizes == {"v1": 3, "v2": 2}
    assert _condition(d, "Available")["status"] == "True"
    assert rss.violations == []
    cluster.emu.faults.clear()
    await poll(lambda: _complete(cluster, "web", "v2"))
    assert rss.violations == []


@pytest.mark.asyncio
async def test_recreate_never_runs_old_and_new_pods_together(cluster: Cluster) -> None:
    await _settle(cluster, deployment("job", 4, recreate=True))
    overlaps: list[str] = []

    def check(watch: Watch, event: dict[str, Any]) -> None:
        hashes = {p["metadata"]["labels"].get(HASH) for p in watch.objects.values()}
        if len(hashes) > 1:
            overlaps.append(f"{event['type']} {event['object']['metadata']['name']}: {hashes}")

    pods = cluster.watch(POD_PATH, check)
    await cluster.watching()
    await _set_image(cluster, "job", "v2")
    await poll(lambda: _complete(cluster, "job", "v2"))
    assert overlaps == []
    assert sum(1 for e in pods.events if e["type"] == "ADDED") == 4


@pytest.mark.parametrize(
    "emulator_options",
    [
        {
            "tls": False,
            "kubelet": True,
            "pod_ready_delay": 0.5,
            "pod_terminate_delay": 0.0,
            "nodes": 2,
        }
    ],
)
@pytest.mark.asyncio
async def test_rollover_mid_rollout_moves_straight_to_the_newest_template(
    cluster: Cluster,
) -> None:
    await _settle(cluster, deployment("web", 6, surge=2, unavailable=1))
    rss = cluster.watch(RS_PATH, rolling_bounds("web", Bounds(6, 2, 1)))
    await cluster.watching()
    await _set_image(cluster, "web", "v2")

    async def v2_started() -> bool:
        return any(
            rs["spec"]["template"]["spec"]["containers"][0]["image"] == "v2"
            and rs["spec"]["replicas"] > 0
            for rs in await _owned_rss(cluster, "web")
        )

    await poll(v2_started)
    await _set_image(cluster, "web", "v3")
    await poll(lambda: _complete(cluster, "web", "v3"))
    assert rss.violations == []
    images = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in await _owned_rss(cluster, "web")
    }
    assert images == {"v1": 0, "v2": 0, "v3": 6}
    # v2 never completed: its pods never all became available before the rollover.
    v2 = next(
        rs
        for rs in rss.objects.values()
        if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "v2"
    )
    assert v2["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"


@pytest.mark.asyncio
async def test_scaling_mid_rollout_is_proportional(cluster: Cluster) -> None:
    await _settle(cluster, deployment("web", 10, surge=3, unavailable=2))
    bounds = Bounds(10, 3, 2)
    rss = cluster.watch(RS_PATH, rolling_bounds("web", bounds))
    await cluster.watching()
    cluster.emu.faults.add(kind="pause-kubelet", duration=60)
    await _set_image(cluster, "web", "v2")

    async def stalled() -> dict[str, int]:
        sizes = {
            rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
            for rs in await _owned_rss(cluster, "web")
        }
        return sizes if sizes == {"v1": 8, "v2": 5} else {}

    # Stalled at the bounds: 13 = 10 + 3 pods, 8 = 10 − 2 of them available.
    await poll(stalled, timeout=15)
    bounds.replicas, bounds.min_available = 20, 8
    await cluster.patch(f"{DEPLOY_PATH}/web", {"spec": {"replicas": 20}})

    async def scaled() -> dict[str, int]:
        sizes = {
            rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
            for rs in await _owned_rss(cluster, "web")
        }
        return sizes if sum(sizes.values()) == 23 else {}

    sizes = await poll(scaled, timeout=15)
    # The 10 extra pods go to both ReplicaSets by their share of the 13 (8 → 6, 5 → 4).
    assert sizes == {"v1": 14, "v2": 9}
    cluster.emu.faults.clear()
    await poll(lambda: _complete(cluster, "web", "v2"), timeout=30)
    assert rss.violations == []


@pytest.mark.asyncio
async def test_paused_deployment_makes_no_new_replicaset_until_resumed(cluster: Cluster) -> None:
    await _settle(cluster, deployment("web", 3, deadline=60))
    await cluster.patch(f"{DEPLOY_PATH}/web", {"spec": {"paused": True}})
    await _set_image(cluster, "web", "v2")

    async def paused() -> dict[str, Any]:
        d = await cluster.get(f"{DEPLOY_PATH}/web")
        progressing = _condition(d, "Progressing")
        observed = (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]
        return d if observed and progressing.get("reason") == "DeploymentPaused" else {}

    d = await poll(paused)
    assert _condition(d, "Progressing")["status"] == "Unknown"
    # The sync that saw the new template (observedGeneration says it ran) made no RS for it.
    assert len(await _owned_rss(cluster, "web")) == 1
    await cluster.patch(f"{DEPLOY_PATH}/web", {"spec": {"paused": False}})
    await poll(lambda: _complete(cluster, "web", "v2"))
    assert len(await _owned_rss(cluster, "web")) == 2


@pytest.mark.asyncio
async def test_revision_history_limit_deletes_old_replicasets(cluster: Cluster) -> None:
    await _settle(cluster, deployment("web", 2, history=1))
    for image in ("v2", "v3", "v4"):
        await _set_image(cluster, "web", image)
        await poll(lambda image=image: _complete(cluster, "web", image))  # type: ignore[misc]

    async def cleaned() -> list[str]:
        rss = await _owned_rss(cluster, "web")
        images = sorted(rs["spec"]["template"]["spec"]["containers"][0]["image"] for rs in rss)
        return images if len(images) == 2 else []

    # The new RS and the one newest old one are kept.
    assert await poll(cleaned) == ["v3", "v4"]


@pytest.mark.asyncio
async def test_deployment_adopts_a_matching_orphan_and_releases_it_when_labels_change(
    cluster: Cluster,
) -> None:
    orphan = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "orphan", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template("web", "v1"),
        },
    }
    await cluster.create(RS_PATH, orphan)
    rss = cluster.watch(RS_PATH)
    await cluster.watching()
    await cluster.create(DEPLOY_PATH, deployment("web", 2))

    async def adopted() -> dict[str, Any]:
        rs = await cluster.get(f"{RS_PATH}/orphan")
        return rs if _owned(rs, "web") else {}

    rs = await poll(adopted)
    assert rs["metadata"]["ownerReferences"][0]["controller"] is True
    await poll(lambda: _complete(cluster, "web"))
    # The adopted RS has the deployment's template: it is the new RS, no other was made.
    assert {e["object"]["metadata"]["name"] for e in rss.events if e["type"] == "ADDED"} == set()
    await cluster.patch(f"{RS_PATH}/orphan", {"metadata": {"labels": {"app": "elsewhere"}}})

    async def released() -> dict[str, Any]:
        rs = await cluster.get(f"{RS_PATH}/orphan")
        return rs if not rs["metadata"].get("ownerReferences") else {"waiting": rs}

    await poll(released)

    async def replaced() -> bool:
        owned = [rs["metadata"]["name"] for rs in await _owned_rss(cluster, "web")]
        return len(owned) == 1 and owned != ["orphan"] and await _complete(cluster, "web")

    # Having lost its RS, the deployment makes a new one for its template; the released RS
    # keeps its own pods (its selector still matches them).
    await poll(replaced)
    released_rs = await cluster.get(f"{RS_PATH}/orphan")
    assert released_rs["status"]["replicas"] == 2


@pytest.mark.asyncio
async def test_deleting_a_deployment_cascades_to_replicasets_and_pods(cluster: Cluster) -> None:
    await _settle(cluster, deployment("web", 3))
    await _set_image(cluster, "web", "v2")
    await poll(lambda: _complete(cluster, "web", "v2"))
    r = await cluster.api.request(
        "DELETE", f"{DEPLOY_PATH}/web", json={"propagationPolicy": "Background"}
    )
    assert r.status_code == 200, r.text

    async def gone() -> bool:
        return not await cluster.items(RS_PATH) and not await cluster.items(POD_PATH)

    await poll(gone)
    assert (await cluster.api.get(f"{DEPLOY_PATH}/web")).status_code == 404


EVENT_PATH = "/api/v1/namespaces/default/events"


@pytest.mark.asyncio
async def test_rollback_annotation_rolls_back_to_the_revision_and_is_cleared(
    cluster: Cluster,
) -> None:
    await _settle(cluster, deployment("web", 3))
    await _set_image(cluster, "web", "v2")
    await poll(lambda: _complete(cluster, "web", "v2"))
    await cluster.patch(
        f"{DEPLOY_PATH}/web",
        {"metadata": {"annotations": {"deprecated.deployment.rollback.to": "1"}}},
    )

    async def rolled_back() -> dict[str, Any]:
        d = await cluster.get(f"{DEPLOY_PATH}/web")
        image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        annotations = d["metadata"].get("annotations") or {}
        return d if image == "v1" and "deprecated.deployment.rollback.to" not in annotations else {}

    d = await poll(rolled_back)
    # The template is revision 1's ReplicaSet's, without its pod-template-hash label.
    (v1,) = [
        rs
        for rs in await _owned_rss(cluster, "web")
        if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "v1"
    ]
    expected = v1["spec"]["template"]
    expected["metadata"]["labels"].pop(HASH)
    assert d["spec"]["template"] == expected
    assert d["spec"]["template"]["metadata"]["labels"] == {"app": "web"}

    async def recorded() -> list[dict[str, Any]]:
        return [e for e in await cluster.items(EVENT_PATH) if e["reason"] == "DeploymentRollback"]

    (event,) = await poll(recorded)
    assert (event["type"], event["message"]) == (
        "Normal",
        'Rolled back deployment "web" to revision 1',
    )
    assert event["involvedObject"]["name"] == "web"
    await poll(lambda: _complete(cluster, "web", "v1"))
    # Revision 1's ReplicaSet is the new one again, now as revision 3; no third RS was made.
    revisions = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"
        ]
        for rs in await _owned_rss(cluster, "web")
    }
    assert revisions == {"v1": "3", "v2": "2"}


_FAULTS = [
    {"kind": "error", "status": 500, "count": 2, "resource": "replicasets", "verb": "create"},
    {"kind": "error", "status": 409, "count": 3, "resource": "replicasets", "verb": "update"},
    {"kind": "error", "status": 409, "count": 2, "resource": "deployments/status"},
    {"kind": "error", "status": 500, "count": 3, "resource": "pods", "verb": "create"},
    {"kind": "latency", "seconds": 0.02},
]


@pytest.mark.asyncio
async def test_rollouts_converge_through_api_faults_without_duplicate_replicasets(
    cluster: Cluster,
) -> None:
    rss = cluster.watch(RS_PATH)
    await cluster.watching()
    added = [cluster.emu.faults.add({**f, "duration": 60, "user": MANAGER_USER}) for f in _FAULTS]
    await _settle(cluster, deployment("web", 5, surge=1, unavailable=1), timeout=40)
    bounds = cluster.watch(RS_PATH, rolling_bounds("web", Bounds(5, 1, 1)))
    await cluster.watching()
    for image in ("v2", "v3"):
        await _set_image(cluster, "web", image)
        await poll(lambda image=image: _complete(cluster, "web", image), timeout=40)  # type: ignore[misc]
    assert_rollout_bounds(bounds)
    per_template = Counter(
        e["object"]["metadata"]["labels"][HASH] for e in rss.events if e["type"] == "ADDED"
    )
    assert len(per_template) == 3 and set(per_template.values()) == {1}, per_template
    hit = {f.describe(): f.hits for f in added}
    assert all(hit.values()), hit


# Note: the controller writes the deployment's revision annotation with its status update, as
# KCM does (kube's deployment status strategy keeps annotation changes); the emulator's status
# subresource keeps only the status, so the annotation never lands and kubectl's undo patch
# would find no /metadata/annotations on a deployment created without any.
def _kubectl_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp / "home")
    (tmp / "home").mkdir(exist_ok=True)
    return env


@pytest.mark.kubectl
@pytest.mark.parametrize(
    "emulator_options",
    [{"kubelet": True, "tls": True, "pod_ready_delay": 0.15, "pod_terminate_delay": 0.0}],
)
@pytest.mark.asyncio
async def test_kubectl_rollout_status_and_undo(
    cluster: Cluster, kubectl: Path, tmp_path: Path
) -> None:
    env = _kubectl_env(tmp_path)

    async def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(kubectl), "--kubeconfig", str(cluster.emu.kubeconfig_path), *args]
        return await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, env=env, timeout=30
        )

    d = deployment("web", 3)
    # kubectl's undo patch replaces /metadata/annotations, which must exist; see the note.
    d["metadata"]["annotations"] = {"team": "e2e"}
    await cluster.create(DEPLOY_PATH, d)
    status = await run("rollout", "status", "deployment/web", "--timeout=20s")
    assert status.returncode == 0, status.stderr
    assert 'deployment "web" successfully rolled out' in status.stdout
    await _set_image(cluster, "web", "v2")
    status = await run("rollout", "status", "deployment/web", "--timeout=20s")
    assert status.returncode == 0, status.stderr
    await poll(lambda: _complete(cluster, "web", "v2"))
    undo = await run("rollout", "undo", "deployment/web")
    assert undo.returncode == 0, undo.stderr
    status = await run("rollout", "status", "deployment/web", "--timeout=20s")
    assert status.returncode == 0, status.stderr
    await poll(lambda: _complete(cluster, "web", "v1"))
    # Undo re-uses revision 1's ReplicaSet, which becomes revision 3.
    revisions = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"
        ]
        for rs in await _owned_rss(cluster, "web")
    }
    assert revisions == {"v1": "3", "v2": "2"}
