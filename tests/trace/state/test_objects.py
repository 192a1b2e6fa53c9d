"""Object histories: the steps folded per object, their bounds, the reconcile index, and the
snapshot's ``objects`` (asked-for histories, adopted by restore)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.objref import ObjectRef
from pycm.trace.state import State, object_histories, object_steps
from tests.trace.state.script import T0, Feed

DEPLOY = ObjectRef("deployments", "default", "web")
RS = ObjectRef("replicasets", "default", "web-6dc5")
POD = ObjectRef("pods", "default", "web-6dc5-abcde")


def scale_story(f: Feed) -> dict[str, str]:
    """kubectl-scale updates a Deployment; its reconcile updates the ReplicaSet; that one's
    reconcile creates a Pod and records an Event. Returns the span ids."""
    d_span, r_span = f.span(), f.span()
    d_trace, r_trace = d_span.rjust(32, "d"), r_span.rjust(32, "e")
    f(
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            namespace="default",
            name="web",
            resource="deployments",
            queue_wait_ms=1.5,
            trigger_kind="Deployment",
            trigger_object="default/web",
            trigger_rv="12",
            trigger_event="update",
            trigger_paths="spec.replicas",
            trigger_writer="kubectl-scale",
            trigger_operation="Update",
            trigger_merged=1,
        ),
        at=1.0,
        span_id=d_span,
        trace_id=d_trace,
    )
    f(
        k.ApiRequestCompleted(
            verb="update",
            resource="replicasets",
            namespace="default",
            name="web-6dc5",
            code=200,
            resource_version="13",
        ),
        at=1.001,
        span_id=f.span(),
        trace_id=d_trace,
        parent_id=d_span,
        dur_ns=800_000,
    )
    f(
        k.ReconcileFinished(
            controller="deployment", key="default/web", action="scaled_up", api_calls=1
        ),
        at=1.002,
        span_id=d_span,
        trace_id=d_trace,
        dur_ns=2_000_000,
    )
    f(
        k.ReconcileStarted(
            controller="replicaset",
            key="default/web-6dc5",
            resource="replicasets",
            queue_wait_ms=0.5,
            trigger_kind="ReplicaSet",
            trigger_object="default/web-6dc5",
            trigger_rv="13",
            trigger_event="update",
            trigger_paths="spec.replicas",
            trigger_trace_id=d_trace,
            trigger_span_id=d_span,
            trigger_controller="deployment",
            trigger_key="default/web",
            trigger_verb="update",
            trigger_merged=1,
        ),
        at=1.01,
        span_id=r_span,
        trace_id=r_trace,
    )
    f(
        k.ApiRequestCompleted(
            verb="create",
            resource="pods",
            namespace="default",
            name="web-6dc5-abcde",
            code=201,
            resource_version="14",
        ),
        at=1.011,
        span_id=f.span(),
        trace_id=r_trace,
        parent_id=r_span,
    )
    f(
        k.EventRecorded(
            type="Normal",
            reason="SuccessfulCreate",
            object_kind="ReplicaSet",
            namespace="default",
            name="web-6dc5",
        ),
        at=1.012,
        trace_id=r_trace,
        parent_id=r_span,
    )
    f(
        k.ReconcileFinished(controller="replicaset", key="default/web-6dc5", action="created_pods"),
        at=1.013,
        span_id=r_span,
        trace_id=r_trace,
        dur_ns=3_000_000,
    )
    return {"deployment": d_span, "replicaset": r_span}


def steps_of(state: State, ref: ObjectRef) -> list[tuple[Any, ...]]:
    hist = state.objects.history(ref)
    assert hist is not None
    return [(s["step"], s["controller"], s["event"] or s["verb"], s["rv"]) for s in hist["steps"]]


def test_objects_scale_story_each_object_has_its_steps() -> None:
    f = Feed()
    spans = scale_story(f)
    assert steps_of(f.state, DEPLOY) == [
        ("watch", "deployment", "update", "12"),
        ("reconcile", "deployment", "update", "12"),
    ]
    assert steps_of(f.state, RS) == [
        ("write", "deployment", "update", "13"),
        ("watch", "replicaset", "update", "13"),
        ("reconcile", "replicaset", "update", "13"),
        ("event", "replicaset", "created", ""),
    ]
    assert steps_of(f.state, POD) == [("write", "replicaset", "create", "14")]
    hist = f.state.objects.history(DEPLOY)
    assert hist is not None
    watch, rec = hist["steps"]
    assert watch["ts"] == T0 + 1_000_000_000 - 1_500_000  # enqueued: begin less the wait
    assert (watch["writer"], watch["paths"], watch["key"]) == (
        "kubectl-scale",
        "spec.replicas",
        "default/web",
    )
    assert (rec["result"], rec["action"], rec["dur_ns"], rec["wait_ms"]) == (
        "success",
        "scaled_up",
        2_000_000,
        1.5,
    )
    assert rec["span_id"] == spans["deployment"]
    rs = f.state.objects.history(RS)
    assert rs is not None
    event = rs["steps"][-1]
    assert (event["type"], event["reason"], event["span_id"]) == (
        "Normal",
        "SuccessfulCreate",
        spans["replicaset"],
    )


def test_objects_reconcile_failure_error_and_result_derived_from_outcome() -> None:
    f = Feed()
    span = f.span()
    f(k.ReconcileStarted(controller="c", key="ns/a", resource="widgets"), at=0, span_id=span)
    f(
        k.ReconcileFinished(controller="c", key="ns/a", error="x" * 1000),
        at=1,
        span_id=span,
        outcome=Outcome.ERROR,
    )
    hist = f.state.objects.history(ObjectRef("widgets", "ns", "a"))
    assert hist is not None
    (step,) = hist["steps"]
    assert step["result"] == "error"
    assert step["error"] == "x" * object_steps.MAX_ERROR
    assert hist["bytes"] == object_steps.step_bytes(f.state.objects.table["widgets", "ns", "a"][0])


def test_objects_bounded_steps_per_object_bytes_and_objects() -> None:
    state = State()
    for i in range(object_histories.MAX_STEPS + 30):
        state.apply(
            k.ApiRequestCompleted(
                verb="patch", resource="pods", namespace="ns", name="p", ts=T0 + i, seq=i + 1
            )
        )
    hist = state.objects.history(ObjectRef("pods", "ns", "p"))
    assert hist is not None
    assert len(hist["steps"]) == object_histories.MAX_STEPS
    assert hist["dropped"] == 30
    assert hist["steps"][0]["ts"] == T0 + 30
    for i in range(object_histories.MAX_OBJECTS + 10):
        state.apply(
            k.ApiRequestCompleted(
                verb="create", resource="pods", namespace="ns", name=f"q{i}", ts=T0, seq=0
            )
        )
    objs = state.objects
    assert len(objs.table) == object_histories.MAX_OBJECTS
    assert objs.evicted == 11  # p and the first ten
    assert objs.bytes == sum(h.bytes for h in objs.table.values())
    assert objs.bytes <= object_histories.MAX_BYTES


def test_objects_byte_budget_evicts_least_recently_touched(monkeypatch: Any) -> None:
    monkeypatch.setattr(object_histories, "MAX_BYTES", 3 * object_steps.STEP_BASE + 100)
    state = State()
    for name in ("a", "b", "c", "d"):
        state.apply(k.ApiRequestCompleted(verb="create", resource="pods", namespace="n", name=name))
    assert [key[2] for key in state.objects.table] == ["b", "c", "d"]


def test_objects_span_index_bounded_oldest_dropped(monkeypatch: Any) -> None:
    monkeypatch.setattr(object_histories, "MAX_SPANS", 3)
    f = Feed()
    spans = [f.span() for _ in range(5)]
    for i, span in enumerate(spans):
        f(k.ReconcileStarted(controller="c", key=f"n/k{i}", resource="pods"), at=i, span_id=span)
    assert list(f.state.objects.spans) == spans[2:]
    assert f.state.objects.span(spans[0]) is None
    found = f.state.objects.span(spans[4])
    assert found is not None and found["key"] == "n/k4"


def test_objects_merged_events_first_trigger_gets_its_own_watch_step() -> None:
    f = Feed()
    f(
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            resource="deployments",
            queue_wait_ms=100.0,
            trigger_kind="ReplicaSet",
            trigger_object="default/web-2",
            trigger_rv="30",
            trigger_event="update",
            trigger_writer="kube-controller-manager",
            trigger_merged=3,
            first_trigger_event="add",
            first_trigger_kind="Pod",
            first_trigger_object="default/web-2-x",
            first_trigger_rv="28",
            first_trigger_writer="kubelet",
        ),
        at=5,
        span_id=f.span(),
    )
    pod = f.state.objects.history(ObjectRef("pods", "default", "web-2-x"))
    rs = f.state.objects.history(ObjectRef("replicasets", "default", "web-2"))
    assert pod is not None and rs is not None
    (first,) = pod["steps"]
    (newest,) = rs["steps"]
    assert (first["event"], first["writer"], first["ts"]) == (
        "add",
        "kubelet",
        T0 + 5 * 10**9 - 10**8,
    )
    assert (newest["event"], newest["merged"], newest["ts"]) == ("update", 3, T0 + 5 * 10**9)


def test_objects_not_in_plain_snapshots_carried_when_asked_and_adopted_by_restore() -> None:
    f = Feed()
    spans = scale_story(f)
    snap = f.state.snapshot()
    assert snap["objects"] == {}
    asked = f.state.snapshot(objects=[RS, ObjectRef("pods", "x", "none")])
    assert list(asked["objects"]) == ["replicasets/default/web-6dc5"]
    wire = orjson.loads(orjson.dumps(asked))
    restored = State.restore(wire)
    assert restored.snapshot(objects=[RS])["objects"] == asked["objects"]
    assert restored.objects.span(spans["replicaset"]) is not None
    assert restored.objects.history(DEPLOY) is None


def test_objects_snapshot_with_a_malformed_step_is_a_type_error_viewers_catch() -> None:
    step = {"ts": "soon"}
    bad = {
        "objects": {
            "pods/a/b": {"resource": "pods", "namespace": "a", "name": "b", "steps": [step]}
        }
    }
    with pytest.raises(TypeError):
        State.restore(bad)


def test_objects_asked_for_histories_have_exactly_the_declared_fields() -> None:
    from pycm.trace.state import Snapshot
    from tests.trace.state.test_schema import mismatches

    f = Feed()
    scale_story(f)
    snap = orjson.loads(orjson.dumps(f.state.snapshot(objects=[DEPLOY, RS, POD])))
    assert len(snap["objects"]) == 3
    assert mismatches(snap, Snapshot) == []


def _pod_deleted(f: Feed, pod: str, at: float) -> None:
    """The replicaset controller reconciles its ReplicaSet because a pod's DELETED event came."""
    f(
        k.ReconcileStarted(
            controller="replicaset",
            key="default/web-6dc5",
            resource="replicasets",
            trigger_kind="Pod",
            trigger_object=f"default/{pod}",
            trigger_event="delete",
            trigger_rv="40",
            trigger_merged=1,
        ),
        at=at,
        span_id=f.span(),
    )


