"""What each queue holds, folded from its events: waiting, backing off, processing, stuck."""

from __future__ import annotations

from typing import Any

from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from pycm.trace.state import State
from pycm.trace.state.queue_contents import MAX_KEYS, last_error
from tests.trace.state.script import T0, Feed, errors_of, reconcile

S = 1_000_000_000


def _contents(f: Feed, queue: str = "deployment") -> Any:
    return f.state.snapshot()["queues"]["a"][queue]["contents"]


def test_queue_contents_waiting_then_processing_then_gone() -> None:
    f = Feed()
    f(k.ItemAdded(queue="deployment", key="ns/a"), at=0)
    f(k.ItemAdded(queue="deployment", key="ns/b"), at=1)
    f(k.ItemAdded(queue="deployment", key="ns/a", queued=False), at=1.5)  # already waiting
    f(k.ItemTaken(queue="deployment", key="ns/a"), at=2)
    c = _contents(f)
    assert (c["waiting_count"], c["processing_count"], c["backing_off_count"]) == (1, 1, 0)
    assert c["waiting"] == [{"key": "ns/b", "since_ts": T0 + S, "age_ms": 1000.0}]
    assert c["processing"] == [
        {"key": "ns/a", "since_ts": T0 + 2 * S, "for_ms": 0.0, "stuck": False}
    ]
    f(k.ItemDone(queue="deployment", key="ns/a"), at=3)
    c = _contents(f)
    assert (c["waiting_count"], c["processing_count"]) == (1, 0)
    assert c["processing"] == []


def test_queue_contents_failing_key_backs_off_with_retries_error_and_due() -> None:
    f = Feed()
    f(k.ItemAdded(queue="deployment", key="ns/web"), at=0)
    f(k.ItemTaken(queue="deployment", key="ns/web"), at=1)
    # The worker requeues the key, then the failed reconcile ends (pycm.controller.worker).
    f(k.ItemRequeued(queue="deployment", key="ns/web", delay_ms=2000.0, retries=3), at=1.25)
    reconcile(f, "ns/web", 0.5, at=0.75, outcome=Outcome.ERROR, error="boom: 500")
    f(k.ItemDone(queue="deployment", key="ns/web"), at=1.3)
    c = _contents(f)
    assert c["backing_off_count"] == 1
    assert c["backing_off"] == [
        {
            "key": "ns/web",
            "since_ts": T0 + int(1.25 * S),
            "retries": 3,
            "due_ts": T0 + int(3.25 * S),
            "due_in_ms": 1950.0,
            "last_error": "boom: 500",
        }
    ]
    assert last_error(f.state, "a", "deployment", "ns/web") == "boom: 500"
    # A watch event meanwhile queues it without ending the backoff; the delayed add ends it.
    f(k.ItemAdded(queue="deployment", key="ns/web", reason="update"), at=2)
    assert _contents(f)["backing_off_count"] == 1
    f(k.ItemAdded(queue="deployment", key="ns/web", reason="rate_limited", queued=False), at=3.25)
    c = _contents(f)
    assert (c["backing_off_count"], c["backing_off"], c["waiting_count"]) == (0, [], 1)
    assert last_error(f.state, "a", "deployment", "ns/web") == ""


def test_queue_contents_requeue_after_has_no_error_and_keeps_earlier_due() -> None:
    f = Feed()
    reconcile(f, "ns/x", 0.1, at=-2, outcome=Outcome.ERROR, error="old failure")
    f(k.ItemRequeued(queue="deployment", key="ns/x", delay_ms=10_000.0), at=1)
    f(k.ItemRequeued(queue="deployment", key="ns/x", delay_ms=60_000.0), at=2)  # later: ignored
    (entry,) = _contents(f)["backing_off"]
    assert (entry["retries"], entry["due_ts"], entry["last_error"]) == (0, T0 + 11 * S, "")
    f(k.ItemRequeued(queue="deployment", key="ns/x", delay_ms=1000.0), at=3)  # earlier: kept
    (entry,) = _contents(f)["backing_off"]
    assert (entry["since_ts"], entry["due_ts"]) == (T0 + 3 * S, T0 + 4 * S)


