"""Scaling under ``spec.podReplacementPolicy`` (gate DeploymentPodReplacementPolicy): KCM's
TestScale table (sync_test.go), its podReplacementPolicy cases, run through
:func:`sync.scale` with the gate on, as kube runs them through scaleV2.

kube's fixture: a ReplicaSet given without annotations gets the ones the deployment had before
the scaling event (``desired-replicas`` = the old size, ``max-replicas`` = the old size plus the
old maxSurge); the sizes are always compared, the annotations only where the case gives them.
The partial-scaling rule these cases pin down is written in replacement.py's docstring."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from pycm.controllers.deployment import replacement, util
from pycm.controllers.deployment.context import SyncContext
from pycm.controllers.deployment.sync import scale, set_new_replica_set_annotations

Obj = dict[str, Any]

COMPLETE, STARTED = replacement.TERMINATION_COMPLETE, replacement.TERMINATION_STARTED
NEWER, OLD, OLDER = "2016-05-20T02:00:00Z", "2016-05-20T01:00:00Z", "2016-05-20T00:00:00Z"
DESIRED, MAX = util.DESIRED_REPLICAS_ANNOTATION, util.MAX_REPLICAS_ANNOTATION
BEFORE = util.REPLICAS_BEFORE_SCALE_ANNOTATION


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
    def __init__(self) -> None:
        self.events: list[str] = []

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append(message)


@dataclass(frozen=True)
class RS:
    """One ReplicaSet of a case: kube's newRSWithFullStatus (name, spec.replicas, status,
    annotations, creation time). ``annotations`` None: the old deployment's."""

    name: str
    spec: int
    status: Obj = field(default_factory=dict)
    annotations: dict[str, str] | None = None
    created: str = NEWER


@dataclass(frozen=True)
class Want:
    """A ReplicaSet after the scale: its size, and its annotations when the case gives them."""

    name: str
    spec: int
    annotations: dict[str, str] | None = None


@dataclass(frozen=True)
class Case:
    replicas: int
    old_replicas: int
    new_rs: RS | None
    old_rss: tuple[RS, ...]
    want: tuple[Want, ...] = ()
    policy: str | None = COMPLETE
    surge: int = 0
    recreate: bool = False
    error: bool = False


def _deployment(replicas: int, surge: int, recreate: bool, policy: str | None) -> Obj:
    # kube's newDeployment: maxSurge and maxUnavailable 0 unless given.
    strategy: Obj = (
        {"type": "Recreate"}
        if recreate
        else {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 0}}
    )
    spec: Obj = {"replicas": replicas, "strategy": strategy}
    if policy is not None:
        spec["podReplacementPolicy"] = policy
    return {"metadata": {"name": "foo", "namespace": "ns", "annotations": {}}, "spec": spec}


def _rs(rs: RS, old_deployment: Obj) -> Obj:
    annotations = rs.annotations
    if annotations is None:
        old = util.replicas_of(old_deployment)
        annotations = {DESIRED: str(old), MAX: str(old + util.max_surge(old_deployment))}
    return {
        "metadata": {
            "name": rs.name,
            "namespace": "ns",
            "creationTimestamp": rs.created,
            "annotations": dict(annotations),
        },
        "spec": {"replicas": rs.spec},
        "status": dict(rs.status),
    }


def _t(n: int) -> Obj:
    return {"terminatingReplicas": n}


def _a(desired: int, max_replicas: int, before: int | None = None) -> dict[str, str]:
    out = {DESIRED: str(desired), MAX: str(max_replicas)}
    if before is not None:
        out[BEFORE] = str(before)
    return out


