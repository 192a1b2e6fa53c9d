"""The token bucket: x/time/rate Reserve / Allow / Wait semantics on a fake clock."""

from __future__ import annotations

import asyncio
import math

import pytest

from pycm.util.clock import FakeClock
from pycm.util.ratelimit import TokenBucket


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("qps", "burst", "n", "expected"),
    [
        pytest.param(10.0, 3, 6, [0.0, 0.0, 0.0, 0.1, 0.2, 0.3], id="burst-then-spacing"),
        pytest.param(2.0, 1, 4, [0.0, 0.5, 1.0, 1.5], id="burst-1"),
        pytest.param(math.inf, 1, 3, [0.0, 0.0, 0.0], id="unlimited"),
    ],
)
def test_token_bucket_reserve_without_time_passing_queues_reservations(
    clock: FakeClock, qps: float, burst: int, n: int, expected: list[float]
) -> None:
    bucket = TokenBucket(qps, burst, clock=clock)
    assert [bucket.reserve() for _ in range(n)] == expected


def test_token_bucket_refills_at_qps_up_to_burst(clock: FakeClock) -> None:
    bucket = TokenBucket(10.0, 2, clock=clock)
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]
    clock.advance(0.1)
    assert [bucket.try_accept() for _ in range(2)] == [True, False]
    clock.advance(60.0)  # refill stops at the burst
    assert bucket.tokens() == 2.0
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]


def test_token_bucket_try_accept_does_not_reserve(clock: FakeClock) -> None:
    bucket = TokenBucket(10.0, 1, clock=clock)
    assert bucket.try_accept()
    assert not bucket.try_accept()
    assert bucket.reserve() == 0.1


@pytest.mark.parametrize(
    ("qps", "burst"),
    [
        pytest.param(0.0, 1, id="zero-qps"),
        pytest.param(-1.0, 1, id="negative-qps"),
        pytest.param(math.nan, 1, id="nan-qps"),
        pytest.param(1.0, 0, id="zero-burst"),
    ],
)
def test_token_bucket_invalid_settings_raise(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps, burst)


@pytest.mark.asyncio
async def test_token_bucket_wait_sleeps_until_token_due(clock: FakeClock) -> None:
    bucket = TokenBucket(10.0, 1, clock=clock)
    assert await bucket.wait() == 0.0
    waiter = asyncio.create_task(bucket.wait())
    await _settle()
    assert clock.next_deadline() == pytest.approx(1000.1)
    clock.advance(0.1)
    assert await waiter == 0.1


@pytest.mark.asyncio
async def test_token_bucket_cancelled_wait_returns_token(clock: FakeClock) -> None:
    bucket = TokenBucket(10.0, 1, clock=clock)
    bucket.reserve()
    waiter = asyncio.create_task(bucket.wait())
    await _settle()
    waiter.cancel()
    await _settle()
    assert waiter.cancelled()
    # The cancelled reservation is restored: the next caller waits 0.1 s, not 0.2 s.
    assert bucket.reserve() == 0.1
