"""Trace events: every add, get, retry, done and shutdown, in order, with their attributes."""

from __future__ import annotations

import asyncio

import pytest

from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemAdded, ItemRequeued, QueueShutDown, ReconcileStarted
from pycm.util.clock import FakeClock
from pycm.workqueue.queue import Queue
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue
from tests.workqueue.conftest import settle


def _attrs(event: object) -> tuple[object, ...]:
    fields = ("queue", "key", "reason", "queued", "depth", "wait_ms", "work_ms", "delay_ms")
    fields += ("retries", "drained")
    return (type(event).__name__, *(getattr(event, f) for f in fields if hasattr(event, f)))


@pytest.mark.asyncio
async def test_queue_events_emitted_in_order_with_attributes(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe()
    queue = Queue[str]("q", clock=clock, bus=bus)
    queue.add("ns/a", "add")
    queue.add("ns/a", "update")
    queue.add("ns/b", "add")
    clock.advance(0.002)
    await queue.get()
    clock.advance(0.003)
    queue.add("ns/a", "update")
    queue.done("ns/a")
    await queue.shut_down_with_drain()
    assert [_attrs(e) for e in sub.drain()] == [
        ("ItemAdded", "q", "ns/a", "add", True, 1),
        ("ItemAdded", "q", "ns/a", "update", False, 1),
        ("ItemAdded", "q", "ns/b", "add", True, 2),
        ("ItemTaken", "q", "ns/a", 1, 2.0),
        ("ItemAdded", "q", "ns/a", "update", True, 1),
        ("ItemDone", "q", "ns/a", 2, 3.0),
        ("QueueShutDown", "q", True),
    ]
    sub.close()


@pytest.mark.asyncio
async def test_queue_events_nest_under_current_step(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe(kinds=["queue.add"])
    queue = Queue[str]("q", clock=clock, bus=bus)
    with bus.step(ReconcileStarted(controller="c", key="k")) as step:
        queue.add("k")
    [event] = sub.drain()
    assert isinstance(event, ItemAdded)
    assert event.parent_id == step.begin.span_id
    assert event.trace_id == step.begin.trace_id
    sub.close()


@pytest.mark.asyncio
async def test_rate_limited_events_carry_delay_and_retries(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe(kinds=["queue.retry", "queue.add", "queue.shutdown"])
    async with RateLimitingQueue[str]("rl", clock=clock, bus=bus) as queue:
        queue.add_rate_limited("k")
        queue.add_rate_limited("k")
        clock.advance(0.005)
        await settle()
    events = sub.drain()
    assert [type(e) for e in events] == [ItemRequeued, ItemRequeued, ItemAdded, QueueShutDown]
    first, second, added, shut = events
    assert isinstance(first, ItemRequeued) and isinstance(second, ItemRequeued)
    assert (first.delay_ms, first.retries) == (5.0, 1)
    assert (second.delay_ms, second.retries) == (10.0, 2)
    assert isinstance(added, ItemAdded) and added.reason == "rate_limited"
    assert isinstance(shut, QueueShutDown) and not shut.drained
    sub.close()


@pytest.mark.asyncio
async def test_queue_shut_down_emits_once(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe(kinds=["queue.shutdown"])
    queue = Queue[str]("q", clock=clock, bus=bus)
    queue.shut_down()
    queue.shut_down()
    await queue.shut_down_with_drain()
    assert len(sub.drain()) == 1
    sub.close()


@pytest.mark.asyncio
async def test_queue_drained_shutdown_event_carries_drain_time(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe(kinds=["queue.shutdown"])
    queue = Queue[tuple[str, str]]("q", clock=clock, bus=bus)
    queue.add(("ns", "a"))
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    clock.advance(0.25)
    queue.done(("ns", "a"))
    await drain
    [event] = sub.drain()
    assert isinstance(event, QueueShutDown)
    assert (event.drained, event.dur_ns) == (True, 250_000_000)
    sub.close()


@pytest.mark.asyncio
async def test_queue_non_str_items_are_keyed_by_str(clock: FakeClock, bus: Bus) -> None:
    sub = bus.subscribe(kinds=["queue.add"])
    queue = Queue[tuple[str, str]]("q", clock=clock, bus=bus)
    queue.add(("ns", "a"))
    [event] = sub.drain()
    assert isinstance(event, ItemAdded) and event.key == "('ns', 'a')"
    sub.close()
