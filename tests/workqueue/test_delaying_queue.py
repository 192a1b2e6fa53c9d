"""Delaying queue: ready-time ordering, earliest wins, no delay adds now, clean start/stop."""

from __future__ import annotations

import asyncio

import pytest

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.delaying_queue import DelayingQueue
from tests.workqueue.conftest import settle


async def _drain(queue: DelayingQueue[str]) -> list[str]:
    out = []
    while queue.len():
        item = await queue.get()
        queue.done(item)
        out.append(item)
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("adds", "steps", "expected"),
    [
        pytest.param(
            [("a", 0.03), ("b", 0.01), ("c", 0.02)],
            [0.01, 0.01, 0.01],
            [["b"], ["c"], ["a"]],
            id="ready-time-order",
        ),
        pytest.param(
            [("a", 0.05), ("a", 0.01)], [0.01, 0.04], [["a"], []], id="earlier-replaces-later"
        ),
        pytest.param(
            [("a", 0.01), ("a", 0.05)], [0.01, 0.04], [["a"], []], id="later-keeps-earlier"
        ),
        pytest.param([("a", 0.0), ("b", -1.0)], [0.0], [["a", "b"]], id="no-delay-adds-now"),
        pytest.param(
            [("a", 0.02), ("b", 0.02)], [0.019, 0.001], [[], ["a", "b"]], id="ties-keep-order"
        ),
    ],
)
async def test_delaying_queue_add_after_delivers_by_ready_time(
    clock: FakeClock,
    bus: Bus,
    adds: list[tuple[str, float]],
    steps: list[float],
    expected: list[list[str]],
) -> None:
    async with DelayingQueue[str]("d", clock=clock, bus=bus) as queue:
        for item, delay in adds:
            queue.add_after(item, delay)
        await settle()
        got = []
        for step in steps:
            clock.advance(step)
            await settle()
            got.append(await _drain(queue))
        assert got == expected
        assert queue.waiting() == 0


@pytest.mark.asyncio
async def test_delaying_queue_earlier_item_wakes_sleeping_loop(clock: FakeClock, bus: Bus) -> None:
    async with DelayingQueue[str]("d", clock=clock, bus=bus) as queue:
        queue.add_after("late", 10.0)
        await settle()
        assert clock.next_deadline() == pytest.approx(1010.0)
        queue.add_after("soon", 1.0)
        await settle()
        assert clock.next_deadline() == pytest.approx(1001.0)
        clock.advance(1.0)
        await settle()
        assert await _drain(queue) == ["soon"]
        assert queue.waiting() == 1


@pytest.mark.asyncio
async def test_delaying_queue_items_added_before_start_wait_for_loop(
    clock: FakeClock, bus: Bus
) -> None:
    queue = DelayingQueue[str]("d", clock=clock, bus=bus)
    queue.add_after("a", 1.0)
    clock.advance(2.0)
    await settle()
    assert queue.len() == 0
    async with queue:
        await settle()
        assert await _drain(queue) == ["a"]


@pytest.mark.asyncio
async def test_delaying_queue_aclose_stops_loop_and_drops_waiting(
    clock: FakeClock, bus: Bus
) -> None:
    queue = DelayingQueue[str]("d", clock=clock, bus=bus)
    queue.start()
    queue.add_after("a", 1.0)
    await settle()
    task = queue._loop_task
    assert task is not None and not task.done()
    await queue.aclose()
    assert task.done()
    assert queue.waiting() == 0
    assert clock.sleepers == 0
    queue.add_after("b", 0.0)
    assert queue.len() == 0


@pytest.mark.asyncio
async def test_delaying_queue_shut_down_with_drain_stops_loop(clock: FakeClock, bus: Bus) -> None:
    queue = DelayingQueue[str]("d", clock=clock, bus=bus)
    queue.start()
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    assert not drain.done()
    queue.done("a")
    await drain
    assert queue._loop_task is not None and queue._loop_task.done()


@pytest.mark.asyncio
async def test_delaying_queue_no_delay_add_of_waiting_item_adds_now_and_keeps_timer(
    clock: FakeClock, bus: Bus
) -> None:
    async with DelayingQueue[str]("d", clock=clock, bus=bus) as queue:
        queue.add_after("a", 1.0)
        queue.add_after("a", 0.0)
        assert await _drain(queue) == ["a"]
        assert queue.waiting() == 1  # as in client-go, the delayed copy still comes
        clock.advance(1.0)
        await settle()
        assert await _drain(queue) == ["a"]