def test_queue_contents_drop_and_shutdown_end_backoff() -> None:
    f = Feed()
    f(k.ItemRequeued(queue="q", key="a", delay_ms=100.0, retries=1), at=0)
    f(k.ItemRequeued(queue="q", key="b", delay_ms=100.0, retries=1), at=0)
    f(k.ItemDropped(queue="q", key="a", retries=15, reason="max retries"), at=0.05)
    assert [b["key"] for b in _contents(f, "q")["backing_off"]] == ["b"]
    f(k.QueueShutDown(queue="q"), at=0.06)
    c = _contents(f, "q")
    assert (c["backing_off_count"], c["backing_off"]) == (0, [])


def test_queue_contents_lists_are_bounded_and_counts_exact() -> None:
    f = Feed()
    n = MAX_KEYS + 25
    for i in range(n):
        f(k.ItemAdded(queue="q", key=f"k{i:03}"), at=i * 0.01)
    c = _contents(f, "q")
    assert c["waiting_count"] == n
    assert [w["key"] for w in c["waiting"]] == [f"k{i:03}" for i in range(MAX_KEYS)]
    for i in range(n):
        f(k.ItemTaken(queue="q", key=f"k{i:03}"), at=1 + i * 0.01)
    c = _contents(f, "q")
    assert (c["waiting_count"], c["waiting"], c["processing_count"]) == (0, [], n)
    assert len(c["processing"]) == MAX_KEYS
    f(k.ItemAdded(queue="q", key="x" * 1000), at=2)
    assert len(_contents(f, "q")["waiting"][0]["key"]) == 320


def test_queue_contents_stuck_mark_flags_the_key_until_done_and_is_an_error() -> None:
    f = Feed()
    f(k.ItemAdded(queue="deployment", key="ns/hung"), at=0)
    f(k.ItemTaken(queue="deployment", key="ns/hung"), at=0)
    f(
        k.WorkerStuck(
            controller="deployment", key="ns/hung", worker=2, processing_s=61.0, threshold_s=60.0
        ),
        at=61,
    )
    snap = f.state.snapshot()
    (held,) = snap["queues"]["a"]["deployment"]["contents"]["processing"]
    assert (held["key"], held["stuck"], held["for_ms"]) == ("ns/hung", True, 61_000.0)
    assert errors_of(dict(snap))[-1] == (
        "a",
        "queue.stuck",
        "deployment: worker 2 stuck on ns/hung for 61s (threshold 60s)",
    )
    f(k.ItemDone(queue="deployment", key="ns/hung"), at=70)
    f(k.ItemAdded(queue="deployment", key="ns/hung"), at=71)
    f(k.ItemTaken(queue="deployment", key="ns/hung"), at=71)
    (held,) = _contents(f)["processing"]
    assert held["stuck"] is False


def test_queue_contents_snapshot_restores_exactly() -> None:
    f = Feed()
    f(k.ItemAdded(queue="q", key="w"), at=0)
    f(k.ItemAdded(queue="q", key="p"), at=0)
    f(k.ItemTaken(queue="q", key="p"), at=1)
    f(k.ItemRequeued(queue="q", key="b", delay_ms=500.0, retries=2), at=1)
    f(k.WorkerStuck(controller="q", key="p", worker=0), at=2)
    snap = f.state.snapshot()
    restored = State.restore(snap)
    assert restored.snapshot()["queues"] == snap["queues"]
    f2 = Feed(restored)
    f2.seq = dict(f.seq)
    f(k.ItemDone(queue="q", key="p"), at=3)
    f2(k.ItemDone(queue="q", key="p"), at=3)
    assert f2.state.snapshot()["queues"] == f.state.snapshot()["queues"]