def test_a_deleted_objects_history_leaves_after_the_ttl_unless_made_again() -> None:
    """Under churn (pods made and deleted every second) the histories of deleted pods held the
    manager's memory growing for an hour; each now leaves DELETED_TTL_NS after its deletion,
    unless a step touched the name again (an object made again keeps its history)."""
    f = Feed()
    ttl = object_histories.DELETED_TTL_NS / 1e9
    for pod in ("gone", "back"):
        f(
            k.ApiRequestCompleted(verb="create", resource="pods", namespace="default", name=pod),
            at=0.5,
        )
        _pod_deleted(f, pod, at=1.0)
    f(
        k.ApiRequestCompleted(verb="create", resource="pods", namespace="default", name="back"),
        at=ttl / 2,
    )
    objs = f.state.objects
    assert objs.history(ObjectRef("pods", "default", "gone")) is not None
    before = objs.bytes
    _pod_deleted(f, "other", at=ttl + 2.0)  # any later step expires what is due
    assert objs.history(ObjectRef("pods", "default", "gone")) is None
    back = objs.history(ObjectRef("pods", "default", "back"))
    assert back is not None and back["steps"][-1]["verb"] == "create"
    assert objs.history(ObjectRef("replicasets", "default", "web-6dc5")) is not None
    assert objs.bytes < before + 2 * object_steps.STEP_BASE and objs.bytes == sum(
        h.bytes for h in objs.table.values()
    )