CASES = [
    # Unset and TerminationStarted: terminating pods are ignored, as before the gate.
    pytest.param(
        Case(14, 10, RS("foo-v1", 10, _t(2)), (), (Want("foo-v1", 14, _a(14, 14)),), None),
        id="not-partial-with-empty-policy-10-14",
    ),
    pytest.param(
        Case(14, 10, RS("foo-v1", 10, _t(2)), (), (Want("foo-v1", 14, _a(14, 14)),), STARTED),
        id="not-partial-with-termination-started-10-14",
    ),
    # TerminationComplete: the only ReplicaSet grows by the room the terminating pods leave.
    pytest.param(
        Case(14, 10, RS("foo-v1", 10, _t(2)), (), (Want("foo-v1", 12, _a(10, 10, 10)),)),
        id="terminating-pods-10-12-of-14",
    ),
    pytest.param(
        Case(
            14,
            10,
            RS("foo-v1", 10, _t(2)),
            (),
            (Want("foo-v1", 12, _a(10, 10, 10)),),
            recreate=True,
        ),
        id="recreate-terminating-pods-10-12-of-14",
    ),
    # status.replicas above spec.replicas: the extra pod counts against the room too.
    pytest.param(
        Case(
            14,
            10,
            RS("foo-v1", 10, {"observedGeneration": 1, "replicas": 11, "terminatingReplicas": 0}),
            (),
            (Want("foo-v1", 13, _a(10, 10, 10)),),
        ),
        id="surge-pods-10-13-of-14",
    ),
    pytest.param(
        Case(
            14,
            10,
            RS("foo-v1", 10, {"replicas": 11}),
            (),
            (Want("foo-v1", 13, _a(10, 10, 10)),),
            recreate=True,
        ),
        id="recreate-surge-pods-10-13-of-14",
    ),
    pytest.param(
        Case(14, 10, RS("foo-v1", 10), (), (Want("foo-v1", 14, _a(14, 14)),), recreate=True),
        id="recreate-unsynced-no-pods-10-14",
    ),
    pytest.param(
        Case(
            14,
            10,
            RS("foo-v2", 10),
            (RS("foo-v1", 0, {"observedGeneration": 1, "replicas": 0}, created=OLD),),
            recreate=True,
            error=True,
        ),
        id="recreate-unknown-terminating-errors",
    ),
    pytest.param(
        Case(14, 10, RS("foo-v1", 10, _t(4)), (), (Want("foo-v1", 13, _a(10, 13, 10)),), surge=3),
        id="max-surge-terminating-part-1-10-13-of-14",
    ),
    pytest.param(
        Case(
            14,
            10,
            RS("foo-v1", 13, {}, _a(10, 13, 10)),
            (),
            (Want("foo-v1", 14, _a(14, 17)),),
            surge=3,
        ),
        id="max-surge-terminating-part-2-13-14",
    ),
    # Proportional scaling of several ReplicaSets.
    pytest.param(
        Case(
            10,
            5,
            RS("foo-v2", 2, _t(1)),
            (RS("foo-v1", 3, {"terminatingReplicas": 1, "replicas": 4}, created=OLD),),
            (Want("foo-v2", 4, _a(10, 10)), Want("foo-v1", 6, _a(10, 10))),
            None,
        ),
        id="proportional-not-partial-with-empty-policy-5-10",
    ),
    pytest.param(
        Case(
            10,
            5,
            RS("foo-v2", 2, _t(1)),
            (RS("foo-v1", 3, {"terminatingReplicas": 1, "replicas": 4}, created=OLD),),
            (Want("foo-v2", 4, _a(10, 10)), Want("foo-v1", 6, _a(10, 10))),
            STARTED,
        ),
        id="proportional-not-partial-with-termination-started-5-10",
    ),
    pytest.param(
        Case(
            10,
            5,
            RS("foo-v2", 2, _t(1)),
            (RS("foo-v1", 3, _t(1), created=OLD),),
            (Want("foo-v2", 2, _a(5, 5, 2)), Want("foo-v1", 6, _a(10, 10))),
        ),
        id="proportional-partial-5-8-of-10",
    ),
    pytest.param(
        Case(
            10,
            5,
            RS("foo-v2", 2, {"observedGeneration": 1, "terminatingReplicas": 1}),
            (RS("foo-v1", 3, {"observedGeneration": 1}, created=OLD),),
            error=True,
        ),
        id="proportional-unknown-terminating-errors",
    ),
    pytest.param(
        Case(
            12,
            7,
            RS("foo-v3", 2, _t(1)),
            (
                RS("foo-v2", 3, created=OLD),
                RS(
                    "foo-v1",
                    2,
                    {"observedGeneration": 1, "replicas": 3, "terminatingReplicas": 0},
                    created=OLDER,
                ),
            ),
            (
                Want("foo-v3", 3, _a(12, 12)),
                Want("foo-v2", 5, _a(7, 7, 3)),
                Want("foo-v1", 2, _a(7, 7, 2)),
            ),
        ),
        id="proportional-terminating-and-surge-part-1-7-10-of-12",
    ),
    pytest.param(
        Case(
            12,
            7,
            RS("foo-v3", 3, {}, _a(12, 12)),
            (
                RS("foo-v2", 5, {}, _a(7, 7, 3), created=OLD),
                RS(
                    "foo-v1",
                    2,
                    {"observedGeneration": 1, "replicas": 2, "terminatingReplicas": 0},
                    _a(7, 7, 2),
                    created=OLDER,
                ),
            ),
            (
                Want("foo-v3", 3, _a(12, 12)),
                Want("foo-v2", 6, _a(12, 12)),
                Want("foo-v1", 3, _a(12, 12)),
            ),
        ),
        id="proportional-terminating-and-surge-part-2-7-12",
    ),
    # The KEP's table: 100 → 120 with maxSurge 10 and 15 pods terminating, then 5, then none.
    pytest.param(
        Case(
            120,
            100,
            RS("foo-v3", 50, _t(6), _a(100, 110)),
            (
                RS("foo-v2", 30, _t(4), _a(100, 110), created=OLD),
                RS("foo-v1", 20, _t(5), _a(100, 110), created=OLDER),
            ),
            (
                Want("foo-v3", 59, _a(100, 110, 50)),
                Want("foo-v2", 35, _a(120, 130)),
                Want("foo-v1", 21, _a(100, 110, 20)),
            ),
            surge=10,
        ),
        id="proportional-max-surge-part-1-100-115-of-130",
    ),
    pytest.param(
        Case(
            120,
            100,
            RS("foo-v3", 59, _t(2), _a(100, 110, 50)),
            (
                RS("foo-v2", 35, _t(3), _a(120, 130), created=OLD),
                RS("foo-v1", 21, {}, _a(100, 110, 20), created=OLDER),
            ),
            (
                Want("foo-v3", 66, _a(100, 110, 50)),
                Want("foo-v2", 35, _a(120, 130)),
                Want("foo-v1", 24, _a(120, 130)),
            ),
            surge=10,
        ),
        id="proportional-max-surge-part-2-100-125-of-130",
    ),
    pytest.param(
        Case(
            120,
            100,
            RS("foo-v3", 66, {}, _a(100, 110, 50)),
            (
                RS("foo-v2", 35, {}, _a(120, 130), created=OLD),
                RS("foo-v1", 24, {}, _a(120, 130), created=OLDER),
            ),
            (
                Want("foo-v3", 71, _a(120, 130)),
                Want("foo-v2", 35, _a(120, 130)),
                Want("foo-v1", 24, _a(120, 130)),
            ),
            surge=10,
        ),
        id="proportional-max-surge-part-3-100-130",
    ),
]


