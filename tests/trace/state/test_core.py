"""State as a whole: counters, the error ring, several instances, random interleavings,
snapshot/restore round trips, bounds, malformed input."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace import kinds as k
from pycm.trace.codec import UnknownEvent, decode, encode
from pycm.trace.events import Event, Outcome
from pycm.trace.state import FAILING_KEYS, MAX_ERRORS, MAX_IN_FLIGHT, SLOWEST_KEYS, State
from tests.trace.state.script import (
    LEASE,
    T0,
    Feed,
    S,
    expected_in_flight,
    garbage_events,
    streams,
    walk,
)


def test_errors_ring_bounded_keeps_newest() -> None:
    f = Feed()
    for i in range(MAX_ERRORS + 25):
        f(k.ItemDropped(queue="q", key=f"k{i}", retries=15, reason="max_retries"), at=i)
    errs = f.state.snapshot()["errors"]
    assert len(errs) == MAX_ERRORS
    assert errs[0]["text"] == "q dropped k25 after 15 retries: max_retries"
    assert errs[-1]["ts"] == T0 + (MAX_ERRORS + 24) * S


def test_unknown_kinds_and_lag_events_counted() -> None:
    state = State()
    unknown = decode(b'{"kind":"future.thing","seq":1,"ts":5,"instance":"a","x":1}')
    assert isinstance(unknown, UnknownEvent)
    state.apply(unknown)
    state.apply(decode(encode(unknown)))
    state.apply(decode(b'{"kind":"other.thing","seq":3,"ts":6,"instance":"a"}'))
    state.apply(k.SubscriberLagged(subscriber="tui", lost=120, ts=7))
    state.apply(k.SubscriberLagged(subscriber="tui", lost=5, ts=8))
    counters = state.snapshot()["counters"]
    assert counters["unknown"] == {"future.thing": 2, "other.thing": 1}
    assert (counters["lost"], counters["lag_events"], counters["applied"]) == (125, 2, 5)
    assert counters["out_of_order"] == 1  # the re-decoded copy repeats seq 1


def test_several_instances_separate_records_and_last_seq() -> None:
    f = Feed()
    for inst in ("a", "b", "c"):
        for i in range(3):
            f(k.ItemAdded(queue="q", key="x", depth=i), at=i, instance=inst)
    snap = f.state.snapshot()
    assert sorted(snap["queues"]) == ["a", "b", "c"]
    assert {n: i["last_seq"] for n, i in snap["instances"].items()} == {"a": 3, "b": 3, "c": 3}
    assert all(snap["queues"][n]["q"]["adds"] == 3 for n in "abc")


@settings(max_examples=200, deadline=None)
@given(streams())
def test_state_random_interleaving_snapshot_consistent(events: list[Event]) -> None:
    state = State()
    state.apply_all(events)
    snap = state.snapshot()
    assert snap["in_flight"]["total"] == expected_in_flight(events)
    flights = [c["in_flight"] for t in snap["controllers"].values() for c in t.values()]
    assert sum(flights) == expected_in_flight(events)
    for table in snap["controllers"].values():
        for c in table.values():
            assert c["reconciles"] == sum(c["results"].values())
            assert c["reconciles"] == c["latency"]["count"]
    ends = sum(isinstance(e, k.ReconcileFinished) for e in events)
    assert sum(c["reconciles"] for t in snap["controllers"].values() for c in t.values()) == ends
    assert snap["counters"]["applied"] == len(events)
    numbers = [v for v in walk(snap) if isinstance(v, int | float) and not isinstance(v, bool)]
    assert all(v >= 0 for v in numbers)
    assert orjson.loads(orjson.dumps(snap)) == snap


@settings(max_examples=150, deadline=None)
@given(streams(), st.data())
def test_state_restore_round_trip_continues_identically(
    events: list[Event], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(events)))
    whole = State()
    whole.apply_all(events)
    first = State()
    first.apply_all(events[:cut])
    wire = orjson.loads(orjson.dumps(first.snapshot()))
    resumed = State.restore(wire)
    resumed.apply_all(events[cut:])
    assert resumed.snapshot() == whole.snapshot()


def test_state_100k_events_10k_keys_tables_bounded() -> None:
    state = State()
    apply = state.apply
    for i in range(100_000):
        key = f"ns/k{i % 10_000}"
        span = f"{i + 1:016x}"
        ts = T0 + i * 1000
        n = i % 10
        if n == 0:
            apply(k.ReconcileStarted(controller="c", key=key, span_id=span, ts=ts, seq=i + 1))
        elif n == 1:
            apply(
                k.ReconcileFinished(
                    controller="c",
                    key=key,
                    span_id=f"{i + 7:016x}",
                    ts=ts,
                    dur_ns=i,
                    outcome=Outcome.ERROR,
                    seq=i + 1,
                )
            )
        elif n == 2:
            apply(k.ItemAdded(queue=f"q{i % 3000}", key=key, ts=ts, seq=i + 1))
        elif n == 3:
            apply(k.InformerSynced(resource=f"r{i % 3000}", ts=ts, seq=i + 1))
        elif n == 4:
            apply(k.LeaseRenewed(lease=f"ns/l{i % 3000}", identity=key, ts=ts, seq=i + 1))
        elif n == 5:
            apply(UnknownEvent(kind=f"x.{i}", ts=ts, seq=i + 1))
        elif n == 6:
            apply(k.HealthCheckChanged(check=key, ts=ts, seq=i + 1, instance=f"i{i % 300}"))
        elif n == 7:
            apply(k.ApiRequestCompleted(verb=key, code=500, ts=ts, seq=i + 1))
        else:
            apply(k.ControllerStarted(controller=f"c{i % 3000}", ts=ts, seq=i + 1))
    snap = state.snapshot()
    c = snap["controllers"][""]["c"]
    assert len(c["slowest"]) == SLOWEST_KEYS
    assert len(c["failing"]) == FAILING_KEYS
    assert snap["in_flight"]["total"] <= MAX_IN_FLIGHT
    assert len(state.ended_early) <= 1024
    assert len(state.queues) <= 1024
    assert len(state.informers) <= 1024
    assert len(state.controllers) <= 1024
    assert len(state.leases) <= 256
    assert len(state.instances) <= 64
    assert len(snap["counters"]["unknown"]) <= 65
    assert len(snap["api"][""]["verbs"]) <= 33
    assert len(snap["errors"]) == MAX_ERRORS
    assert all(len(i["health"]) <= 64 for i in snap["instances"].values())
    assert all(len(lease["holders"]) <= 16 for lease in snap["leases"].values())


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b'{"kind":"queue.add","ts":"soon","queue":"q"}', id="ts-not-int"),
        pytest.param(b'{"kind":"queue.add","instance":["a"],"queue":"q"}', id="instance-list"),
        pytest.param(b'{"kind":"queue.add","queue":"q","depth":"deep"}', id="depth-str"),
        pytest.param(b'{"kind":"api.request","code":"500"}', id="code-str"),
        pytest.param(b'{"kind":"reconcile.end","dur_ns":"slow","controller":"c"}', id="dur-str"),
    ],
)
def test_state_malformed_decoded_event_counted_not_raised(line: bytes) -> None:
    state = State()
    state.apply(decode(line))
    state.apply(k.ItemAdded(queue="ok", key="x", depth=1, ts=T0, seq=9, instance="a"))
    snap = state.snapshot()
    assert snap["counters"]["malformed"] == 1
    assert snap["counters"]["applied"] == 2
    assert snap["queues"]["a"]["ok"]["depth"] == 1
    orjson.dumps(snap)


@settings(max_examples=300, deadline=None)
@given(st.lists(garbage_events(), max_size=30))
def test_state_arbitrary_attribute_values_never_raise_snapshot_jsonable(
    events: list[Event],
) -> None:
    state = State()
    state.apply_all(events)
    snap = state.snapshot()
    assert snap["counters"]["applied"] == len(events)
    wire = orjson.loads(orjson.dumps(snap))
    State.restore(wire).snapshot()


def test_state_restore_empty_snapshot_equals_new_state() -> None:
    assert State.restore({}).snapshot() == State().snapshot()


def test_state_every_registered_kind_applies_cleanly_and_round_trips() -> None:
    from tests.trace.kind_samples import all_samples

    samples = all_samples()
    state = State()
    state.apply_all(samples)
    snap = state.snapshot()
    assert snap["counters"]["applied"] == len(samples)
    assert snap["counters"]["malformed"] == 0
    assert snap["counters"]["unknown"] == {}
    wire = orjson.loads(orjson.dumps(snap))
    resumed = State.restore(wire)
    assert resumed.snapshot() == snap
    # the samples share one span id and each end precedes its begin: nothing stays in flight
    assert snap["in_flight"]["total"] == 0


def test_state_huge_millisecond_durations_keep_the_snapshot_encodable() -> None:
    """A corrupt duration_ms/waited_ms (9e12 ms = 2**63 ns) must not break orjson's int range."""
    from pycm.trace.kinds import InformerSynced, LeaseAcquired

    state = State()
    state.apply(InformerSynced(resource="pods", duration_ms=9.3e12, ts=T0, seq=1))
    state.apply(LeaseAcquired(lease=LEASE, waited_ms=-5.0e15, ts=T0, seq=2))
    wire = orjson.loads(orjson.dumps(state.snapshot()))
    assert State.restore(wire).snapshot()["counters"]["applied"] == 2