def test_objects_span_index_bounded_in_age() -> None:
    f = Feed()
    ttl = object_histories.DELETED_TTL_NS / 1e9
    old, recent, now = f.span(), f.span(), f.span()
    f(k.ReconcileStarted(controller="c", key="n/a", resource="pods"), at=0.0, span_id=old)
    f(k.ReconcileStarted(controller="c", key="n/b", resource="pods"), at=ttl / 2, span_id=recent)
    f(k.ReconcileStarted(controller="c", key="n/c", resource="pods"), at=ttl + 1, span_id=now)
    assert list(f.state.objects.spans) == [recent, now]
    assert f.state.objects.span(old) is None


def _merged_pod_deleted(f: Feed, pod: str, at: float) -> None:
    """A pod's DELETED event merged in the queue with the ReplicaSet's update that followed: the
    reconcile's newest trigger is the update, the deletion its first."""
    f(
        k.ReconcileStarted(
            controller="replicaset",
            key="default/web-6dc5",
            resource="replicasets",
            queue_wait_ms=5.0,
            trigger_kind="ReplicaSet",
            trigger_object="default/web-6dc5",
            trigger_event="update",
            trigger_rv="41",
            trigger_merged=2,
            first_trigger_event="delete",
            first_trigger_kind="Pod",
            first_trigger_object=f"default/{pod}",
            first_trigger_rv="40",
        ),
        at=at,
        span_id=f.span(),
    )


