"""Rate-limiting queue: add_rate_limited follows the limiter, num_requeues, forget, drop."""

from __future__ import annotations

import pytest

from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemDropped
from pycm.util.clock import FakeClock
from pycm.workqueue.rate_limiters import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
)
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue
from tests.workqueue.conftest import settle


@pytest.mark.asyncio
async def test_rate_limiting_queue_add_rate_limited_backs_off_5_10_20ms(
    clock: FakeClock, bus: Bus
) -> None:
    async with RateLimitingQueue[str](
        "rl", clock=clock, bus=bus, rate_limiter=ItemExponentialFailureRateLimiter()
    ) as queue:
        for expected_delay, retries in [(0.005, 1), (0.01, 2), (0.02, 3), (0.04, 4)]:
            queue.add_rate_limited("a")
            await settle()
            assert queue.num_requeues("a") == retries
            clock.advance(expected_delay - 0.001)
            await settle()
            assert queue.len() == 0
            clock.advance(0.001)
            await settle()
            assert queue.len() == 1
            item = await queue.get()
            queue.done(item)
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        queue.add_rate_limited("a")
        await settle()
        assert clock.next_deadline() == pytest.approx(clock.monotonic() + 0.005)


@pytest.mark.asyncio
async def test_rate_limiting_queue_default_limiter_uses_queue_clock(
    clock: FakeClock, bus: Bus
) -> None:
    async with RateLimitingQueue[str]("rl", clock=clock, bus=bus) as queue:
        queue.add_rate_limited("a")
        await settle()
        clock.advance(0.005)
        await settle()
        assert queue.len() == 1
        assert queue.num_requeues("a") == 1


@pytest.mark.asyncio
async def test_rate_limiting_queue_drop_forgets_and_emits_retries(
    clock: FakeClock, bus: Bus
) -> None:
    async with RateLimitingQueue[str]("rl", clock=clock, bus=bus) as queue:
        sub = bus.subscribe(kinds=["queue.drop"])
        for _ in range(3):
            queue.add_rate_limited("ns/a")
        queue.drop("ns/a", "max_retries")
        assert queue.num_requeues("ns/a") == 0
        [event] = sub.drain()
        assert isinstance(event, ItemDropped)
        assert (event.queue, event.key, event.retries, event.reason) == (
            "rl",
            "ns/a",
            3,
            "max_retries",
        )
        sub.close()


@pytest.mark.asyncio
async def test_rate_limiting_queue_after_shutdown_does_not_count_retries(
    clock: FakeClock, bus: Bus
) -> None:
    queue = RateLimitingQueue[str]("rl", clock=clock, bus=bus)
    queue.shut_down()
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 0
    await queue.aclose()


@pytest.mark.asyncio
async def test_requeues_is_the_limiters_counts_when_one_limiter_counts_items(
    clock: FakeClock, bus: Bus
) -> None:
    # The worker reads `requeues` in place of num_requeues() and skips forget() while it is
    # empty: both must agree with the calls, as items are counted and forgotten.
    async with RateLimitingQueue[str]("rl", clock=clock, bus=bus) as queue:
        requeues = queue.requeues
        assert requeues is not None and not requeues
        queue.add_rate_limited("a")
        queue.add_rate_limited("a")
        queue.add_rate_limited("b")
        assert (requeues.get("a", 0), requeues.get("b", 0)) == (2, 1)
        assert (queue.num_requeues("a"), queue.num_requeues("b")) == (2, 1)
        queue.forget("a")
        queue.forget("b")
        assert not requeues and queue.num_requeues("a") == 0


@pytest.mark.asyncio
async def test_requeues_is_none_when_several_limiters_count_items(
    clock: FakeClock, bus: Bus
) -> None:
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(), ItemFastSlowRateLimiter(0.001, 1.0, 2)
    )
    async with RateLimitingQueue[str]("rl", clock=clock, bus=bus, rate_limiter=limiter) as queue:
        assert queue.requeues is None
