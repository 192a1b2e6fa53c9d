"""Controller handlers: lifecycle, results, slowest and failing keys."""

from __future__ import annotations

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.state import FAILING_KEYS, SLOWEST_KEYS
from tests.trace.state.script import (
    T0,
    Feed,
    reconcile,
)


def test_controller_slow_reconciles_in_slowest_keys_with_trace_ids() -> None:
    f = Feed()
    traces = {}
    for i in range(SLOWEST_KEYS + 20):
        traces[f"ns/k{i}"] = reconcile(f, f"ns/k{i}", 0.001 * (i + 1), at=i)
    c = f.state.snapshot()["controllers"]["a"]["deployment"]
    slowest = {r["key"]: r for r in c["slowest"]}
    assert len(slowest) == SLOWEST_KEYS
    assert set(slowest) == {f"ns/k{i}" for i in range(20, SLOWEST_KEYS + 20)}
    assert slowest["ns/k69"]["trace_id"] == traces["ns/k69"]
    assert slowest["ns/k69"]["dur_ns"] == 70_000_000
    assert c["slow_floor"] == 21_000_000
    assert c["reconciles"] == SLOWEST_KEYS + 20
    assert c["latency"]["count"] == SLOWEST_KEYS + 20
    assert c["in_flight"] == 0


def test_controller_results_and_failing_keys() -> None:
    f = Feed()
    reconcile(f, "ns/a", 0.01, at=0)
    reconcile(f, "ns/b", 0.01, at=1, outcome=Outcome.ERROR, error="boom")
    reconcile(f, "ns/c", 0.01, at=2, result=k.ReconcileResult.CONFLICT)
    reconcile(f, "ns/b", 0.02, at=3, result=k.ReconcileResult.ERROR, error="again")
    reconcile(f, "ns/d", 0.01, at=4, outcome=Outcome.CANCELLED)
    c = f.state.snapshot()["controllers"]["a"]["deployment"]
    assert c["results"] == {
        "success": 1,
        "requeue": 0,
        "requeue_after": 0,
        "error": 2,
        "conflict": 1,
        "cancelled": 1,
    }
    assert c["reconciles"] == sum(c["results"].values()) == 5
    assert c["errors"] == 3
    assert [(r["key"], r["count"], r["error"]) for r in c["failing"]] == [
        ("ns/b", 2, "again"),
        ("ns/d", 1, ""),
    ]


def test_controller_failing_keys_bounded_least_recent_evicted() -> None:
    f = Feed()
    for i in range(FAILING_KEYS + 5):
        reconcile(f, f"ns/k{i}", 0.01, at=i, outcome=Outcome.ERROR, error="x")
    failing = f.state.snapshot()["controllers"]["a"]["deployment"]["failing"]
    assert [r["key"] for r in failing] == [f"ns/k{i}" for i in range(5, FAILING_KEYS + 5)]


def test_controller_lifecycle_init_started_disabled() -> None:
    f = Feed()
    span = f.span()
    f(k.ControllerInitBegan(controller="deployment"), at=0, span_id=span)
    f(
        k.ControllerInitFinished(controller="deployment", started=True),
        at=0.01,
        span_id=span,
        dur_ns=10_000_000,
    )
    f(k.ControllerStarted(controller="deployment", workers=5), at=1)
    f(k.ControllerDisabled(controller="bootstrapsigner", reason="disabled by default"), at=0)
    cs = f.state.snapshot()["controllers"]["a"]
    assert (cs["deployment"]["init"], cs["deployment"]["init_ms"]) == ("started", 10.0)
    assert (cs["deployment"]["started"], cs["deployment"]["workers"]) == (True, 5)
    assert cs["bootstrapsigner"]["disabled"] is True
    bar = f.state.snapshot()["instances"]["a"]["steps"]["controller.init/deployment"]
    assert bar == {"start_ts": T0, "dur_ns": 10_000_000, "outcome": "ok", "error": ""}
