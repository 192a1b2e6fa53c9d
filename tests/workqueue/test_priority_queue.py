"""Priority queue: highest priority first, promotion on a higher re-add (never demotion), the
priority kept across requeues and rate-limited adds, one worker per item, shutdown and drain."""

from __future__ import annotations

import asyncio
import random

import pytest

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.priority_queue import DEFAULT_PRIORITY, LOW_PRIORITY, PriorityQueue
from pycm.workqueue.queue import ShutDown
from pycm.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from tests.workqueue.conftest import settle

LOW = LOW_PRIORITY


def _queue(clock: FakeClock, bus: Bus) -> PriorityQueue[str]:
    return PriorityQueue(
        "pq", clock=clock, bus=bus, rate_limiter=ItemExponentialFailureRateLimiter()
    )


async def _take_all(queue: PriorityQueue[str]) -> list[str]:
    out = []
    while queue.len():
        item = await queue.get()
        queue.done(item)
        out.append(item)
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("adds", "expected"),
    [
        pytest.param([("a", 0), ("b", 0), ("c", 0)], ["a", "b", "c"], id="same-priority-fifo"),
        pytest.param([("a", LOW), ("b", LOW), ("c", 0)], ["c", "a", "b"], id="higher-first"),
        pytest.param([("a", 1), ("b", 5), ("c", -3), ("d", 5)], ["b", "d", "a", "c"], id="many"),
        pytest.param(
            [("a", LOW), ("b", LOW), ("c", LOW), ("b", 0)], ["b", "a", "c"], id="promoted-moves-up"
        ),
        pytest.param([("a", 0), ("b", 0), ("a", LOW)], ["a", "b"], id="never-demoted"),
        # a keeps its place in line (added before b) once it has b's priority.
        pytest.param([("a", LOW), ("b", 0), ("a", 0)], ["a", "b"], id="promoted-keeps-place"),
        pytest.param([("a", LOW), ("a", LOW), ("a", 0)], ["a"], id="dedup-across-priorities"),
    ],
)
async def test_priority_queue_adds_table_hands_out_in_priority_order(
    clock: FakeClock, bus: Bus, adds: list[tuple[str, int]], expected: list[str]
) -> None:
    queue = _queue(clock, bus)
    for item, priority in adds:
        queue.add(item, priority=priority)
    assert queue.ready_in_order() == expected
    assert await _take_all(queue) == expected


@pytest.mark.asyncio
async def test_priority_queue_get_with_priority_returns_waited_priority(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a", priority=LOW)
    queue.add("b")
    assert await queue.get_with_priority() == ("b", DEFAULT_PRIORITY)
    assert await queue.get_with_priority() == ("a", LOW)


@pytest.mark.asyncio
async def test_priority_queue_readd_while_processing_waits_then_comes_back_promoted(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a", priority=LOW)
    queue.add("b", priority=LOW)
    assert await queue.get() == "a"
    queue.add("a", priority=0)  # a fresh change while a worker holds it
    assert queue.len() == 1  # only b may be taken: a is held
    assert queue.priorities() == {"b": LOW, "a": 0}
    queue.done("a")
    assert queue.ready_in_order() == ["a", "b"]
    assert await _take_all(queue) == ["a", "b"]


@pytest.mark.asyncio
async def test_priority_queue_requeue_keeps_priority_it_was_taken_with(
    clock: FakeClock, bus: Bus
) -> None:
    async with _queue(clock, bus) as queue:
        queue.add("x", priority=LOW)
        queue.add("y", priority=LOW)
        assert await queue.get() == "x"
        queue.add_rate_limited("x")  # a failed reconcile: no priority given
        queue.done("x")
        assert queue.delayed_priorities() == {"x": LOW}
        queue.add("z")
        clock.advance(0.005)  # the limiter's first delay
        await settle()
        assert queue.priorities() == {"y": LOW, "z": 0, "x": LOW}
        assert await _take_all(queue) == ["z", "y", "x"]


@pytest.mark.asyncio
async def test_priority_queue_rate_limited_adds_keep_max_priority_and_min_delay(
    clock: FakeClock, bus: Bus
) -> None:
    async with _queue(clock, bus) as queue:
        queue.add("old", priority=LOW)
        queue.add_after("k", 2.0, priority=0)
        queue.add_after("k", 1.0, priority=LOW)  # earlier time wins; the higher priority stays
        queue.add_rate_limited("r", priority=LOW)
        queue.add_rate_limited("r", priority=5)  # 10 ms (the second failure), priority 5 wins
        assert queue.delayed_priorities() == {"k": 0, "r": 5}
        clock.advance(0.004)
        await settle()
        assert queue.priorities() == {"old": LOW}
        clock.advance(0.001)  # r is due at 5 ms (its earlier time), with priority 5
        await settle()
        assert queue.priorities() == {"old": LOW, "r": 5}
        clock.advance(1.0)
        await settle()
        assert queue.priorities() == {"old": LOW, "r": 5, "k": 0}
        assert queue.delayed_priorities() == {}
        assert await _take_all(queue) == ["r", "k", "old"]


@pytest.mark.asyncio
async def test_priority_queue_add_after_without_delay_adds_now_with_priority(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a", priority=LOW)
    queue.add_after("b", 0, priority=3)
    assert queue.ready_in_order() == ["b", "a"]


@pytest.mark.asyncio
async def test_priority_queue_concurrent_workers_never_hold_one_item_twice(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    rng = random.Random(7)
    held: set[str] = set()
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            assert item not in held, f"{item} handed to two workers"
            held.add(item)
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
                # Events keep coming for items being processed and for the others.
                queue.add(f"k{rng.randrange(8)}", priority=rng.choice((LOW, 0, 1)))
            held.discard(item)
            processed.append(item)
            queue.done(item)

    for i in range(8):
        queue.add(f"k{i}", priority=LOW)
    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for _ in range(200):
        await asyncio.sleep(0)
    queue.shut_down()
    await asyncio.gather(*workers)
    assert len(processed) > 8
    assert not held
    assert queue.processing() == 0


@pytest.mark.asyncio
async def test_priority_queue_shutdown_hands_out_queued_in_order_then_raises(
    clock: FakeClock, bus: Bus
) -> None:
    async with _queue(clock, bus) as queue:
        queue.add("a", priority=LOW)
        queue.add("b", priority=1)
        queue.add_after("later", 1.0, priority=9)
        queue.shut_down()
        queue.add("c", priority=100)  # refused once shutting down
        assert queue.delayed_priorities() == {}  # waiting items are dropped, as client-go does
        assert [await queue.get(), await queue.get()] == ["b", "a"]
        with pytest.raises(ShutDown):
            await queue.get()


@pytest.mark.asyncio
async def test_priority_queue_shut_down_with_drain_waits_for_processing(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a", priority=LOW)
    item = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    assert not drain.done()
    queue.done(item)
    await settle()
    assert drain.done()
    await drain
