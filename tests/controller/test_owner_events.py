"""KCM's rules for events on controlled objects (ControllerBuilder.controls), the primary
resource's forget hook (for_), rules that see the event itself (handles), and a builder over
given informers (standalone): informer events in, the queue's keys and the hooks' calls out."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.cache.listwatch import FakeListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import DeletedFinalStateUnknown
from pycm.controller import ControllerBuilder, Request, Result
from pycm.controller.owner_events import AFTER_UPDATE_REASON
from pycm.kube.resources import CONFIGMAPS, DEPLOYMENTS, PODS, REPLICASETS, Resource
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from tests.controller.test_builder import _queued

Obj = dict[str, Any]


class Expectations:
    """Records what the rules observed (the UIDTrackingExpectations calls)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def creation_observed(self, key: str) -> None:
        self.calls.append(("created", key))

    def deletion_observed_uid(self, key: str, uid: str) -> None:
        self.calls.append(("deleted", key, uid))


class Rig:
    """A standalone builder over hand-made informers; the primary cache pre-filled."""

    def __init__(self, primary: Resource, *others: Resource) -> None:
        self.clock, bus = FakeClock(), Bus()
        self.informers = {
            r: SharedIndexInformer(FakeListWatch(), r.resource, clock=self.clock, bus=bus)
            for r in (primary, *others)
        }
        self.builder = ControllerBuilder.standalone(
            "test", self.informers, clock=self.clock, bus=bus
        )
        self.primary = primary

    def cache(self, *objs: Obj) -> None:
        for obj in objs:
            self.informers[self.primary].indexer.add(obj)

    def build(self) -> None:
        async def sync(key: str) -> Result:
            return Result()

        self.builder.build(sync)

    def handler(self, resource: Resource) -> Any:
        (registration,) = self.informers[resource].registrations
        return registration.handler

    async def queued(self) -> list[str]:
        """The keys queued, in order (the queue emptied)."""
        return await _queued(self.builder)


def _obj(kind: str, name: str, uid: str = "", *, rv: str = "1", **meta: Any) -> Obj:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "uid": uid or f"{name}-uid", **meta}
        | {"resourceVersion": rv},
    }


def _owned(
    name: str, owner: str, owner_uid: str = "", *, kind: str = "ReplicaSet", **kw: Any
) -> Obj:
    ref = {"apiVersion": "apps/v1", "kind": kind, "name": owner, "controller": True}
    ref["uid"] = owner_uid or f"{owner}-uid"
    return _obj("Pod", name, ownerReferences=[ref], **kw)


def _rs(name: str, *, uid: str = "", min_ready: int = 0) -> Obj:
    rs = _obj("ReplicaSet", name, uid)
    rs["spec"] = {"minReadySeconds": min_ready}
    return rs


def _ready(pod: Obj, ready: bool) -> Obj:
    status = "True" if ready else "False"
    return pod | {"status": {"conditions": [{"type": "Ready", "status": status}]}}


def _rs_rig(
    *, adopt: list[str] | None = None, after: bool = False, expectations: bool = True
) -> tuple[Rig, Expectations]:
    rig = Rig(REPLICASETS, PODS)
    rig.cache(_rs("web"), _rs("api"), _rs("slow", min_ready=30))
    seen = Expectations()

    def adopters(pod: Obj) -> list[Obj]:
        return [_rs(name) for name in adopt or ()]

    def recheck(owner: Obj, old: Obj, cur: Obj) -> float | None:
        return 31.0 if owner["spec"]["minReadySeconds"] else None

    rig.builder.for_(REPLICASETS).controls(
        PODS,
        adopters=adopters,
        expectations=seen if expectations else None,
        after_update=recheck if after else None,
    )
    rig.build()
    return rig, seen