async def _scale(case: Case, gate: bool = True) -> tuple[dict[str, Obj], ScaleClient, Recorder]:
    deployment = _deployment(case.replicas, case.surge, case.recreate, case.policy)
    old_deployment = _deployment(case.old_replicas, case.surge, case.recreate, case.policy)
    new_rs = _rs(case.new_rs, old_deployment) if case.new_rs is not None else None
    old_rss = [_rs(rs, old_deployment) for rs in case.old_rss]
    client, recorder = ScaleClient(), Recorder()
    ctx = SyncContext(client, recorder, pod_replacement_policy=gate)  # type: ignore[arg-type]
    await scale(ctx, deployment, new_rs, old_rss)
    after = {rs["metadata"]["name"]: rs for rs in [new_rs, *old_rss] if rs is not None}
    for body in client.updated:
        after[body["metadata"]["name"]] = body
    return after, client, recorder


@pytest.mark.parametrize("case", CASES)
@pytest.mark.asyncio
async def test_scale_kcm_pod_replacement_policy_cases(case: Case) -> None:
    if case.error:
        with pytest.raises(replacement.TerminatingReplicasUnknownError, match="ns/foo-v1"):
            await _scale(case)
        return
    after, _, _ = await _scale(case)
    for want in case.want:
        rs = after[want.name]
        assert rs["spec"]["replicas"] == want.spec, want.name
        if want.annotations is not None:
            assert rs["metadata"]["annotations"] == want.annotations, want.name


