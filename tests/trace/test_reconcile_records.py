"""Reconciles are appended to the bus as compact records (pycm.trace.bus): every reader — a
subscription of every kind, a filtered one, ``recent()``, a backfilled subscriber — gets the same
frozen events, in seq order, with losses counted as for any event."""

from __future__ import annotations

import dataclasses
import gc

import pytest

from pycm.controller import Controller, Result, Trigger
from pycm.trace.bus import RECONCILE_BEGIN, RECONCILE_END, RECONCILE_FAILED, Bus, materialize
from pycm.trace.events import Event, Outcome
from pycm.trace.kinds import (
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    StartupBegan,
    SubscriberLagged,
)
from pycm.util.clock import FakeClock


async def _noop(key: str) -> Result:
    return Result(action="noop")


def _controller(bus: Bus, clock: FakeClock) -> Controller:
    return Controller("deployment", _noop, resource="deployments", clock=clock, bus=bus)


def _clock() -> FakeClock:
    return FakeClock(wall_start_ns=1_700_000_000_000_000_000)


@pytest.mark.asyncio
async def test_every_reader_gets_the_same_events_in_seq_order() -> None:
    clock = _clock()
    bus = Bus(instance="pycm-0", clock=clock)
    ctrl = _controller(bus, clock)
    every = bus.subscribe(name="every")
    filtered = bus.subscribe(name="filtered", kinds=(ReconcileFinished.KIND,))
    with bus.step(StartupBegan()):
        pass
    ctrl.enqueue("ns/a", Trigger("Deployment", "7", "update", "ab" * 16, "cd" * 8))  # queue.add
    await ctrl.process("ns/a")
    await ctrl.process("ns/b")
    late = bus.subscribe(name="late", since=0)

    events = every.drain()
    assert [type(e) for e in events[3:]] == [ReconcileStarted, ReconcileFinished] * 2
    assert [e.seq for e in events] == list(range(1, 8))
    assert bus.recent() == events
    assert late.drain() == events
    assert filtered.drain() == [events[4], events[6]]
    begin = events[3]
    assert isinstance(begin, ReconcileStarted)
    assert (begin.namespace, begin.name, begin.trigger_rv, begin.trigger_span_id) == (
        "ns",
        "a",
        "7",
        "cd" * 8,
    )
    assert events[4].action == "noop"  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        begin.key = "x"  # type: ignore[misc]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_losses_of_reconcile_events_are_counted_like_any_others() -> None:
    clock = _clock()
    bus = Bus(clock=clock)
    ctrl = _controller(bus, clock)
    every = bus.subscribe(name="every", maxsize=3)
    ends = bus.subscribe(name="ends", maxsize=1, kinds=(ReconcileFinished.KIND,))
    for i in range(4):
        await ctrl.process(f"ns/d{i}")

    lag, *kept = every.drain()
    assert isinstance(lag, SubscriberLagged) and lag.lost == 5
    assert [e.seq for e in kept] == [6, 7, 8]
    assert [type(e) for e in kept] == [ReconcileFinished, ReconcileStarted, ReconcileFinished]
    first = ends.get_nowait()
    assert isinstance(first, SubscriberLagged) and first.lost == 3
    last = ends.get_nowait()
    assert isinstance(last, ReconcileFinished) and last.key == "ns/d3" and last.seq == 8
    assert ends.get_nowait() is None
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_the_ring_keeps_reconciles_out_of_the_collectors_sight() -> None:
    # Why records at all: a ring full of event objects is traversed by every older-generation
    # collection; records of plain values are untracked by the first one.
    bus = Bus()
    ctrl = _controller(bus, _clock())
    for i in range(3):
        await ctrl.process(f"ns/d{i}")
    # A record seen before its own (namespace, name) pair was untracked is untracked next time.
    gc.collect()
    gc.collect()
    assert bus.last_seq == 6
    assert not any(gc.is_tracked(entry) for entry in bus._ring)
    events: list[Event] = bus.recent()
    assert all(isinstance(e, ReconcileStarted | ReconcileFinished) for e in events)
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_drain_entries_hands_out_records_that_materialize_to_what_drain_gives() -> None:
    clock = _clock()
    bus = Bus(instance="pycm-0", clock=clock)
    ctrl = _controller(bus, clock)
    raw = bus.subscribe(name="raw", maxsize=4)
    built = bus.subscribe(name="built", maxsize=4)
    with bus.step(StartupBegan()):
        await ctrl.process("ns/a")
    await ctrl.process("ns/b")  # 6 events: 2 lost to each subscription

    entries = raw.drain_entries()
    events = built.drain()
    assert isinstance(entries[0], SubscriberLagged) and entries[0].lost == 2
    assert [type(e) is tuple for e in entries[1:]] == [True, False, True, True]
    assert isinstance(events[0], SubscriberLagged) and events[0].lost == 2
    assert [materialize(e) for e in entries[1:]] == events[1:]
    end = events[1]
    assert isinstance(end, ReconcileFinished) and end.key == "ns/a" and end.parent_id != ""
    assert raw.drain_entries() == [] and raw.pending == 0
    await ctrl.process("ns/c")
    assert [materialize(e) for e in raw.drain_entries(limit=1)] == built.drain(limit=1)
    assert [materialize(e).seq for e in raw.drain_entries()] == [8]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_an_end_record_is_tagged_ok_only_when_the_reconcile_ended_ok() -> None:
    # The OTel sink takes an end tagged RECONCILE_END as one that ended ok with a result
    # other than error, without reading its outcome: every other end must carry its own.
    clock = _clock()
    bus = Bus(clock=clock)
    results = {
        "ns/done": Result(),
        "ns/again": Result(requeue=True),
        "ns/later": Result(requeue_after=2.0),
    }

    async def sync(key: str) -> Result:
        if key == "ns/fails":
            raise RuntimeError("boom")
        return results[key]

    ctrl = Controller("c", sync, clock=clock, bus=bus)
    with bus.subscribe(name="entries") as entries:
        for key in (*results, "ns/fails"):
            await ctrl.process(key)
        raw = [e for e in entries.drain_entries() if type(e) is tuple]
    ends = {r[2][5]: r for r in raw if r[0] != RECONCILE_BEGIN}
    assert {key: r[0] for key, r in ends.items()} == {
        "ns/done": RECONCILE_END,
        "ns/again": RECONCILE_END,
        "ns/later": RECONCILE_END,
        "ns/fails": RECONCILE_FAILED,
    }
    built = {key: materialize(r) for key, r in ends.items()}
    assert isinstance(built["ns/later"], ReconcileFinished)
    assert (built["ns/later"].result, built["ns/later"].requeue_after_ms) == (
        ReconcileResult.REQUEUE_AFTER,
        2000.0,
    )
    assert built["ns/again"].result is ReconcileResult.REQUEUE  # type: ignore[attr-defined]
    failed = built["ns/fails"]
    assert (failed.outcome, failed.error) == (Outcome.ERROR, "RuntimeError: boom")  # type: ignore[attr-defined]
    assert failed.result is ReconcileResult.ERROR  # type: ignore[attr-defined]
    await ctrl.queue.aclose()