@pytest.mark.asyncio
async def test_controls_add_owned_enqueues_resolved_owner_and_observes_creation() -> None:
    rig, seen = _rs_rig(adopt=["api"])
    pods = rig.handler(PODS)
    pods.on_add(_owned("p1", "web"), False)
    # Of a re-created owner (the UID differs), of an owner not cached, of another kind: none,
    # and an owned pod is never handed to the adopters.
    pods.on_add(_owned("p2", "web", "old-web-uid"), False)
    pods.on_add(_owned("p3", "gone"), False)
    pods.on_add(_owned("p4", "web", kind="StatefulSet"), False)
    assert await rig.queued() == ["ns/web"]
    assert seen.calls == [("created", "ns/web")]


@pytest.mark.asyncio
async def test_controls_add_orphan_enqueues_adopters_being_deleted_is_a_delete() -> None:
    rig, seen = _rs_rig(adopt=["api", "web"])
    pods = rig.handler(PODS)
    pods.on_add(_obj("Pod", "orphan"), False)
    assert await rig.queued() == ["ns/api", "ns/web"]
    pods.on_add(_owned("p1", "web", deletionTimestamp="2026-01-01T00:00:00Z"), False)
    assert await rig.queued() == ["ns/web"]
    assert seen.calls == [("deleted", "ns/web", "ns/p1")]


@pytest.mark.parametrize(
    ("old", "cur", "adopt", "queued"),
    [
        pytest.param(
            _owned("p", "web"), _owned("p", "web", rv="2"), ["api"], ["ns/web"], id="owned"
        ),
        pytest.param(_owned("p", "web"), _owned("p", "web"), ["api"], [], id="resync-same-rv"),
        pytest.param(
            _owned("p", "api"),
            _owned("p", "web", rv="2"),
            [],
            ["ns/api", "ns/web"],
            id="controller-ref-changed-old-owner-too",
        ),
        pytest.param(
            _owned("p", "web"),
            _obj("Pod", "p", rv="2"),
            ["api"],
            ["ns/web", "ns/api"],
            id="released-old-owner-and-adopters",
        ),
        pytest.param(
            _obj("Pod", "p", labels={"a": "1"}),
            _obj("Pod", "p", rv="2", labels={"a": "2"}),
            ["api"],
            ["ns/api"],
            id="orphan-labels-changed-adopters",
        ),
        pytest.param(
            _obj("Pod", "p", labels={"a": "1"}),
            _obj("Pod", "p", rv="2", labels={"a": "1"}),
            ["api"],
            [],
            id="orphan-labels-unchanged-nothing",
        ),
        pytest.param(
            _owned("p", "web", labels={"a": "1"}),
            _owned("p", "web", rv="2", labels={"a": "2"}),
            ["api"],
            ["ns/web"],
            id="owned-labels-changed-owner-only",
        ),
    ],
)
@pytest.mark.asyncio
async def test_controls_update_follows_kcm_update_rules(
    old: Obj, cur: Obj, adopt: list[str], queued: list[str]
) -> None:
    rig, seen = _rs_rig(adopt=adopt)
    rig.handler(PODS).on_update(old, cur)
    assert await rig.queued() == queued
    assert seen.calls == []


@pytest.mark.asyncio
async def test_controls_update_being_deleted_with_expectations_is_delete_of_both() -> None:
    rig, seen = _rs_rig(adopt=["api"])
    old = _owned("p", "web", labels={"a": "1"})
    cur = _owned("p", "web", rv="2", labels={"a": "2"}, deletionTimestamp="2026-01-01T00:00:00Z")
    rig.handler(PODS).on_update(old, cur)
    assert await rig.queued() == ["ns/web"]
    # The new object's delete, then the old one's (its labels changed).
    assert seen.calls == [("deleted", "ns/web", "ns/p")] * 2


@pytest.mark.asyncio
async def test_controls_update_being_deleted_without_expectations_is_an_update() -> None:
    # The Deployment controller's updateReplicaSet: no expectations, so no early delete.
    rig, _ = _rs_rig(adopt=["api"], expectations=False)
    old = _owned("p", "api")
    cur = _owned("p", "web", rv="2", deletionTimestamp="2026-01-01T00:00:00Z")
    rig.handler(PODS).on_update(old, cur)
    assert await rig.queued() == ["ns/api", "ns/web"]


