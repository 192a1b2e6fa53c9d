"""Steps in flight: ends without begins, out-of-order merges, bounds, generic step kinds."""

from __future__ import annotations

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.state import MAX_IN_FLIGHT, State
from tests.trace.state.script import (
    T0,
    Feed,
    S,
    errors_of,
)


def test_in_flight_begin_without_end_longest_running() -> None:
    f = Feed()
    f(k.ReconcileStarted(controller="deployment", key="ns/x"), at=0, span_id="1" * 16)
    f(k.ReconcileStarted(controller="deployment", key="ns/y"), at=3, span_id="2" * 16)
    f(k.ItemAdded(queue="q", key="z"), at=5)
    snap = f.state.snapshot()
    c = snap["controllers"]["a"]["deployment"]
    assert (c["in_flight"], c["longest_running_ns"]) == (2, 5 * S)
    assert snap["in_flight"]["total"] == 2
    assert snap["in_flight"]["by_step"] == {"reconcile": 2}


def test_in_flight_end_without_begin_applied_not_in_flight() -> None:
    f = Feed()
    f(k.ReconcileFinished(controller="deployment", key="ns/x"), at=1, span_id="9" * 16, dur_ns=S)
    snap = f.state.snapshot()
    c = snap["controllers"]["a"]["deployment"]
    assert (c["reconciles"], c["in_flight"], snap["in_flight"]["total"]) == (1, 0, 0)
    # the begin arriving late (an out-of-order merge) does not count as in flight
    f(k.ReconcileStarted(controller="deployment", key="ns/x"), at=0, span_id="9" * 16, seq=1)
    snap = f.state.snapshot()
    assert snap["in_flight"]["total"] == 0
    assert snap["counters"]["out_of_order"] == 1


def test_in_flight_bounded_oldest_evicted_and_counted() -> None:
    f = Feed()
    for i in range(MAX_IN_FLIGHT + 10):
        f(k.ReconcileStarted(controller="c", key=f"k{i}"), at=0, span_id=f"{i + 1:016x}")
    snap = f.state.snapshot()
    assert snap["in_flight"]["total"] == MAX_IN_FLIGHT
    assert snap["counters"]["in_flight_evicted"] == 10
    assert snap["in_flight"]["open"][0]["key"] == "k10"


def test_step_end_error_outcome_goes_to_errors_ring() -> None:
    f = Feed()
    span = f.span()
    f(k.InformerListBegan(resource="pods"), at=0, span_id=span)
    f(
        k.InformerListFinished(resource="pods"),
        at=1,
        span_id=span,
        outcome=Outcome.ERROR,
        error="HTTPError: 500",
        trace_id="f" * 32,
    )
    snap = f.state.snapshot()
    assert errors_of(snap) == [("a", "informer.list.end", "HTTPError: 500")]
    assert snap["errors"][0]["trace_id"] == "f" * 32
    assert snap["informers"]["a"]["pods"]["list_errors"] == 1


def test_state_kind_without_handler_steps_still_tracked_in_flight() -> None:
    from pycm.trace.events import StepBegin, StepEnd, event_base

    @event_base
    class LaterFinished(StepEnd):
        """Stands for a step kind added to kinds.py after the reducer was written."""

    @event_base
    class LaterBegan(StepBegin):
        STEP = "later"
        END = LaterFinished

    state = State()
    state.apply(LaterBegan(span_id="a" * 16, ts=T0, seq=1))
    state.apply(LaterBegan(span_id="b" * 16, ts=T0, seq=2))
    state.apply(LaterFinished(span_id="a" * 16, ts=T0 + S, seq=3, outcome=Outcome.ERROR, error="x"))
    snap = state.snapshot()
    assert (snap["in_flight"]["total"], snap["in_flight"]["by_step"]) == (1, {"later": 1})
    assert [e["text"] for e in snap["errors"]] == ["x"]
