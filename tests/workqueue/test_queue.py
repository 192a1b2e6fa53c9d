"""Queue invariants: de-duplication, one worker per item, re-add while processing, FIFO,
fair wake-ups, shutdown and drain."""

from __future__ import annotations

import asyncio
import random

import pytest

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.queue import Queue, ShutDown
from tests.workqueue.conftest import settle


def _queue(clock: FakeClock, bus: Bus) -> Queue[str]:
    return Queue("test", clock=clock, bus=bus)


async def _take_all(queue: Queue[str]) -> list[str]:
    out = []
    while queue.len():
        out.append(await queue.get())
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("ops", "expected_taken", "expected_len"),
    [
        pytest.param(["+a", "+b", "+c"], ["a", "b", "c"], 0, id="fifo"),
        pytest.param(["+a", "+a", "+b", "+a"], ["a", "b"], 0, id="dirty-dedups"),
        pytest.param(["+a", "get", "+a", "+a"], ["a"], 0, id="readd-while-processing-waits"),
        pytest.param(["+a", "get", "+a", "done:a"], ["a", "a"], 0, id="done-requeues-dirty"),
        pytest.param(["+a", "get", "done:a"], ["a"], 0, id="done-without-readd-forgets"),
        pytest.param(["+a", "+b", "get", "+a", "done:a"], ["a", "b", "a"], 0, id="requeue-at-end"),
        pytest.param(["+a", "done:a"], ["a"], 0, id="done-of-unprocessed-is-noop"),
    ],
)
async def test_queue_ops_table_takes_expected_items(
    clock: FakeClock, bus: Bus, ops: list[str], expected_taken: list[str], expected_len: int
) -> None:
    queue = _queue(clock, bus)
    taken: list[str] = []
    for op in ops:
        if op.startswith("+"):
            queue.add(op[1:])
        elif op == "get":
            taken.append(await queue.get())
        else:
            queue.done(op.split(":", 1)[1])
    taken += await _take_all(queue)
    assert taken == expected_taken
    assert queue.len() == expected_len


@pytest.mark.asyncio
async def test_queue_item_processing_is_not_handed_out_again_before_done(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done()
    assert queue.len() == 0
    queue.done("a")
    await settle()
    assert second.result() == "a"
    queue.done("a")
    assert queue.processing() == 0


@pytest.mark.asyncio
async def test_queue_parked_getters_are_woken_one_per_item_in_wait_order(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    getters = [asyncio.create_task(queue.get(), name=f"g{i}") for i in range(3)]
    await settle()
    queue.add("x")
    await settle()
    assert [g.done() for g in getters] == [True, False, False]
    # An arriving getter does not overtake the parked ones.
    queue.add("y")
    late = asyncio.create_task(queue.get(), name="late")
    queue.add("z")
    await settle()
    assert [g.result() for g in getters] == ["x", "y", "z"]
    assert not late.done()
    queue.shut_down()
    with pytest.raises(ShutDown):
        await late


@pytest.mark.asyncio
async def test_queue_cancelled_woken_getter_passes_item_to_next(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("a")  # reserved for `first`
    first.cancel()
    await settle()
    assert first.cancelled()
    assert second.result() == "a"
    assert queue._reserved == 0


@pytest.mark.asyncio
async def test_queue_cancelled_parked_getter_leaves_no_waiter(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    getter = asyncio.create_task(queue.get())
    await settle()
    getter.cancel()
    await settle()
    assert not queue._waiters
    queue.add("a")
    assert await queue.get() == "a"


@pytest.mark.asyncio
async def test_queue_shut_down_wakes_every_waiter_with_shutdown(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    getters = [asyncio.create_task(queue.get()) for _ in range(4)]
    await settle()
    queue.shut_down()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)
    assert queue.shutting_down()


@pytest.mark.asyncio
async def test_queue_after_shut_down_refuses_adds_but_hands_out_queued(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a")
    queue.shut_down()
    queue.add("b")
    assert queue.len() == 1
    assert await queue.get() == "a"
    with pytest.raises(ShutDown):
        await queue.get()


@pytest.mark.asyncio
async def test_queue_shut_down_with_drain_waits_for_in_flight_done(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    queue.add("a")
    queue.add("b")
    await queue.get()
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    assert not drain.done()
    queue.done("a")
    await settle()
    assert not drain.done()
    queue.done("b")
    await settle()
    assert drain.done()
    await drain


@pytest.mark.asyncio
async def test_queue_shut_down_during_drain_ends_the_wait(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    queue.shut_down()
    await settle()
    assert drain.done()
    await drain


@pytest.mark.asyncio
async def test_queue_shut_down_with_drain_with_nothing_in_flight_returns_at_once(
    clock: FakeClock, bus: Bus
) -> None:
    queue = _queue(clock, bus)
    await queue.shut_down_with_drain()
    assert queue.shutting_down()


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed-{s}") for s in range(5)])
async def test_queue_four_workers_random_adds_never_share_an_item_and_process_every_add(
    clock: FakeClock, bus: Bus, seed: int
) -> None:
    rng = random.Random(seed)
    queue = _queue(clock, bus)
    held: set[str] = set()
    tick = 0
    last_add: dict[str, int] = {}
    last_get: dict[str, int] = {}

    async def worker() -> None:
        nonlocal tick
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            assert item not in held, f"{item} handed to two workers"
            held.add(item)
            tick += 1
            last_get[item] = tick
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            held.discard(item)
            queue.done(item)

    workers = [asyncio.create_task(worker(), name=f"worker-{i}") for i in range(4)]
    for _ in range(400):
        item = f"ns/k{rng.randrange(8)}"
        tick += 1
        last_add[item] = tick
        queue.add(item)
        for _ in range(rng.randrange(3)):
            await asyncio.sleep(0)
    await settle(50)
    assert queue.len() == 0 and queue.processing() == 0
    for item, added in last_add.items():
        assert last_get[item] > added, f"{item} added after its last get was never processed"
    await queue.shut_down_with_drain()
    await asyncio.gather(*workers)
