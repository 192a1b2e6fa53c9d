"""Backoff policies, timers, wait.Jitter and the reflector's backoff manager."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from pycm.util.backoff import Backoff, BackoffTimer, ExponentialBackoffManager, jittered
from pycm.util.clock import FakeClock


def _take(timer: BackoffTimer, n: int) -> list[float | None]:
    return [timer.next_delay() for _ in range(n)]


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        pytest.param(
            Backoff(0.001),
            [0.001, 0.002, 0.004, 0.008, 0.016, 0.032],
            id="doubling-from-1ms",
        ),
        pytest.param(
            Backoff(0.005, cap=1000.0),
            [0.005, 0.01, 0.02, 0.04, 0.08, 0.16],
            id="workqueue-item-exponential",
        ),
        pytest.param(Backoff(1.0, cap=5.0), [1.0, 2.0, 4.0, 5.0, 5.0, 5.0], id="cap-holds"),
        pytest.param(Backoff(4.0, cap=4.0), [4.0] * 6, id="cap-equals-initial"),
        pytest.param(Backoff(1.0, factor=3.0), [1.0, 3.0, 9.0, 27.0, 81.0, 243.0], id="factor-3"),
        pytest.param(Backoff(2.0, factor=0.0), [2.0] * 6, id="factor-0-constant"),
        pytest.param(Backoff(2.0, factor=1.0), [2.0] * 6, id="factor-1-constant"),
        pytest.param(Backoff(0.0), [0.0] * 6, id="zero-initial"),
        pytest.param(
            Backoff(1.0, steps=3), [1.0, 2.0, 4.0, None, None, None], id="steps-exhausted"
        ),
        pytest.param(
            Backoff(1.0, cap=2.0, steps=4),
            [1.0, 2.0, 2.0, 2.0, None, None],
            id="cap-does-not-use-up-steps",
        ),
        pytest.param(Backoff(1.0, steps=0), [None] * 6, id="no-steps"),
    ],
)
def test_backoff_timer_without_jitter_gives_exact_sequence(
    backoff: Backoff, expected: list[float | None]
) -> None:
    assert _take(backoff.timer(), len(expected)) == expected


def test_backoff_timer_iterates_until_steps_run_out() -> None:
    timer = Backoff(1.0, steps=4).timer()
    assert list(timer) == [1.0, 2.0, 4.0, 8.0]
    assert timer.exhausted
    assert timer.attempts == 4
    assert next(timer, None) is None


def test_backoff_timer_unbounded_never_exhausts() -> None:
    timer = Backoff(1.0, cap=60.0).timer()
    assert list(itertools.islice(timer, 100))[-1] == 60.0
    assert not timer.exhausted
    assert timer.attempts == 100


def test_backoff_timer_reset_starts_over() -> None:
    timer = Backoff(1.0, steps=3).timer()
    assert _take(timer, 4) == [1.0, 2.0, 4.0, None]
    timer.reset()
    assert timer.attempts == 0
    assert not timer.exhausted
    assert _take(timer, 2) == [1.0, 2.0]


def test_backoff_timers_of_one_policy_are_independent() -> None:
    policy = Backoff(1.0)
    first, second = policy.timer(), policy.timer()
    assert _take(first, 3) == [1.0, 2.0, 4.0]
    assert _take(second, 1) == [1.0]
    assert first.backoff is policy


def test_backoff_with_jitter_stays_in_bounds_and_follows_the_seeded_rng() -> None:
    policy = Backoff(1.0, jitter=0.5, cap=10.0)
    delays = list(itertools.islice(policy.timer(random.Random(7)), 8))
    bases = [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0]

    draws = random.Random(7)
    assert delays == [base + draws.random() * 0.5 * base for base in bases]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay < base * 1.5
    # The same seed gives the same run.
    assert list(itertools.islice(policy.timer(random.Random(7)), 8)) == delays


def test_backoff_is_frozen() -> None:
    policy = Backoff(1.0)
    with pytest.raises(AttributeError):
        policy.initial = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"initial": -1.0}, "initial must be a finite number >= 0", id="negative"),
        pytest.param({"initial": math.nan}, "initial must be a finite number >= 0", id="nan"),
        pytest.param({"initial": 1.0, "factor": -2.0}, "factor must be", id="negative-factor"),
        pytest.param({"initial": 1.0, "jitter": math.inf}, "jitter must be", id="infinite-jitter"),
        pytest.param({"initial": 2.0, "cap": 1.0}, "cap must be finite and >= initial", id="cap"),
        pytest.param({"initial": 1.0, "steps": -1}, "steps must be >= 0", id="negative-steps"),
    ],
)
def test_backoff_invalid_policy_is_rejected(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_backoff_invalid_policy_reports_every_problem() -> None:
    with pytest.raises(ValueError) as caught:
        Backoff(-1.0, factor=-1.0, steps=-1)
    assert str(caught.value).count(" must be ") == 3


@pytest.mark.parametrize(
    ("max_factor", "effective"),
    [
        pytest.param(0.5, 0.5, id="half"),
        pytest.param(1.0, 1.0, id="one"),
        pytest.param(0.0, 1.0, id="zero-means-one"),
        pytest.param(-3.0, 1.0, id="negative-means-one"),
    ],
)
def test_jittered_adds_up_to_max_factor_times_duration(max_factor: float, effective: float) -> None:
    draw = random.Random(3).random()
    assert jittered(10.0, max_factor, random.Random(3)) == 10.0 + draw * effective * 10.0


def test_jittered_stays_in_bounds() -> None:
    rng = random.Random(11)
    samples = [jittered(2.0, 0.25, rng) for _ in range(1000)]
    assert all(2.0 <= s < 2.5 for s in samples)
    assert max(samples) - min(samples) > 0.4  # it really spreads


def test_backoff_manager_defaults_are_the_reflectors() -> None:
    clock = FakeClock()
    # Full jitter: each delay lies in [base, 2 * base); bases 0.8, 1.6, 3.2, ... up to 30.
    manager = ExponentialBackoffManager(clock=clock, rng=random.Random(1))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for base in bases:
        delay = manager.next()
        assert base <= delay < 2 * base
        clock.advance(delay)


def test_backoff_manager_without_jitter_gives_exact_sequence() -> None:
    clock = FakeClock()
    manager = ExponentialBackoffManager(jitter=0.0, clock=clock)
    delays = []
    for _ in range(8):
        delays.append(manager.next())
        clock.advance(1.0)
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_backoff_manager_resets_after_quiet_period() -> None:
    clock = FakeClock()
    manager = ExponentialBackoffManager(
        initial=1.0, max=30.0, reset_after=120.0, jitter=0.0, clock=clock
    )
    assert [manager.next() for _ in range(3)] == [1.0, 2.0, 4.0]

    clock.advance(120.0)  # exactly reset_after: not yet quiet for longer than it
    assert manager.next() == 8.0

    clock.advance(120.000_000_001)
    assert manager.next() == 1.0
    assert manager.next() == 2.0


def test_backoff_manager_measures_quiet_time_from_the_last_backoff() -> None:
    clock = FakeClock()
    manager = ExponentialBackoffManager(initial=1.0, reset_after=10.0, jitter=0.0, clock=clock)
    delays = []
    for _ in range(5):  # 40 s in all, but never 10 s between two backoffs
        delays.append(manager.next())
        clock.advance(8.0)
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0]