def _own_delete(code: int) -> Any:
    """The manager's own delete of the pod, answered ``code``."""
    return lambda f, pod, at: f(
        k.ApiRequestCompleted(
            verb="delete", resource="pods", namespace="default", name=pod, code=code
        ),
        at=at,
    )


@pytest.mark.parametrize(
    ("deleted", "leaves"),
    [
        pytest.param(lambda f, pod, at: _merged_pod_deleted(f, pod, at), True, id="first-trigger"),
        pytest.param(_own_delete(200), True, id="own-delete"),
        pytest.param(_own_delete(404), True, id="own-delete-not-found"),
        pytest.param(_own_delete(500), False, id="own-delete-failed"),
    ],
)
def test_objects_deletion_seen_other_than_as_the_newest_trigger_expires_the_history(
    deleted: Any, leaves: bool
) -> None:
    """Under issue 40's churn 42% of the pods' deletions reached the histories only as the first
    of merged triggers or as the manager's own delete: their histories never left (the growth
    bench soak measured). A failed delete leaves the object, and its history, in place."""
    f = Feed()
    ttl = object_histories.DELETED_TTL_NS / 1e9
    f(
        k.ApiRequestCompleted(verb="create", resource="pods", namespace="default", name="p"),
        at=0.5,
    )
    deleted(f, "p", 1.0)
    objs = f.state.objects
    assert objs.history(ObjectRef("pods", "default", "p")) is not None
    _pod_deleted(f, "other", at=ttl + 2.0)  # any later step expires what is due
    assert (objs.history(ObjectRef("pods", "default", "p")) is None) is leaves
    assert objs.bytes == sum(h.bytes for h in objs.table.values())