@pytest.mark.asyncio
async def test_scale_unknown_terminating_count_writes_nothing() -> None:
    # The room is counted before any write: a failing sync leaves every ReplicaSet as it was.
    deployment = _deployment(10, 0, False, COMPLETE)
    new_rs = _rs(RS("foo-v2", 2, _t(1)), _deployment(5, 0, False, COMPLETE))
    old_rs = _rs(RS("foo-v1", 3, {"observedGeneration": 1}, created=OLD), deployment)
    client = ScaleClient()
    ctx = SyncContext(client, Recorder(), pod_replacement_policy=True)  # type: ignore[arg-type]
    with pytest.raises(replacement.TerminatingReplicasUnknownError, match="ns/foo-v1"):
        await scale(ctx, deployment, new_rs, [old_rs])
    assert client.updated == []


@pytest.mark.asyncio
async def test_scale_with_gate_off_ignores_the_policy() -> None:
    # The same deployment as terminating-pods-10-12-of-14, the gate off: the field is not
    # read, so the ReplicaSet goes straight to 14 and no pre-scale size is recorded.
    case = Case(14, 10, RS("foo-v1", 10, _t(2)), ())
    after, _, recorder = await _scale(case, gate=False)
    assert after["foo-v1"]["spec"]["replicas"] == 14
    assert after["foo-v1"]["metadata"]["annotations"] == _a(14, 14)
    assert recorder.events == ["Scaled up replica set foo-v1 to 14 from 10"]


@pytest.mark.asyncio
async def test_partial_scale_with_no_room_only_records_the_size_before_scale() -> None:
    # 10 → 14 with 4 pods terminating and no surge: nothing may start yet; the ReplicaSet
    # keeps its size and pre-scale annotations and remembers it was 10, with no event.
    after, client, recorder = await _scale(Case(14, 10, RS("foo-v1", 10, _t(4)), ()))
    assert after["foo-v1"]["spec"]["replicas"] == 10
    assert after["foo-v1"]["metadata"]["annotations"] == _a(10, 10, 10)
    assert len(client.updated) == 1
    assert recorder.events == []


@pytest.mark.asyncio
async def test_partial_scale_records_an_event_for_the_part_done() -> None:
    _, _, recorder = await _scale(Case(14, 10, RS("foo-v1", 10, _t(2)), ()))
    assert recorder.events == ["Scaled up replica set foo-v1 to 12 from 10"]


@pytest.mark.asyncio
async def test_scale_down_is_never_held_back_by_terminating_pods() -> None:
    # KEP-3973: scaling down replaces no pod, so TerminationComplete leaves it alone.
    after, _, _ = await _scale(Case(5, 10, RS("foo-v1", 10, _t(7)), ()))
    assert after["foo-v1"]["spec"]["replicas"] == 5
    assert after["foo-v1"]["metadata"]["annotations"] == _a(5, 5)


@pytest.mark.asyncio
async def test_scale_back_to_the_old_size_ends_a_partial_scale() -> None:
    # Partial at 12 of 14 (pre-scale 10), then scaled to 12: that is where the ReplicaSet
    # is, so the scale is complete and the pre-scale size goes.
    rs = RS("foo-v1", 12, _t(2), _a(10, 10, 10))
    after, client, recorder = await _scale(Case(12, 10, rs, ()))
    assert after["foo-v1"]["spec"]["replicas"] == 12
    assert after["foo-v1"]["metadata"]["annotations"] == _a(12, 12)
    assert recorder.events == []
    assert len(client.updated) == 1


