"""The queue inspector: what a live rate-limiting queue holds, with exact ages on a FakeClock."""

from __future__ import annotations

import asyncio

import pytest

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.inspect import (
    BackingOffKey,
    ProcessingKey,
    WaitingKey,
    inspect_queue,
    worker_index,
)
from pycm.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue
from tests.workqueue.conftest import settle

WALL0 = 1_700_000_000_000_000_000  # FakeClock's wall clock at start (monotonic 1000 s)


def _queue(clock: FakeClock, bus: Bus) -> RateLimitingQueue[str]:
    return RateLimitingQueue[str](
        "deployment",
        clock=clock,
        bus=bus,
        rate_limiter=ItemExponentialFailureRateLimiter(base_delay=1.0, max_delay=100.0),
    )


@pytest.mark.asyncio
async def test_inspect_queue_waiting_backing_off_processing_exact(
    clock: FakeClock, bus: Bus
) -> None:
    async with _queue(clock, bus) as queue:
        queue.add("ns/a")
        clock.advance(2.0)
        queue.add("ns/b")
        clock.advance(1.0)
        # ns/c fails twice: backoff 1 s then 2 s (retries 2), due 2 s after the second.
        queue.add_rate_limited("ns/c")
        queue.add_rate_limited("ns/c")  # the earlier time is kept: due in 1 s, retries 2
        queue.add_after("ns/d", 30.0, "requeue_after")  # no failure: retries 0
        worker = asyncio.get_running_loop().create_task(queue.get(), name="deployment: worker 3")
        item = await worker  # takes ns/a (the oldest)
        assert item == "ns/a"
        clock.advance(0.5)
        await settle()

        contents = inspect_queue(queue, last_error=lambda key: f"boom {key}")

    assert contents.queue == "deployment"
    assert (contents.depth, contents.waiting_count) == (1, 1)
    assert (contents.backing_off_count, contents.processing_count) == (2, 1)
    assert contents.waiting == [WaitingKey("ns/b", 1.5)]
    assert contents.backing_off == [
        BackingOffKey("ns/c", 2, 0.5, WALL0 + 4_000_000_000, "boom ns/c"),
        BackingOffKey("ns/d", 0, 29.5, WALL0 + 33_000_000_000, "boom ns/d"),
    ]
    assert contents.processing == [ProcessingKey("ns/a", 0.5, 3, "deployment: worker 3")]


@pytest.mark.asyncio
async def test_inspect_queue_limit_lists_oldest_keeps_counts(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    for i in range(5):
        queue.add(f"k{i}")
        clock.advance(1.0)
    contents = inspect_queue(queue, limit=2)
    assert [w.key for w in contents.waiting] == ["k0", "k1"]
    assert [w.age_s for w in contents.waiting] == [5.0, 4.0]
    assert contents.waiting_count == 5
    await queue.aclose()


@pytest.mark.asyncio
async def test_inspect_queue_done_forgets_the_taker(clock: FakeClock, bus: Bus) -> None:
    queue = _queue(clock, bus)
    queue.add("a")
    item = await queue.get()  # taken by the test's own task: not a worker
    held = inspect_queue(queue).processing
    assert [(p.key, p.worker) for p in held] == [("a", -1)]
    queue.done(item)
    assert inspect_queue(queue).processing == []
    assert queue.takers() == {}
    await queue.aclose()


@pytest.mark.parametrize(
    ("name", "index"),
    [
        pytest.param("deployment: worker 0", 0, id="first"),
        pytest.param("my-ctrl: worker 12", 12, id="two digits"),
        pytest.param("Task-7", -1, id="not a worker"),
    ],
)
@pytest.mark.asyncio
async def test_worker_index_parses_worker_task_names(name: str, index: int) -> None:
    task = asyncio.get_running_loop().create_task(asyncio.sleep(0), name=name)
    assert worker_index(task) == index
    await task
    assert worker_index(None) == -1
