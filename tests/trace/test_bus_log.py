"""Subscriptions without a filter read the bus's one log (pycm.trace.bus): several of them, with
queues larger or smaller than the ring, opening and closing, each read what a drop-oldest queue
of their own would hold, while the log stays no longer than what they still need (or the ring)
and ``recent()`` stays the ring's last events."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.controller import Controller, Result
from pycm.trace.bus import Bus, Subscription
from pycm.trace.events import Event
from pycm.trace.kinds import (
    ItemAdded,
    ReconcileFinished,
    ReconcileStarted,
    StartupBegan,
    StartupFinished,
)
from tests.trace.test_bus_model import Model, Read, _reads

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("emit"), st.integers(1, 12), st.just(0)),
        st.tuples(st.just("drain"), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 5))),
        st.tuples(st.just("get"), st.integers(0, 3), st.just(0)),
        st.tuples(st.just("open"), st.integers(1, 10), st.just(0)),
        st.tuples(st.just("close"), st.integers(0, 3), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ring=st.integers(1, 6), sizes=st.lists(st.integers(1, 10), min_size=1, max_size=3), ops=_ops)
def test_log_readers_each_read_their_model_and_the_log_keeps_only_what_they_need(
    ring: int, sizes: list[int], ops: list[tuple[str, int, int | None]]
) -> None:
    bus = Bus(ring_size=ring)
    subs: list[Subscription] = [bus.subscribe(maxsize=m) for m in sizes]
    models = [Model(m) for m in sizes]
    emitted: list[Event] = []
    for op, a, b in ops:
        if op == "emit":
            for _ in range(a):
                event = ItemAdded(queue="q", key=str(len(emitted)))
                bus.emit(event)
                emitted.append(event)
                for sub, model in zip(subs, models, strict=True):
                    if not sub.closed:
                        model.put(event)
        elif op == "open":
            subs.append(bus.subscribe(maxsize=a))
            models.append(Model(a))
        else:
            i = a % len(subs)
            reading_the_log = not subs[i].closed
            if op == "drain":
                got: list[Read] = _reads(list(subs[i].drain(b)))
                assert got == models[i].drain(b)
            elif op == "get":
                assert _reads([subs[i].get_nowait()]) == models[i].get()
            else:
                subs[i].close()
        for sub, model in zip(subs, models, strict=True):
            assert sub.pending == len(model.items)
        assert bus.recent() == emitted[-ring:]
        readers = [s for s in subs if not s.closed]
        assert len(bus._ring) <= max([ring, *(s.maxsize for s in readers)])
        if op in ("drain", "get") and reading_the_log:
            # A read lets the log drop what every open reader has read (down to the ring).
            assert len(bus._ring) <= max([ring, *(s.pending for s in readers)])
    # A closed subscription still hands out what it had not read, then ends.
    for sub, model in zip(subs, models, strict=True):
        sub.close()
        assert _reads(list(sub.drain())) == model.drain(None)
    assert bus._ring.maxlen == ring


def test_a_slow_reader_with_a_large_queue_keeps_its_backlog_beyond_the_ring() -> None:
    bus = Bus(ring_size=4)
    slow = bus.subscribe(maxsize=100)
    fast = bus.subscribe(maxsize=2)
    events = [ItemAdded(queue="q", key=str(i)) for i in range(50)]
    for event in events:
        bus.emit(event)
    assert fast.drain()[1:] == events[-2:]  # a lag notice first: 48 lost
    assert len(bus._ring) == 50  # the slow reader still needs them all
    assert slow.drain() == events
    assert len(bus._ring) == 4  # read by all: back to the ring
    assert bus.recent() == events[-4:]


@pytest.mark.asyncio
async def test_a_subscription_opened_during_a_reconcile_gets_its_end() -> None:
    # Opening a subscription with a queue larger than the ring replaces the log; the reconcile
    # in flight must deliver its end to the new one, not to the log it started with.
    bus = Bus(ring_size=8)
    opened: list[Subscription] = []

    async def sync(key: str) -> Result:
        opened.append(bus.subscribe(name="late", maxsize=64, since=0))
        await asyncio.sleep(0)
        return Result(action="noop")

    controller = Controller("c", sync, bus=bus)
    await controller.process("ns/a")

    kinds = [type(e) for e in opened[0].drain()]
    assert kinds == [ReconcileStarted, ReconcileFinished]
    assert [type(e) for e in bus.recent()][-2:] == [ReconcileStarted, ReconcileFinished]


@pytest.mark.asyncio
async def test_a_parked_log_reader_wakes_for_the_next_event_and_the_bus_stops_calling() -> None:
    bus = Bus()
    sub = bus.subscribe()
    reader = asyncio.ensure_future(sub.__anext__())
    await asyncio.sleep(0)
    assert bus._sink is not None  # parked: the next delivery wakes it
    event = ItemAdded(queue="q", key="k")
    bus.emit(event)
    assert await asyncio.wait_for(reader, 1) == event
    assert bus._sink is None  # nothing to call per event while no reader waits


@pytest.mark.asyncio
async def test_delivery_is_the_logs_append_alone_while_nothing_waits_and_follows_each_change() -> (
    None
):
    # The one delivery (EventLog._put): while there is no sink it is the log's own append (a
    # reconcile's delivery is one C call); a filtered subscription, a parked reader, a new log
    # (a larger maxsize) each change it, and every emitter's entries reach every reader.
    bus = Bus(ring_size=4)
    assert bus._put == bus._ring.append
    wide = bus.subscribe(maxsize=16)  # a log reader with a larger queue: a new log
    assert bus._put == bus._ring.append and bus._ring.maxlen == 16
    filtered = bus.subscribe(kinds=(ItemAdded.KIND,))
    assert bus._put != bus._ring.append

    async def sync(key: str) -> Result:
        return Result(action="noop")

    controller = Controller("c", sync, bus=bus)
    await controller.process("ns/a")
    bus.emit(ItemAdded(queue="q", key="k"))
    assert [type(e) for e in filtered.drain()] == [ItemAdded]
    filtered.close()
    assert bus._put == bus._ring.append
    kinds = [type(e) for e in wide.drain()]
    reader = asyncio.ensure_future(wide.wait())
    await asyncio.sleep(0)
    assert bus._put != bus._ring.append  # parked: the delivery wakes it
    with bus.step(StartupBegan(command="t")):
        pass
    await asyncio.wait_for(reader, 1)
    assert bus._put == bus._ring.append
    kinds += [type(e) for e in wide.drain()]
    assert kinds == [ReconcileStarted, ReconcileFinished, ItemAdded, StartupBegan, StartupFinished]