@pytest.mark.parametrize(
    ("replicas", "old_replicas", "sizes", "want"),
    [
        # kube's TestScale cases without terminating pods: under TerminationComplete the
        # room is never short, so the sizes are those of the historical scaling.
        pytest.param(10, 5, (2, 3), (4, 6), id="proportional-5-10"),
        pytest.param(3, 5, (2, 3), (1, 2), id="proportional-5-3"),
        pytest.param(4, 9, (8, 1), (4, 0), id="proportional-9-4"),
        pytest.param(10, 7, (2, 3, 2), (3, 4, 3), id="proportional-7-10"),
        pytest.param(8, 13, (2, 8, 3), (1, 5, 2), id="proportional-13-8"),
        pytest.param(4, 3, (1, 1, 1), (2, 1, 1), id="leftover-3-4"),
        pytest.param(2, 3, (1, 1, 1), (1, 1, 0), id="leftover-3-2"),
        pytest.param(0, 6, (3, 2, 1), (0, 0, 0), id="proportional-6-0"),
    ],
)
@pytest.mark.asyncio
async def test_scale_without_terminating_pods_matches_the_historical_sizes(
    replicas: int, old_replicas: int, sizes: tuple[int, ...], want: tuple[int, ...]
) -> None:
    names = ("foo-v3", "foo-v2", "foo-v1")[-len(sizes) :]
    created = (NEWER, OLD, OLDER)[-len(sizes) :]
    rss = [
        RS(n, s, {"observedGeneration": 1, "replicas": s, "terminatingReplicas": 0}, created=c)
        for n, s, c in zip(names, sizes, created, strict=True)
    ]
    case = Case(replicas, old_replicas, rss[0], tuple(rss[1:]))
    after, _, _ = await _scale(case)
    assert tuple(after[n]["spec"]["replicas"] for n in names) == want
    for n in names:
        assert BEFORE not in after[n]["metadata"]["annotations"]


@pytest.mark.asyncio
async def test_scale_up_never_shrinks_a_partial_replica_set_past_its_share() -> None:
    # kube's table does not decide this one; pycm's rule: during a scale-up a share below 0
    # counts as 0. foo-v1 is partial (was 20 of max 110, so heads for 24) but already holds
    # 30: it keeps 30 rather than giving 6 to foo-v2, which takes the whole leftover.
    case = Case(
        120,
        100,
        RS("foo-v2", 50, _t(0), _a(120, 130)),
        (RS("foo-v1", 30, _t(0), _a(100, 110, 20), created=OLD),),
        surge=10,
    )
    after, _, _ = await _scale(case)
    assert after["foo-v2"]["spec"]["replicas"] == 100
    assert after["foo-v1"]["spec"]["replicas"] == 30
    assert after["foo-v1"]["metadata"]["annotations"] == _a(120, 130)


@pytest.mark.asyncio
async def test_full_scale_without_the_policy_drops_a_left_over_size_before_scale() -> None:
    # Partial under TerminationComplete, then the policy changed to TerminationStarted: the
    # historical scaling finishes the event and, with the gate on, the pre-scale size goes.
    rs = RS("foo-v1", 12, _t(2), _a(10, 10, 10))
    after, _, recorder = await _scale(Case(14, 10, rs, (), policy=STARTED))
    assert after["foo-v1"]["spec"]["replicas"] == 14
    assert after["foo-v1"]["metadata"]["annotations"] == _a(14, 14)
    assert recorder.events == ["Scaled up replica set foo-v1 to 14 from 12"]


def test_size_before_scale_is_never_copied_from_the_deployment() -> None:
    # Like desired/max-replicas: a Deployment carrying it (an old kubectl's rollback copies
    # a ReplicaSet's annotations onto it) does not hand it to its ReplicaSets.
    deployment = _deployment(4, 0, False, COMPLETE)
    deployment["metadata"]["annotations"] = {BEFORE: "3", "team": "web"}
    rs = _rs(RS("foo-v1", 4), deployment)
    set_new_replica_set_annotations(deployment, rs, 1, True)
    assert rs["metadata"]["annotations"].get("team") == "web"
    assert BEFORE not in rs["metadata"]["annotations"]
    assert BEFORE in util.ANNOTATIONS_TO_SKIP  # nor copied back by pycm's rollback
