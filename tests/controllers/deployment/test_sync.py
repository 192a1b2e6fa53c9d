"""KCM's controller fixture for the deployment controller: preload the caches, run
sync(key), compare the recorded API actions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.cache.listwatch import FakeListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller import Result
from pycm.controller.builder import ControllerBuilder
from pycm.controllers.deployment import util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.controller import DeploymentController
from pycm.controllers.deployment.rollback import last_revision, rollback_to
from pycm.controllers.deployment.sync import scale
from pycm.kube.errors import AlreadyExists, NotFound
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock

Obj = dict[str, Any]
NOW_NS = 1_700_000_000 * 10**9


class FakeClient:
    def __init__(self, deployment: Obj, existing_rs_names: set[str] | None = None) -> None:
        self.deployment = deployment
        self.actions: list[tuple[str, str]] = []
        self.created: list[Obj] = []
        self.updated_rs: list[Obj] = []
        self.statuses: list[Obj] = []
        self.updated_deployments: list[Obj] = []
        self.patches: list[tuple[str, Obj]] = []
        self.existing = existing_rs_names or set()
        self._rv = 100

    async def create_replica_set(self, namespace: str, body: Obj) -> Obj:
        name = body["metadata"]["name"]
        self.actions.append(("create", f"replicasets/{name}"))
        if name in self.existing:
            raise AlreadyExists(
                f'replicasets "{name}" already exists', code=409, reason="AlreadyExists"
            )
        created = copy.deepcopy(body)
        created["metadata"]["uid"] = f"{name}-uid"
        self.created.append(created)
        return created

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", f"replicasets/{body['metadata']['name']}"))
        self.updated_rs.append(copy.deepcopy(body))
        return body

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None:
        self.actions.append(("delete", f"replicasets/{name}"))

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj:
        self.actions.append(("patch", f"replicasets/{name}"))
        self.patches.append((name, patch))
        return {"metadata": {"name": name, **patch["metadata"]}, "spec": {"replicas": 0}}

    async def get_deployment(self, namespace: str, name: str) -> Obj:
        self.actions.append(("get", f"deployments/{name}"))
        return self.deployment

    async def update_deployment(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", f"deployments/{body['metadata']['name']}"))
        self._rv += 1
        self.updated_deployments.append(copy.deepcopy(body))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(self._rv)}}

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", "deployments/status"))
        self._rv += 1
        self.statuses.append(copy.deepcopy(body["status"]))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(self._rv)}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def _template(image: str = "nginx:1") -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def _deployment(
    replicas: int = 3, image: str = "nginx:1", strategy: str = "RollingUpdate", **spec: Any
) -> Obj:
    strategy_spec: Obj = {"type": strategy}
    if strategy == "RollingUpdate":
        strategy_spec["rollingUpdate"] = {"maxSurge": "25%", "maxUnavailable": "25%"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "uid": "d-uid",
            "generation": 1,
            "resourceVersion": "50",
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template(image),
            "strategy": strategy_spec,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            **spec,
        },
        "status": {},
    }


def _rs(
    name: str,
    replicas: int,
    image: str = "nginx:1",
    *,
    available: int | None = None,
    revision: int = 1,
    owned: bool = True,
    created: str = "2024-01-01T00:00:00Z",
    desired: int | None = None,
    max_replicas: int | None = None,
) -> Obj:
    template = _template(image)
    template["metadata"]["labels"]["pod-template-hash"] = name.rsplit("-", 1)[-1]
    annotations = {util.REVISION_ANNOTATION: str(revision)}
    if desired is not None:
        annotations[util.DESIRED_REPLICAS_ANNOTATION] = str(desired)
    if max_replicas is not None:
        annotations[util.MAX_REPLICAS_ANNOTATION] = str(max_replicas)
    meta: Obj = {
        "name": name,
        "namespace": "prod",
        "uid": f"{name}-uid",
        "resourceVersion": "7",
        "labels": dict(template["metadata"]["labels"]),
        "annotations": annotations,
        "creationTimestamp": created,
        "generation": 1,
    }
    if owned:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "uid": "d-uid",
                "controller": True,
            }
        ]
    avail = replicas if available is None else available
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(template["metadata"]["labels"])},
            "template": template,
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": avail,
            "availableReplicas": avail,
            "observedGeneration": 1,
        },
    }


def _pod(name: str, rs: Obj, phase: str = "Running") -> Obj:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "prod",
            "uid": f"{name}-uid",
            "labels": {"app": "web"},
            "ownerReferences": [
                {
                    "kind": "ReplicaSet",
                    "name": rs["metadata"]["name"],
                    "uid": rs["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "status": {"phase": phase},
    }


def _fixture(
    d: Obj, rss: list[Obj], pods: list[Obj] | None = None, **client_kw: Any
) -> tuple[DeploymentController, FakeClient, Recorder]:
    clock, bus = FakeClock(wall_start_ns=NOW_NS), Bus()
    informers = [
        SharedIndexInformer(FakeListWatch(), n, clock=clock, bus=bus, mutation_detector=True)
        for n in ("deployments", "replicasets", "pods")
    ]
    for informer, objs in zip(informers, ([d], rss, pods or []), strict=True):
        for obj in objs:
            informer.indexer.add(obj)
            assert informer.detector is not None
            informer.detector.record(obj)
        # KCM's fixture marks the caches synced: here, far past any write (no staleness).
        informer.fifo.resource_version = str(10**12)
    client, recorder = FakeClient(d, **client_kw), Recorder()
    builder = ControllerBuilder.standalone(
        "deployment",
        dict(zip((DEPLOYMENTS, REPLICASETS, PODS), informers, strict=True)),
        clock=clock,
        bus=bus,
    )
    controller = DeploymentController(builder, client=client, recorder=recorder)
    sync = controller.sync

    async def checked_sync(key: str) -> Result:
        # Every sync reads the cached objects without copying them: none may be changed.
        try:
            return await sync(key)
        finally:
            for informer in informers:
                assert informer.detector is not None
                informer.detector.check_all()

    controller.sync = checked_sync  # type: ignore[method-assign]
    return controller, client, recorder


@pytest.mark.asyncio
async def test_new_deployment_creates_its_replica_set_at_full_size() -> None:
    controller, client, recorder = _fixture(_deployment(3), [])
    result = await controller.sync("prod/web")
    (rs,) = client.created
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_hash
    annotations = rs["metadata"]["annotations"]
    assert (
        annotations[util.REVISION_ANNOTATION],
        annotations[util.DESIRED_REPLICAS_ANNOTATION],
        annotations[util.MAX_REPLICAS_ANNOTATION],
    ) == ("1", "3", "4")
    assert rs["metadata"]["ownerReferences"][0]["uid"] == "d-uid"
    assert (
        "Normal",
        "ScalingReplicaSet",
        f"Scaled up replica set web-{pod_hash} to 3",
    ) in recorder.events
    progressing = util.get_condition(client.statuses[0], util.PROGRESSING)
    assert progressing is not None and progressing["reason"] == util.NEW_RS_CREATED
    assert result.action == "created_rs"


@pytest.mark.asyncio
async def test_rolling_update_surges_then_waits_then_scales_old_down() -> None:
    old = _rs("web-old", 3, "nginx:1", created="2024-01-01T00:00:00Z")
    d = _deployment(3, "nginx:2")
    controller, client, _ = _fixture(d, [old])
    await controller.sync("prod/web")
    (new,) = client.created
    assert new["spec"]["replicas"] == 1  # 3 + 25% surge (1) − 3 old
    assert not [a for a in client.actions if a == ("update", "replicasets/web-old")]
    new_name = new["metadata"]["name"]

    # The new pod is not available yet: nothing may be scaled down (maxUnavailable rounds to 0).
    new_rs = _rs(new_name, 1, "nginx:2", available=0, revision=2, created="2024-01-02T00:00:00Z")
    new_rs["metadata"]["labels"]["pod-template-hash"] = new["metadata"]["labels"][
        "pod-template-hash"
    ]
    new_rs["spec"]["template"] = new["spec"]["template"]
    controller, client, _ = _fixture(d, [old, new_rs])
    await controller.sync("prod/web")
    sizes = {"web-old": 3, new_name: 1}
    resized = [
        u for u in client.updated_rs if u["spec"]["replicas"] != sizes[u["metadata"]["name"]]
    ]
    assert resized == []
    assert client.created == []
    scaled = [u for u in client.updated_rs if u["metadata"]["name"] == "web-old"]
    assert scaled == []

    # Once it is available, one old replica goes.
    new_rs["status"].update(availableReplicas=1, readyReplicas=1)
    controller, client, recorder = _fixture(d, [old, new_rs])
    await controller.sync("prod/web")
    (scaled_old,) = [u for u in client.updated_rs if u["metadata"]["name"] == "web-old"]
    assert scaled_old["spec"]["replicas"] == 2
    assert (
        "Normal",
        "ScalingReplicaSet",
        "Scaled down replica set web-old to 2 from 3",
    ) in recorder.events


@pytest.mark.asyncio
async def test_recreate_scales_old_to_zero_and_waits_for_old_pods() -> None:
    old = _rs("web-old", 2, "nginx:1")
    d = _deployment(2, "nginx:2", strategy="Recreate")
    controller, client, _ = _fixture(d, [old], [_pod("p1", old), _pod("p2", old)])
    await controller.sync("prod/web")
    assert client.created == []
    assert [u["spec"]["replicas"] for u in client.updated_rs] == [0]

    emptied = _rs("web-old", 0, "nginx:1")
    emptied["status"]["replicas"] = 0
    controller, client, _ = _fixture(d, [emptied], [_pod("p1", old)])
    await controller.sync("prod/web")
    assert client.created == []  # an old pod still runs

    controller, client, _ = _fixture(d, [emptied], [_pod("p1", old, phase="Succeeded")])
    await controller.sync("prod/web")
    (new,) = client.created
    assert new["spec"]["replicas"] == 2


@pytest.mark.asyncio
async def test_matching_orphan_rs_is_adopted_and_unmatching_owned_rs_released() -> None:
    orphan = _rs("web-orphan", 3, owned=False)
    stray = _rs("web-stray", 0)
    stray["metadata"]["labels"] = {"app": "other"}
    controller, client, _ = _fixture(_deployment(3), [orphan, stray])
    await controller.sync("prod/web")
    patched = dict(client.patches)
    assert patched["web-orphan"]["metadata"]["ownerReferences"][0]["uid"] == "d-uid"
    assert patched["web-stray"]["metadata"]["ownerReferences"] is None
    assert ("get", "deployments/web") in client.actions  # the live check before adopting


@pytest.mark.asyncio
async def test_name_collision_bumps_collision_count_and_fails() -> None:
    d = _deployment(3)
    pod_hash = util.compute_hash(d["spec"]["template"], None)
    squatter = _rs(f"web-{pod_hash}", 1, "busybox", owned=False)
    squatter["metadata"]["labels"] = {"app": "other"}
    controller, client, _ = _fixture(d, [squatter], existing_rs_names={f"web-{pod_hash}"})
    with pytest.raises(AlreadyExists):
        await controller.sync("prod/web")
    assert client.statuses[-1]["collisionCount"] == 1
    assert util.compute_hash(d["spec"]["template"], 1) != pod_hash


def _taken_name(d: Obj) -> str:
    return f"web-{util.compute_hash(d['spec']['template'], None)}"


@pytest.mark.asyncio
async def test_name_taken_but_missing_from_the_cache_fails_without_bumping_collision_count() -> (
    None
):
    # Our own RS, created by an earlier sync, not yet seen by a lagging informer: KCM returns
    # the lister's NotFound (the key is requeued) and never bumps collisionCount for it.
    d = _deployment(3)
    controller, client, _ = _fixture(d, [], existing_rs_names={_taken_name(d)})
    with pytest.raises(NotFound):
        await controller.sync("prod/web")
    assert [s for s in client.statuses if "collisionCount" in s] == []
    assert client.created == []


@pytest.mark.asyncio
async def test_name_taken_by_our_rs_that_the_cache_catches_up_on_uses_it() -> None:
    # The informer delivers our RS while the create is in flight: the sync's list lacks it,
    # the cache has it (our controller reference, our template) → it is the new RS.
    d = _deployment(3)
    name = _taken_name(d)
    controller, client, _ = _fixture(d, [], existing_rs_names={name})
    ours = _rs(name, 3)
    create = client.create_replica_set

    async def create_seen_late(namespace: str, body: Obj) -> Obj:
        controller._rs_indexer.add(ours)
        return await create(namespace, body)

    client.create_replica_set = create_seen_late  # type: ignore[method-assign]
    result = await controller.sync("prod/web")
    assert result.action != "created_rs"
    assert client.actions.count(("create", f"replicasets/{name}")) == 1
    assert [s for s in client.statuses if s.get("collisionCount")] == []
    assert client.created == []


@pytest.mark.asyncio
async def test_name_taken_by_our_rs_with_another_template_bumps_collision_count() -> None:
    d = _deployment(3)
    name = _taken_name(d)
    changed = _rs(name, 0, "busybox")  # ours, but its template is not the deployment's
    controller, client, _ = _fixture(d, [changed], existing_rs_names={name})
    with pytest.raises(AlreadyExists):
        await controller.sync("prod/web")
    assert client.statuses[-1]["collisionCount"] == 1


@pytest.mark.asyncio
async def test_paused_deployment_reports_paused_and_does_not_roll() -> None:
    old = _rs("web-old", 3, "nginx:1")
    controller, client, _ = _fixture(_deployment(3, "nginx:2", paused=True), [old])
    await controller.sync("prod/web")
    assert client.created == []
    condition = util.get_condition(client.statuses[0], util.PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("Unknown", util.PAUSED)


@pytest.mark.asyncio
async def test_scaling_event_resizes_the_only_active_rs() -> None:
    rs = _rs("web-abc", 3, desired=3, max_replicas=4)
    controller, client, recorder = _fixture(_deployment(6), [rs])
    result = await controller.sync("prod/web")
    (updated,) = client.updated_rs
    assert updated["spec"]["replicas"] == 6
    assert updated["metadata"]["annotations"][util.DESIRED_REPLICAS_ANNOTATION] == "6"
    assert updated["metadata"]["annotations"][util.MAX_REPLICAS_ANNOTATION] == "8"
    assert result.action == "scaled_up"
    assert (
        "Normal",
        "ScalingReplicaSet",
        "Scaled up replica set web-abc to 6 from 3",
    ) in recorder.events


@pytest.mark.parametrize(
    ("replicas", "old", "new", "expected"),
    [
        # 10 → 20 mid-rollout: old 8, new 5 (max-replicas 13); allowed 25, add 12.
        pytest.param(20, 8, 5, {"web-old": 15, "web-new": 10}, id="scale-up-proportional"),
        # 10 → 5: allowed 7 (5 + surge 2), remove 6.
        pytest.param(5, 8, 5, {"web-old": 4, "web-new": 3}, id="scale-down-proportional"),
    ],
)
@pytest.mark.asyncio
async def test_proportional_scaling_with_leftovers(
    replicas: int, old: int, new: int, expected: dict[str, int]
) -> None:
    d = _deployment(replicas, "nginx:2")
    old_rs = _rs(
        "web-old", old, "nginx:1", desired=10, max_replicas=13, created="2024-01-01T00:00:00Z"
    )
    new_rs = _rs(
        "web-new",
        new,
        "nginx:2",
        desired=10,
        max_replicas=13,
        created="2024-01-02T00:00:00Z",
        available=0,
    )
    ctx = SyncContext(FakeClient(d), Recorder(), FakeClock(wall_start_ns=NOW_NS))
    actions = await scale(ctx, d, new_rs, [old_rs])
    assert {a.name: a.new for a in actions} == expected
    assert sum(expected.values()) == replicas + util.max_surge(d)


@pytest.mark.asyncio
async def test_empty_selector_warns_and_bumps_observed_generation() -> None:
    d = _deployment(3)
    d["spec"]["selector"] = {}
    controller, client, recorder = _fixture(d, [])
    await controller.sync("prod/web")
    assert recorder.events == [
        (
            "Warning",
            "SelectingAll",
            "This deployment is selecting all pods. A non-empty selector is required.",
        )
    ]
    assert client.statuses == [{"observedGeneration": 1}]
    assert client.created == []


@pytest.mark.asyncio
async def test_complete_rollout_cleans_up_history_beyond_the_limit() -> None:
    current = _rs("web-cur", 3, "nginx:3", revision=3, created="2024-01-03T00:00:00Z")
    old1 = _rs("web-old1", 0, "nginx:1", revision=1)
    old2 = _rs("web-old2", 0, "nginx:2", revision=2, created="2024-01-02T00:00:00Z")
    for rs in (old1, old2):
        rs["status"].update(replicas=0, availableReplicas=0, readyReplicas=0)
    d = _deployment(3, "nginx:3", revisionHistoryLimit=1)
    d["status"] = {
        "replicas": 3,
        "updatedReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    controller, client, _ = _fixture(d, [current, old1, old2])
    await controller.sync("prod/web")
    assert ("delete", "replicasets/web-old1") in client.actions
    assert ("delete", "replicasets/web-old2") not in client.actions
    progressing = util.get_condition(client.statuses[-1], util.PROGRESSING)
    assert progressing is not None and progressing["reason"] == util.NEW_RS_AVAILABLE


@pytest.mark.asyncio
async def test_cleanup_unhealthy_never_scales_an_old_rs_up_when_status_is_ahead() -> None:
    from pycm.controllers.deployment.rolling import cleanup_unhealthy_replicas

    d = _deployment(20, "nginx:2")
    # spec already scaled down to 11, status still counts 12 available pods.
    old = _rs("web-old", 11, "nginx:1", available=12)
    unhealthy = _rs("web-older", 4, "nginx:0", available=1, created="2023-12-01T00:00:00Z")
    ctx = SyncContext(FakeClient(d), Recorder(), FakeClock(wall_start_ns=NOW_NS))
    rss, cleaned = await cleanup_unhealthy_replicas(ctx, [old, unhealthy], d, 5)
    assert cleaned == 3
    assert [(a.name, a.old, a.new) for a in ctx.scaled] == [("web-older", 4, 1)]
    assert [util.replicas_of(r) for r in rss] == [1, 11]


@pytest.mark.asyncio
async def test_scale_down_budgets_from_pods_an_rs_keeps_not_its_lagging_status() -> None:
    from pycm.controllers.deployment.rolling import scale_down_old_replica_sets_for_rolling_update

    # 5 replicas, maxUnavailable 1 → floor 4. The old RS was scaled to 4 by the last sync and
    # its status still counts 5 available pods; one new pod is available.
    d = _deployment(5, "nginx:2", strategy="RollingUpdate")
    d["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": 2, "maxUnavailable": 1}
    old = _rs("web-old", 4, "nginx:1", available=5)
    new = _rs("web-new", 2, "nginx:2", available=1, revision=2, created="2024-01-02T00:00:00Z")
    ctx = SyncContext(FakeClient(d), Recorder(), FakeClock(wall_start_ns=NOW_NS))
    scaled = await scale_down_old_replica_sets_for_rolling_update(ctx, [old, new], [old], d)
    # The old RS keeps at most 4 available pods: 4 + 1 − 4 = one may go, not two.
    assert scaled == 1
    assert [(a.name, a.old, a.new) for a in ctx.scaled] == [("web-old", 4, 3)]


@pytest.mark.asyncio
async def test_settled_deployment_sync_makes_no_api_call() -> None:
    rs = _rs("web-abc", 3, desired=3, max_replicas=4)
    d = _deployment(3)
    controller, client, _ = _fixture(d, [rs])
    await controller.sync("prod/web")  # records the revision and the conditions
    assert [a for a in client.actions if a[0] != "update" or a[1] != "deployments/status"] == []
    settled = copy.deepcopy(d)
    settled["metadata"]["annotations"] = {util.REVISION_ANNOTATION: "1"}
    settled["status"] = client.statuses[-1]
    controller, client, recorder = _fixture(settled, [rs])
    result = await controller.sync("prod/web")
    assert client.actions == []
    assert recorder.events == []
    assert result.action == "noop"


@pytest.mark.asyncio
async def test_changed_selector_is_compiled_again_and_releases_the_rs() -> None:
    rs = _rs("web-abc", 3, desired=3, max_replicas=4)
    d = _deployment(3)
    controller, client, _ = _fixture(d, [rs])
    await controller.sync("prod/web")
    assert not [a for a in client.actions if a[0] == "patch"]
    # An update replaces the cached object (a new selector dict): the cached compiled
    # selector must not be reused.
    updated = copy.deepcopy(d)
    updated["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    controller.informers[0].indexer.update(updated)
    assert controller.informers[0].detector is not None
    controller.informers[0].detector.record(updated)
    await controller.sync("prod/web")
    assert ("patch", "replicasets/web-abc") in client.actions
    (name, patch), *_ = client.patches
    assert name == "web-abc" and patch["metadata"]["ownerReferences"] is None


# -- the deprecated rollback annotation --------------------------------------------------------


def _rolled_out_to_v2(rollback_to: str) -> tuple[Obj, list[Obj]]:
    """A deployment at revision 2 (nginx:2) with revision 1 (nginx:1) kept, asked to roll back."""
    d = _deployment(3, "nginx:2")
    d["metadata"]["annotations"] = {
        util.REVISION_ANNOTATION: "2",
        "kubernetes.io/change-cause": "edit",
        util.ROLLBACK_TO_ANNOTATION: rollback_to,
    }
    old = _rs("web-one", 0, "nginx:1", revision=1)
    old["metadata"]["annotations"]["kubernetes.io/change-cause"] = "create"
    new = _rs("web-two", 3, "nginx:2", revision=2, created="2024-01-02T00:00:00Z")
    new["metadata"]["annotations"]["kubernetes.io/change-cause"] = "edit"
    return d, [old, new]


@pytest.mark.parametrize("rollback_to", ["1", "0"], ids=["revision-1", "last-revision"])
@pytest.mark.asyncio
async def test_rollback_takes_the_revisions_template_and_clears_the_annotation(
    rollback_to: str,
) -> None:
    d, rss = _rolled_out_to_v2(rollback_to)
    controller, client, recorder = _fixture(d, rss)
    result = await controller.sync("prod/web")
    (updated,) = client.updated_deployments
    # The RS's template without its hash label; its annotations, the deployment's revision.
    assert updated["spec"]["template"] == _template("nginx:1")
    assert updated["metadata"]["annotations"] == {
        util.REVISION_ANNOTATION: "2",
        "kubernetes.io/change-cause": "create",
    }
    assert ("Normal", "DeploymentRollback", 'Rolled back deployment "web" to revision 1') in (
        recorder.events
    )
    assert client.actions[-1] == ("update", "deployments/web")
    assert not [a for a in client.actions if a[1].startswith("replicasets/")]  # nothing scaled
    assert result.action == "rolled_back"


@pytest.mark.parametrize(
    ("rollback_to", "only_current", "reason", "message"),
    [
        pytest.param(
            "5",
            False,
            "DeploymentRollbackRevisionNotFound",
            "Unable to find the revision to rollback to.",
            id="no-such-revision",
        ),
        pytest.param(
            "0",
            True,
            "DeploymentRollbackRevisionNotFound",
            "Unable to find last revision.",
            id="no-last-revision",
        ),
        pytest.param(
            "2",
            False,
            "DeploymentRollbackTemplateUnchanged",
            'The rollback revision contains the same template as current deployment "web"',
            id="same-template",
        ),
    ],
)
@pytest.mark.asyncio
async def test_rollback_that_cannot_roll_back_warns_and_only_clears_the_annotation(
    rollback_to: str, only_current: bool, reason: str, message: str
) -> None:
    d, rss = _rolled_out_to_v2(rollback_to)
    if only_current:
        rss = rss[1:]  # revision 2 alone: there is no revision before it
    controller, client, recorder = _fixture(d, rss)
    await controller.sync("prod/web")
    (updated,) = client.updated_deployments
    assert updated["spec"]["template"] == d["spec"]["template"]
    assert util.ROLLBACK_TO_ANNOTATION not in updated["metadata"]["annotations"]
    assert updated["metadata"]["annotations"]["kubernetes.io/change-cause"] == "edit"
    rollback_events = [e for e in recorder.events if e[1].startswith("DeploymentRollback")]
    assert rollback_events == [("Warning", reason, message)]


@pytest.mark.asyncio
async def test_rollback_annotation_that_is_not_a_number_is_ignored() -> None:
    d, rss = _rolled_out_to_v2("one")
    controller, client, recorder = _fixture(d, rss)
    await controller.sync("prod/web")
    assert client.updated_deployments == []
    assert not [e for e in recorder.events if e[1].startswith("DeploymentRollback")]


@pytest.mark.asyncio
async def test_paused_deployment_does_not_roll_back() -> None:
    d, rss = _rolled_out_to_v2("1")
    d["spec"]["paused"] = True
    controller, client, _ = _fixture(d, rss)
    await controller.sync("prod/web")
    assert client.updated_deployments == []


@pytest.mark.parametrize(
    ("revisions", "expected"),
    [
        pytest.param([], 0, id="none"),
        pytest.param(["3"], 0, id="only-one"),
        pytest.param(["1", "3", "2"], 2, id="second-highest"),
        pytest.param(["4", "x", "2"], 2, id="unparsable-skipped"),
        pytest.param(["2", "2"], 2, id="tie"),
    ],
)
def test_last_revision_is_the_second_highest(revisions: list[str], expected: int) -> None:
    rss = [_rs(f"web-{i}", 1) for i in range(len(revisions))]
    for rs, rev in zip(rss, revisions, strict=True):
        rs["metadata"]["annotations"][util.REVISION_ANNOTATION] = rev
    assert last_revision(rss) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("3", 3, id="number"),
        pytest.param("0", 0, id="zero"),
        pytest.param("-1", -1, id="negative"),
        pytest.param("", None, id="empty"),
        pytest.param(" 1", None, id="space"),
        pytest.param("1_0", None, id="underscore"),
        pytest.param(str(2**63), None, id="overflow"),
    ],
)
def test_rollback_to_parses_like_strconv(value: str, expected: int | None) -> None:
    d = _deployment()
    d["metadata"]["annotations"] = {util.ROLLBACK_TO_ANNOTATION: value}
    assert rollback_to(d) == expected