@pytest.mark.asyncio
async def test_controls_after_update_delay_enqueues_owner_again_later() -> None:
    rig, _ = _rs_rig(after=True)
    pods = rig.handler(PODS)
    pods.on_update(_ready(_owned("p", "slow"), False), _ready(_owned("p", "slow", rv="2"), True))
    pods.on_update(_ready(_owned("q", "web"), False), _ready(_owned("q", "web", rv="2"), True))
    assert await rig.queued() == ["ns/slow", "ns/web"]
    queue = rig.builder.controller.queue
    delayed = queue.delayed_items()
    assert list(delayed) == ["ns/slow"]  # the hook said None for web
    assert delayed["ns/slow"] / 1e9 - rig.clock.monotonic() == pytest.approx(31.0)
    assert AFTER_UPDATE_REASON == "after_update"


@pytest.mark.asyncio
async def test_controls_delete_tombstone_enqueues_owner_observes_deletion() -> None:
    rig, seen = _rs_rig(adopt=["api"])
    pods = rig.handler(PODS)
    pods.on_delete(DeletedFinalStateUnknown("ns/p1", _owned("p1", "web")))
    pods.on_delete(_obj("Pod", "orphan"))  # an orphan's delete concerns no one
    pods.on_delete(_owned("p2", "web", "old-web-uid"))
    assert await rig.queued() == ["ns/web"]
    assert seen.calls == [("deleted", "ns/web", "ns/p1")]


@pytest.mark.asyncio
async def test_for_forget_on_delete_and_on_recreation_not_on_update() -> None:
    rig = Rig(DEPLOYMENTS)
    forgotten: list[tuple[str, str]] = []
    rig.builder.for_(
        DEPLOYMENTS, forget=lambda key, d: forgotten.append((key, d["metadata"]["uid"]))
    )
    rig.build()
    ds = rig.handler(DEPLOYMENTS)
    ds.on_add(_obj("Deployment", "a"), True)
    ds.on_update(_obj("Deployment", "a"), _obj("Deployment", "a", rv="2"))
    assert forgotten == []
    ds.on_update(_obj("Deployment", "b", "b-1"), _obj("Deployment", "b", "b-2", rv="2"))
    ds.on_delete(DeletedFinalStateUnknown("ns/c", _obj("Deployment", "c")))
    assert forgotten == [("ns/b", "b-1"), ("ns/c", "c-uid")]
    assert await rig.queued() == ["ns/a", "ns/b", "ns/c"]


@pytest.mark.asyncio
async def test_handles_sees_old_and_new_and_unwrapped_tombstone() -> None:
    rig = Rig(DEPLOYMENTS, PODS)
    updates: list[tuple[str, str]] = []

    def on_update(old: Obj, new: Obj) -> list[str | Request]:
        updates.append((old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"]))
        return ["ns/from-update", Request("ns", "as-request")]

    def on_delete(pod: Obj) -> tuple[str, ...]:
        return (f"ns/{pod['metadata']['name']}-owner",)

    rig.builder.for_(DEPLOYMENTS).handles(PODS, on_update=on_update, on_delete=on_delete)
    rig.build()
    pods = rig.handler(PODS)
    pods.on_add(_obj("Pod", "x"), False)  # no on_add: nothing
    pods.on_update(_obj("Pod", "x"), _obj("Pod", "x", rv="7"))
    pods.on_delete(DeletedFinalStateUnknown("ns/y", _obj("Pod", "y")))
    assert updates == [("1", "7")]
    assert await rig.queued() == ["ns/from-update", "ns/as-request", "ns/y-owner"]


@pytest.mark.asyncio
async def test_standalone_build_runs_once_and_uses_given_informers() -> None:
    rig = Rig(CONFIGMAPS)
    rig.builder.for_(CONFIGMAPS)
    with pytest.raises(ValueError, match="before build"):
        await rig.builder.run()
    rig.build()
    assert rig.builder.context.queues == {"test": rig.builder.controller}
    assert rig.builder.informer(CONFIGMAPS) is rig.informers[CONFIGMAPS]
    assert rig.builder.controller.max_retries == 15  # KCM's, the built-ins' default
    with pytest.raises(ValueError, match="already called"):
        rig.build()
