"""The bus: ordering, ring backfill, bounded subscribers with lag notices, and a stalled
subscriber that never slows emit."""

from __future__ import annotations

import asyncio
import time

import pytest

from pycm.trace.bus import Bus
from pycm.trace.events import Event
from pycm.trace.kinds import ItemAdded, ItemDone, SubscriberLagged
from pycm.util.clock import FakeClock


def _added(n: int) -> list[Event]:
    return [ItemAdded(queue="q", key=f"k{i}") for i in range(n)]


def test_bus_emit_stamps_seq_ts_and_instance_in_order() -> None:
    clock = FakeClock(wall_start_ns=5_000)
    bus = Bus(instance="replica-a", clock=clock)
    events = _added(3)
    for e in events:
        bus.emit(e)
        clock.advance(0.000001)
    assert [e.seq for e in events] == [1, 2, 3]
    assert [e.ts for e in events] == [5_000, 6_000, 7_000]
    assert {e.instance for e in events} == {"replica-a"}
    assert bus.last_seq == 3


def test_bus_emit_keeps_an_instance_the_emitter_set() -> None:
    bus = Bus(instance="me")
    event = ItemAdded(queue="q", key="k", instance="relayed")
    bus.emit(event)
    assert event.instance == "relayed"


def test_subscription_receives_events_in_emit_order() -> None:
    bus = Bus()
    sub = bus.subscribe(name="s")
    events = _added(5)
    for e in events:
        bus.emit(e)
    assert sub.drain() == events


def test_every_open_subscription_receives_every_event_as_they_come_and_go() -> None:
    bus = Bus()
    a = bus.subscribe(name="a")
    first = _added(2)
    for e in first:  # one subscriber
        bus.emit(e)
    b = bus.subscribe(name="b")
    c = bus.subscribe(name="c", kinds=(ItemAdded.KIND,))
    second = _added(2)
    for e in second:  # three
        bus.emit(e)
    a.close()
    c.close()
    third = _added(2)
    for e in third:  # one again (b)
        bus.emit(e)
    b.close()
    for e in _added(1):  # none: only the ring
        bus.emit(e)
    assert a.drain() == first + second
    assert b.drain() == second + third
    assert c.drain() == second
    assert bus.last_seq == 7 and len(bus.recent()) == 7


def test_subscription_kinds_filter_delivers_only_those_kinds() -> None:
    bus = Bus()
    sub = bus.subscribe(kinds=["queue.done"])
    bus.emit(ItemAdded(queue="q", key="a"))
    done = ItemDone(queue="q", key="a")
    bus.emit(done)
    assert sub.drain() == [done]


@pytest.mark.parametrize(
    ("ring", "emitted", "since", "expected_seqs", "lost"),
    [
        pytest.param(10, 5, 0, [1, 2, 3, 4, 5], 0, id="whole-ring"),
        pytest.param(10, 5, 3, [4, 5], 0, id="resume-after-seq"),
        pytest.param(10, 5, 5, [], 0, id="up-to-date"),
        pytest.param(4, 10, 2, [7, 8, 9, 10], 4, id="ring-overwritten-reports-gap"),
        pytest.param(4, 10, 0, [7, 8, 9, 10], 6, id="from-start-after-overwrite"),
    ],
)
def test_subscribe_since_backfills_from_ring(
    ring: int, emitted: int, since: int, expected_seqs: list[int], lost: int
) -> None:
    bus = Bus(ring_size=ring)
    for e in _added(emitted):
        bus.emit(e)
    sub = bus.subscribe(since=since)
    got = sub.drain()
    if lost:
        lag = got.pop(0)
        assert isinstance(lag, SubscriberLagged)
        assert lag.lost == lost
    assert [e.seq for e in got] == expected_seqs


def test_subscribe_without_since_gets_only_new_events() -> None:
    bus = Bus()
    bus.emit(ItemAdded(queue="q", key="old"))
    sub = bus.subscribe()
    new = ItemAdded(queue="q", key="new")
    bus.emit(new)
    assert sub.drain() == [new]


def test_full_subscription_drops_oldest_and_announces_the_loss_first() -> None:
    bus = Bus(instance="me")
    sub = bus.subscribe(name="slow", maxsize=3)
    events = _added(7)
    for e in events:
        bus.emit(e)
    got = sub.drain()
    assert isinstance(got[0], SubscriberLagged)
    assert (got[0].lost, got[0].subscriber, got[0].instance) == (4, "slow", "me")
    assert got[1:] == events[-3:]
    # The loss is reported once; later reads are ordinary again.
    later = ItemAdded(queue="q", key="later")
    bus.emit(later)
    assert sub.drain() == [later]


def test_get_nowait_returns_lag_then_events_then_none() -> None:
    bus = Bus()
    sub = bus.subscribe(maxsize=1)
    first, second = _added(2)
    bus.emit(first)
    bus.emit(second)
    lag = sub.get_nowait()
    assert isinstance(lag, SubscriberLagged)
    assert lag.lost == 1
    assert sub.get_nowait() is second
    assert sub.get_nowait() is None


def test_ring_keeps_only_the_newest_events() -> None:
    bus = Bus(ring_size=3)
    for e in _added(5):
        bus.emit(e)
    assert [e.seq for e in bus.recent()] == [3, 4, 5]
    assert [e.seq for e in bus.recent(since=4)] == [5]


@pytest.mark.asyncio
async def test_async_iteration_wakes_on_emit_and_ends_on_close() -> None:
    bus = Bus()
    sub = bus.subscribe()
    received: list[Event] = []

    async def reader() -> None:
        async for event in sub:
            received.append(event)

    task = asyncio.create_task(reader(), name="reader")
    await asyncio.sleep(0)
    events = _added(3)
    for e in events:
        bus.emit(e)
    await asyncio.sleep(0)
    assert received == events
    sub.close()
    await asyncio.wait_for(task, 1)
    assert bus.subscribers == 0


@pytest.mark.asyncio
async def test_close_delivers_what_is_buffered_before_ending() -> None:
    bus = Bus()
    sub = bus.subscribe()
    events = _added(2)
    for e in events:
        bus.emit(e)
    sub.close()
    assert [e async for e in sub] == events


def test_closed_subscription_receives_nothing_more() -> None:
    bus = Bus()
    with bus.subscribe() as sub:
        pass
    bus.emit(ItemAdded(queue="q", key="k"))
    assert sub.drain() == []
    assert sub.closed


def test_stalled_subscriber_never_delays_emit() -> None:
    """A subscriber that never reads costs emit no more than a small constant per event."""
    n = 20_000

    def emit_seconds(bus: Bus) -> float:
        events = _added(n)
        start = time.perf_counter()
        for e in events:
            bus.emit(e)
        return time.perf_counter() - start

    # Median of several rounds on both sides damps the noise of a shared machine.
    alone, stalled = [], []
    for _ in range(5):
        alone.append(emit_seconds(Bus()))
        bus = Bus()
        sub = bus.subscribe(name="stalled", maxsize=64)
        stalled.append(emit_seconds(bus))
        assert sub.pending == 64  # it kept only the newest 64 and dropped the rest
    alone.sort()
    stalled.sort()
    # Each event costs one bounded-deque push more; never proportional to the backlog.
    assert stalled[2] < alone[2] * 3 + 0.05


def test_bus_rejects_empty_ring_and_queue() -> None:
    with pytest.raises(ValueError):
        Bus(ring_size=0)
    with pytest.raises(ValueError):
        Bus().subscribe(maxsize=0)
