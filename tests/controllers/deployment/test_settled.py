"""A settled deployment's sync does nothing, and any one change to what it reads makes it act.

The no-op sync takes read-only shortcuts (claim candidates from an index, the revision sync
answered once per sync, the status compared before it is built); each case here changes one
thing a real deployment controller notices and checks that the next sync does the work.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pycm.cache.listwatch import FakeListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller import Result
from pycm.controller.builder import ControllerBuilder
from pycm.controllers.deployment import util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.controller import DeploymentController
from pycm.controllers.deployment.sync import get_all_replica_sets_and_sync_revision, update_status
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock

Obj = dict[str, Any]
NOW_NS = 1_700_000_000 * 10**9


class SettlingClient:
    """Applies every write to the informers' caches as the API server and a ReplicaSet
    controller with an instant kubelet would (a written RS is at once fully available)."""

    def __init__(self, informers: list[SharedIndexInformer], clock: FakeClock) -> None:
        self.informers = informers
        self.clock = clock
        self.actions: list[tuple[str, str]] = []
        self.broken_image = ""  # pods of this image never become ready
        self._n = 0

    def _put(self, index: int, obj: Obj) -> Obj:
        self._n += 1
        obj["metadata"]["resourceVersion"] = str(1000 + self._n)
        put(self.informers[index], obj)
        return obj

    def _ready(self, body: Obj) -> Obj:
        rs = copy.deepcopy(body)
        meta = rs["metadata"]
        meta.setdefault("uid", f"{meta['name']}-uid")
        meta.setdefault("creationTimestamp", f"2024-01-01T00:00:{self._n % 60:02d}Z")
        meta["generation"] = meta.get("generation", 0) + 1
        n = rs["spec"]["replicas"]
        image = rs["spec"]["template"]["spec"]["containers"][0]["image"]
        ready = 0 if image == self.broken_image else n
        rs["status"] = {
            "replicas": n,
            "fullyLabeledReplicas": n,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": meta["generation"],
        }
        return self._put(1, rs)

    async def create_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("create", "replicasets"))
        return self._ready(body)

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", f"replicasets/{body['metadata']['name']}"))
        return self._ready(body)

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None:
        self.actions.append(("delete", f"replicasets/{name}"))
        self.informers[1].indexer.delete_key(f"{namespace}/{name}")

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj:
        self.actions.append(("patch", f"replicasets/{name}"))
        rs = self.informers[1].indexer.get_by_key(f"{namespace}/{name}")
        assert rs is not None
        rs = copy.deepcopy(rs)
        refs = patch["metadata"]["ownerReferences"]
        if refs is None:
            rs["metadata"].pop("ownerReferences", None)
        else:
            rs["metadata"]["ownerReferences"] = refs
        return self._put(1, rs)

    async def get_deployment(self, namespace: str, name: str) -> Obj:
        self.actions.append(("get", f"deployments/{name}"))
        d = self.informers[0].indexer.get_by_key(f"{namespace}/{name}")
        assert d is not None
        return d

    async def update_deployment(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", f"deployments/{body['metadata']['name']}"))
        d = copy.deepcopy(body)
        d["metadata"]["generation"] = d["metadata"].get("generation", 0) + 1
        return self._put(0, d)

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj:
        self.actions.append(("update", "deployments/status"))
        return self._put(0, copy.deepcopy(body))


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def put(informer: SharedIndexInformer, obj: Obj) -> None:
    informer.indexer.update(obj)
    assert informer.detector is not None
    informer.detector.record(obj)
    # The cache has it at once: its store is at least at its version (the staleness guard).
    rv = str(obj["metadata"].get("resourceVersion") or "")
    seen = informer.fifo.resource_version
    if rv.isdigit() and (not seen or int(rv) > int(seen)):
        informer.fifo.resource_version = rv


def _deployment(defaults: bool) -> Obj:
    spec: Obj = {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
        },
    }
    if defaults:  # what the API server fills in
        spec.update(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            revisionHistoryLimit=10,
            progressDeadlineSeconds=600,
        )
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "uid": "d-uid",
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": spec,
    }
    # Bare: no history limit or progress deadline (KCM reads both as optional); the strategy
    # the controller cannot do without is defaulted as the API server would.
    return body if defaults else util.with_api_defaults(body)


class Settled:
    def __init__(self, defaults: bool) -> None:
        self.clock, bus = FakeClock(wall_start_ns=NOW_NS), Bus()
        self.informers = [
            SharedIndexInformer(
                FakeListWatch(), n, clock=self.clock, bus=bus, mutation_detector=True
            )
            for n in ("deployments", "replicasets", "pods")
        ]
        put(self.informers[0], _deployment(defaults))
        # Another deployment's RS in the same namespace: never a candidate.
        other = {
            "metadata": {
                "name": "api-1",
                "namespace": "prod",
                "uid": "api-1-uid",
                "labels": {"app": "web"},
                "ownerReferences": [
                    {"kind": "Deployment", "name": "api", "uid": "api-uid", "controller": True}
                ],
            },
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}}},
        }
        put(self.informers[1], other)
        self.client = SettlingClient(self.informers, self.clock)
        self.recorder = Recorder()
        builder = ControllerBuilder.standalone(
            "deployment",
            dict(zip((DEPLOYMENTS, REPLICASETS, PODS), self.informers, strict=True)),
            clock=self.clock,
            bus=bus,
        )
        self.controller = DeploymentController(builder, client=self.client, recorder=self.recorder)

    async def sync(self) -> Result:
        try:
            return await self.controller.sync("prod/web")
        finally:
            for informer in self.informers:
                assert informer.detector is not None
                informer.detector.check_all()

    async def settle(self) -> None:
        for _ in range(8):
            self.client.actions.clear()
            await self.sync()
            if not self.client.actions:
                return
        raise AssertionError(f"did not settle: {self.client.actions}")

    def deployment(self) -> Obj:
        d = self.informers[0].indexer.get_by_key("prod/web")
        assert d is not None
        return d

    def only_rs(self) -> Obj:
        (rs,) = [
            r for r in self.informers[1].indexer.list() if r["metadata"]["name"].startswith("web-")
        ]
        return rs

    def change(self, index: int, obj: Obj, edit: Callable[[Obj], None]) -> None:
        changed = copy.deepcopy(obj)
        edit(changed)
        put(self.informers[index], changed)


def _new_rs_annotation(d: Obj) -> None:
    d["metadata"].setdefault("annotations", {})["team"] = "blue"


def _status_field(field: str, value: Any) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        d["status"][field] = value

    return edit


def _condition(type_: str, **fields: Any) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        for c in d["status"]["conditions"]:
            if c["type"] == type_:
                c.update(fields)

    return edit


def _drop_condition(type_: str) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        d["status"]["conditions"] = [c for c in d["status"]["conditions"] if c["type"] != type_]

    return edit


def _add_condition(type_: str, status: str, reason: str) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        d["status"]["conditions"].append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": "",
                "lastUpdateTime": "2023-11-14T22:00:00Z",
                "lastTransitionTime": "2023-11-14T22:00:00Z",
            }
        )

    return edit


def _spec(**fields: Any) -> Callable[[Obj], None]:
    def edit(d: Obj) -> None:
        d["spec"].update(fields)
        d["metadata"]["generation"] += 1

    return edit


def _image(d: Obj) -> None:
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    d["metadata"]["generation"] += 1


def _template_label(d: Obj) -> None:
    d["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    d["metadata"]["generation"] += 1


def _rollback(d: Obj) -> None:
    d["metadata"].setdefault("annotations", {})[util.ROLLBACK_TO_ANNOTATION] = "0"


def _rs_status(**fields: Any) -> Callable[[Obj], None]:
    def edit(rs: Obj) -> None:
        rs["status"].update(fields)

    return edit


def _rs_annotation(key: str, value: str | None) -> Callable[[Obj], None]:
    def edit(rs: Obj) -> None:
        annotations = rs["metadata"]["annotations"]
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value

    return edit


def _rs_failure(rs: Obj) -> None:
    rs["status"]["conditions"] = [
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": "quota",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    ]


def _rs_labels(rs: Obj) -> None:
    rs["metadata"]["labels"] = {"app": "other"}


DEPLOYMENT, RS = 0, 1

# (change, target, the one deployment shape it applies to, an action the next sync must take)
CASES = [
    pytest.param(
        _status_field("availableReplicas", 2),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="status-count-drifted",
    ),
    pytest.param(
        _status_field("observedGeneration", 0),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="status-observed-generation-drifted",
    ),
    pytest.param(
        _status_field("terminatingReplicas", 1),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="status-unknown-field-set",
    ),
    pytest.param(
        _condition("Available", status="False", reason="MinimumReplicasUnavailable"),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="available-condition-drifted",
    ),
    pytest.param(
        _condition("Available", reason="Other"),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="available-condition-reason-drifted",
    ),
    pytest.param(
        _drop_condition("Available"),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="available-condition-gone",
    ),
    pytest.param(
        _drop_condition("Progressing"),
        DEPLOYMENT,
        "api-defaults",
        ("update", "deployments/status"),
        id="progressing-condition-gone",
    ),
    pytest.param(
        _condition("Progressing", reason=util.RS_UPDATED),
        DEPLOYMENT,
        "api-defaults",
        ("update", "deployments/status"),
        id="progressing-condition-not-complete",
    ),
    pytest.param(
        _spec(progressDeadlineSeconds=None),
        DEPLOYMENT,
        "api-defaults",
        ("update", "deployments/status"),
        id="progress-deadline-removed",
    ),
    pytest.param(
        _add_condition(util.PROGRESSING, "True", util.NEW_RS_AVAILABLE),
        DEPLOYMENT,
        "bare",  # with a deadline the first Progressing condition is the one that counts
        ("update", "deployments/status"),
        id="progressing-condition-without-deadline",
    ),
    pytest.param(
        _add_condition(util.REPLICA_FAILURE, "True", "FailedCreate"),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="stale-replica-failure-condition",
    ),
    pytest.param(_image, DEPLOYMENT, None, ("create", "replicasets"), id="template-image"),
    pytest.param(_template_label, DEPLOYMENT, None, ("create", "replicasets"), id="template-label"),
    pytest.param(_spec(replicas=5), DEPLOYMENT, None, ("update", "replicasets/*"), id="scaled-up"),
    pytest.param(
        _spec(replicas=1), DEPLOYMENT, None, ("update", "replicasets/*"), id="scaled-down"
    ),
    pytest.param(
        _spec(paused=True),
        DEPLOYMENT,
        "api-defaults",
        ("update", "deployments/status"),
        id="paused",
    ),
    pytest.param(
        _spec(minReadySeconds=5),
        DEPLOYMENT,
        None,
        ("update", "replicasets/*"),
        id="min-ready-seconds",
    ),
    pytest.param(
        _spec(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}),
        DEPLOYMENT,
        None,
        ("update", "deployments/status"),
        id="max-surge-changed",
    ),
    pytest.param(
        _new_rs_annotation,
        DEPLOYMENT,
        None,
        ("update", "replicasets/*"),
        id="deployment-annotation-copied",
    ),
    pytest.param(_rollback, DEPLOYMENT, None, ("update", "deployments/web"), id="rollback"),
    pytest.param(
        _rs_status(availableReplicas=1, readyReplicas=1),
        RS,
        None,
        ("update", "deployments/status"),
        id="rs-became-unavailable",
    ),
    pytest.param(
        _rs_status(replicas=4),
        RS,
        None,
        ("update", "deployments/status"),
        id="rs-status-replicas",
    ),
    pytest.param(_rs_failure, RS, None, ("update", "deployments/status"), id="rs-replica-failure"),
    pytest.param(
        _rs_annotation(util.REVISION_ANNOTATION, None),
        RS,
        None,
        ("update", "replicasets/*"),
        id="rs-revision-annotation-lost",
    ),
    pytest.param(_rs_labels, RS, None, ("patch", "replicasets/*"), id="rs-released"),
]


def _matches(action: tuple[str, str], want: tuple[str, str]) -> bool:
    if want[1].endswith("*"):
        return action[0] == want[0] and action[1].startswith(want[1][:-1])
    return action == want


@pytest.mark.parametrize("defaults", [False, True], ids=["bare", "api-defaults"])
@pytest.mark.asyncio
async def test_settled_deployment_sync_is_a_noop(defaults: bool) -> None:
    s = Settled(defaults)
    await s.settle()
    for _ in range(3):
        result = await s.sync()
        assert s.client.actions == []
        assert result.action == "noop"


def _in_shapes(cases: list[Any]) -> list[Any]:
    """Each case in each settled shape it applies to (none is generated only to be skipped)."""
    out = []
    for case in cases:
        edit, target, only, want = case.values
        for shape in ("bare", "api-defaults"):
            if only in (None, shape):
                out.append(
                    pytest.param(
                        edit, target, want, shape, id=f"{case.id}-{shape}", marks=case.marks
                    )
                )
    return out


@pytest.mark.parametrize(("edit", "target", "want", "shape"), _in_shapes(CASES))
@pytest.mark.asyncio
async def test_settled_deployment_notices_one_change(
    edit: Callable[[Obj], None],
    target: int,
    want: tuple[str, str],
    shape: str,
) -> None:
    s = Settled(shape == "api-defaults")
    await s.settle()
    s.change(target, s.deployment() if target == DEPLOYMENT else s.only_rs(), edit)
    s.client.actions.clear()
    await s.sync()
    assert any(_matches(a, want) for a in s.client.actions), s.client.actions


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_status_field("availableReplicas", 2), id="status-count-drifted"),
        pytest.param(_status_field("terminatingReplicas", 1), id="status-unknown-field-set"),
        pytest.param(
            _condition("Available", status="False", reason="MinimumReplicasUnavailable"),
            id="available-condition-drifted",
        ),
        pytest.param(_drop_condition("Available"), id="available-condition-gone"),
    ],
)
@pytest.mark.asyncio
async def test_settled_paused_deployment_notices_status_drift(
    edit: Callable[[Obj], None],
) -> None:
    s = Settled(True)
    await s.settle()
    s.change(DEPLOYMENT, s.deployment(), _spec(paused=True))
    await s.settle()
    s.change(DEPLOYMENT, s.deployment(), edit)
    s.client.actions.clear()
    await s.sync()
    assert s.client.actions == [("update", "deployments/status")]


@pytest.mark.asyncio
async def test_settled_deployment_adopts_an_orphan() -> None:
    s = Settled(True)
    await s.settle()
    orphan = copy.deepcopy(s.only_rs())
    orphan["metadata"].update(name="web-orphan", uid="orphan-uid")
    del orphan["metadata"]["ownerReferences"]
    put(s.informers[1], orphan)
    s.client.actions.clear()
    await s.sync()
    assert ("get", "deployments/web") in s.client.actions
    assert ("patch", "replicasets/web-orphan") in s.client.actions


@pytest.mark.asyncio
async def test_settled_deployment_cleans_up_beyond_the_history_limit() -> None:
    s = Settled(True)
    await s.settle()
    old = copy.deepcopy(s.only_rs())
    old["metadata"].update(
        name="web-old", uid="web-old-uid", creationTimestamp="2023-01-01T00:00:00Z"
    )
    old["metadata"]["annotations"][util.REVISION_ANNOTATION] = "0"
    old["spec"] = {**old["spec"], "replicas": 0}
    old["spec"]["template"] = {**old["spec"]["template"], "spec": {"containers": []}}
    old["status"] = {"replicas": 0, "observedGeneration": old["metadata"]["generation"]}
    put(s.informers[1], old)
    await s.settle()  # within the limit: kept
    assert ("delete", "replicasets/web-old") not in s.client.actions
    s.change(DEPLOYMENT, s.deployment(), _spec(revisionHistoryLimit=0))
    s.client.actions.clear()
    await s.sync()  # the new generation is observed first: only then is the rollout complete
    await s.sync()
    assert ("delete", "replicasets/web-old") in s.client.actions


@pytest.mark.asyncio
async def test_stalled_rollout_times_out_with_nothing_changed_but_the_clock() -> None:
    s = Settled(True)
    await s.settle()
    # The new RS's pod never becomes available: maxUnavailable 0 keeps the old RS at 3.
    s.client.broken_image = "nginx:2"
    s.change(DEPLOYMENT, s.deployment(), _image)
    await s.settle()
    rss = [r for r in s.informers[1].indexer.list() if r["metadata"]["name"].startswith("web-")]
    assert sorted(r["spec"]["replicas"] for r in rss) == [1, 3]
    progressing = util.get_condition(s.deployment()["status"], util.PROGRESSING)
    assert progressing is not None and progressing["reason"] == util.NEW_RS_CREATED
    # The same objects, synced again before the deadline: nothing to write, a requeue at it.
    s.clock.set_wall_ns(NOW_NS + 300 * 10**9)
    result = await s.sync()
    assert s.client.actions == []
    assert result.requeue_after == pytest.approx(301)
    s.clock.set_wall_ns(NOW_NS + 602 * 10**9)
    await s.sync()
    assert s.client.actions == [("update", "deployments/status")]
    progressing = util.get_condition(s.deployment()["status"], util.PROGRESSING)
    assert progressing is not None and progressing["reason"] == util.TIMED_OUT
    s.client.actions.clear()
    await s.sync()  # timed out stays so, and is settled
    assert s.client.actions == []


# -- the revision sync, answered once per sync --------------------------------------------------


def _counting_find(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    find = util.find_new_replica_set

    def counted(deployment: Any, rss: Any) -> Any:
        calls[0] += 1
        return find(deployment, rss)

    monkeypatch.setattr(util, "find_new_replica_set", counted)
    return calls


async def _settled_context() -> tuple[Settled, SyncContext, Obj, list[Obj]]:
    s = Settled(True)
    await s.settle()
    d = copy.copy(s.deployment())
    d["metadata"], d["status"] = dict(d["metadata"]), dict(d["status"])
    ctx = SyncContext(s.client, s.recorder, s.clock)
    return s, ctx, d, [s.only_rs()]


@pytest.mark.asyncio
async def test_revision_sync_that_wrote_nothing_is_answered_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, ctx, d, rs_list = await _settled_context()
    calls = _counting_find(monkeypatch)
    first = await get_all_replica_sets_and_sync_revision(ctx, d, rs_list, False)
    second = await get_all_replica_sets_and_sync_revision(ctx, d, rs_list, True)
    assert second == first and second[0] is rs_list[0]
    assert calls == [1]
    # Another list, or the deployment's status written in between: computed again.
    await get_all_replica_sets_and_sync_revision(ctx, d, list(rs_list), True)
    assert calls == [2]
    await update_status(ctx, d)
    await get_all_replica_sets_and_sync_revision(ctx, d, rs_list, True)
    assert calls == [3]


@pytest.mark.asyncio
async def test_revision_sync_that_wrote_is_computed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s, ctx, d, rs_list = await _settled_context()
    stale = copy.deepcopy(rs_list[0])
    del stale["metadata"]["annotations"][util.REVISION_ANNOTATION]
    calls = _counting_find(monkeypatch)
    s.client.actions.clear()
    stale_list = [stale]
    updated, _ = await get_all_replica_sets_and_sync_revision(ctx, d, stale_list, False)
    assert updated is not None and updated is not stale
    await get_all_replica_sets_and_sync_revision(ctx, d, stale_list, True)
    # As KCM: the second call reads the same (stale) list and writes again.
    assert calls == [2]
    assert [a[0] for a in s.client.actions] == ["update", "update"]
