"""Rate limiters: exact delay sequences, forget resets, max-of composition, default limiter."""

from __future__ import annotations

import pytest

from pycm.util.clock import FakeClock
from pycm.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)


def _whens(limiter: RateLimiter, item: str, n: int) -> list[float]:
    return [limiter.when(item) for _ in range(n)]


@pytest.mark.parametrize(
    ("limiter", "expected"),
    [
        pytest.param(
            ItemExponentialFailureRateLimiter(),
            [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64],
            id="default-5ms-doubling",
        ),
        pytest.param(
            ItemExponentialFailureRateLimiter(0.001, 0.01),
            [0.001, 0.002, 0.004, 0.008, 0.01, 0.01],
            id="cap",
        ),
        pytest.param(
            ItemFastSlowRateLimiter(0.005, 10.0, 3),
            [0.005, 0.005, 0.005, 10.0, 10.0],
            id="fast-then-slow",
        ),
        pytest.param(ItemFastSlowRateLimiter(0.005, 10.0, 0), [10.0, 10.0], id="no-fast"),
    ],
)
def test_rate_limiter_when_gives_exact_sequence(
    limiter: RateLimiter, expected: list[float]
) -> None:
    assert _whens(limiter, "a", len(expected)) == expected
    assert limiter.num_requeues("a") == len(expected)
    assert limiter.num_requeues("b") == 0


def test_exponential_limiter_reaches_1000s_cap_and_survives_huge_exponents() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = _whens(limiter, "a", 2000)
    # 0.005 × 2^17 = 655.36 s is the last one under the cap.
    assert delays[17] == 655.36
    assert delays[18:] == [1000.0] * (2000 - 18)
    assert limiter.num_requeues("a") == 2000


@pytest.mark.parametrize(
    "limiter",
    [
        pytest.param(ItemExponentialFailureRateLimiter(), id="exponential"),
        pytest.param(ItemFastSlowRateLimiter(0.005, 10.0, 1), id="fast-slow"),
        pytest.param(
            MaxOfRateLimiter(
                ItemExponentialFailureRateLimiter(), ItemFastSlowRateLimiter(0.001, 1.0, 1)
            ),
            id="max-of",
        ),
    ],
)
def test_rate_limiter_forget_resets_item_only(limiter: RateLimiter) -> None:
    first = _whens(limiter, "a", 3)
    limiter.when("b")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.num_requeues("b") == 1
    assert _whens(limiter, "a", 3) == first


def test_bucket_limiter_burst_then_one_per_qps(clock: FakeClock) -> None:
    limiter = BucketRateLimiter(10.0, 3, clock=clock)
    assert _whens(limiter, "a", 5) == [0.0, 0.0, 0.0, 0.1, 0.2]
    clock.advance(0.2)  # both reservations now due; the bucket is at zero
    assert limiter.when("b") == 0.1
    assert limiter.num_requeues("a") == 0
    limiter.forget("a")  # tracks nothing


def test_max_of_limiter_takes_longest_and_counts_all(clock: FakeClock) -> None:
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(0.001, 3.0, 2), ItemExponentialFailureRateLimiter(0.5, 100.0)
    )
    assert _whens(limiter, "a", 4) == [0.5, 1.0, 3.0, 4.0]
    assert limiter.num_requeues("a") == 4


def test_max_of_limiter_counts_the_most_and_forgets_in_every_item_limiter(
    clock: FakeClock,
) -> None:
    fast, expo = ItemFastSlowRateLimiter(0.001, 3.0, 2), ItemExponentialFailureRateLimiter()
    limiter = MaxOfRateLimiter(fast, BucketRateLimiter(clock=clock), expo)
    expo.when("a")
    expo.when("a")
    fast.when("a")
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert (fast.num_requeues("a"), expo.num_requeues("a"), limiter.num_requeues("a")) == (0, 0, 0)


def test_default_controller_limiter_exponential_until_bucket_runs_dry(clock: FakeClock) -> None:
    limiter = default_controller_rate_limiter(clock)
    assert _whens(limiter, "a", 4) == [0.005, 0.01, 0.02, 0.04]
    # 100 items failing at once: the 4 above and 96 more drain the burst of 100 …
    assert [limiter.when(f"k{i}") for i in range(96)] == [0.005] * 96
    # … then the bucket spaces them 100 ms apart (10 qps), above the 5 ms item delay.
    assert [limiter.when(f"j{i}") for i in range(3)] == [0.1, 0.2, 0.3]


def test_max_of_limiter_needs_a_limiter() -> None:
    with pytest.raises(ValueError):
        MaxOfRateLimiter()
