"""FakeClock, RealClock and SkewedClock: deadlines, ordering, cancellation, wall time, rate."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from pycm.util.clock import REAL_CLOCK, Clock, FakeClock, RealClock, SkewedClock
from tests.util.conftest import settle


async def _sleep_and_record(clock: FakeClock, seconds: float, name: str, log: list[str]) -> None:
    await clock.sleep(seconds)
    log.append(f"{name}@{clock.monotonic():.3f}")


def test_fake_clock_satisfies_the_protocol() -> None:
    clocks: list[Clock] = [FakeClock(), RealClock(), REAL_CLOCK]
    assert all(isinstance(c.monotonic(), float) for c in clocks)


def test_fake_clock_start_readings_are_consistent(clock: FakeClock) -> None:
    assert clock.monotonic() == 1000.0
    assert clock.monotonic_ns() == 1_000_000_000_000
    assert clock.wall_ns() == 1_700_000_000_000_000_000
    assert clock.sleepers == 0
    assert clock.next_deadline() is None


@pytest.mark.asyncio
async def test_fake_clock_sleepers_wake_in_deadline_order(clock: FakeClock) -> None:
    log: list[str] = []
    tasks = [
        asyncio.create_task(_sleep_and_record(clock, 3, "c", log), name="c"),
        asyncio.create_task(_sleep_and_record(clock, 1, "a", log), name="a"),
        asyncio.create_task(_sleep_and_record(clock, 2, "b1", log), name="b1"),
        asyncio.create_task(_sleep_and_record(clock, 2, "b2", log), name="b2"),
    ]
    await settle()
    assert clock.sleepers == 4
    assert clock.next_deadline() == 1001.0

    clock.advance(10)
    await asyncio.gather(*tasks)
    # Deadline order; the tie in the order the sleeps began. All observe the new time.
    assert log == ["a@1010.000", "b1@1010.000", "b2@1010.000", "c@1010.000"]
    assert clock.sleepers == 0


@pytest.mark.asyncio
async def test_fake_clock_sleeper_wakes_exactly_at_its_deadline(clock: FakeClock) -> None:
    log: list[str] = []
    task = asyncio.create_task(_sleep_and_record(clock, 5, "s", log), name="s")
    await settle()

    clock.advance(4.999_999_999)
    await settle()
    assert log == []
    assert clock.sleepers == 1
    assert clock.next_deadline() == 1005.0

    clock.advance(1e-9)
    await task
    assert log == ["s@1005.000"]


@pytest.mark.asyncio
async def test_fake_clock_advance_in_steps_wakes_each_at_its_step(clock: FakeClock) -> None:
    log: list[str] = []
    tasks = [
        asyncio.create_task(_sleep_and_record(clock, 1, "a", log), name="a"),
        asyncio.create_task(_sleep_and_record(clock, 2, "b", log), name="b"),
    ]
    await settle()
    clock.advance(1)
    await settle()
    assert log == ["a@1001.000"]
    assert clock.sleepers == 1
    clock.advance(1)
    await asyncio.gather(*tasks)
    assert log == ["a@1001.000", "b@1002.000"]


@pytest.mark.asyncio
async def test_fake_clock_advance_zero_keeps_time_and_future_sleepers(clock: FakeClock) -> None:
    log: list[str] = []
    task = asyncio.create_task(_sleep_and_record(clock, 1, "s", log), name="s")
    await settle()

    clock.advance(0)
    await settle()
    assert clock.monotonic() == 1000.0
    assert log == []
    assert clock.sleepers == 1

    clock.advance(1)
    clock.advance(0)  # the due sleeper is already woken; a further zero step is harmless
    await task
    assert log == ["s@1001.000"]


@pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(-1.0, id="negative"),
        pytest.param(-1e-9, id="one-ns-back"),
        pytest.param(math.nan, id="nan"),
    ],
)
def test_fake_clock_advance_backwards_is_rejected(clock: FakeClock, seconds: float) -> None:
    with pytest.raises(ValueError, match="cannot go backwards"):
        clock.advance(seconds)
    assert clock.monotonic() == 1000.0


def test_fake_clock_advance_rounds_to_the_nearest_ns(clock: FakeClock) -> None:
    # 1.001 * 1e9 is 1000999999.9999999 in binary floating point: truncating lost 1 ns a step.
    for _ in range(1000):
        clock.advance(1.001)
    assert clock.monotonic_ns() == 1_000_000_000_000 + 1000 * 1_001_000_000


@pytest.mark.asyncio
async def test_fake_clock_cancelled_sleeper_is_dropped(clock: FakeClock) -> None:
    log: list[str] = []
    doomed = asyncio.create_task(_sleep_and_record(clock, 1, "doomed", log), name="doomed")
    kept = asyncio.create_task(_sleep_and_record(clock, 2, "kept", log), name="kept")
    await settle()
    assert clock.sleepers == 2

    doomed.cancel()
    await asyncio.wait([doomed])
    assert doomed.cancelled()
    assert clock.sleepers == 1
    assert clock.next_deadline() == 1002.0

    clock.advance(5)
    await kept
    assert log == ["kept@1005.000"]
    assert clock.next_deadline() is None


@pytest.mark.asyncio
async def test_fake_clock_sleeper_cancelled_after_wakeup_is_cancelled(clock: FakeClock) -> None:
    task = asyncio.create_task(clock.sleep(1), name="sleeper")
    await settle()
    clock.advance(1)  # woken, but not yet resumed
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()


def test_fake_clock_wall_moves_with_monotonic(clock: FakeClock) -> None:
    clock.advance(2.5)
    assert clock.monotonic() == 1002.5
    assert clock.wall_ns() == 1_700_000_000_000_000_000 + 2_500_000_000


def test_fake_clock_set_wall_ns_steps_wall_only(clock: FakeClock) -> None:
    clock.set_wall_ns(42)
    assert clock.wall_ns() == 42
    assert clock.monotonic() == 1000.0
    clock.advance(1)
    assert clock.wall_ns() == 1_000_000_042


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(0.0, id="zero"),
        pytest.param(-3.0, id="negative"),
        pytest.param(1e-12, id="sub-ns"),
    ],
)
async def test_fake_clock_sleep_non_positive_yields_without_parking(
    clock: FakeClock, seconds: float
) -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    task = asyncio.create_task(other(), name="other")
    await clock.sleep(seconds)
    assert ran == ["other"]  # the sleep yielded to the loop
    assert clock.sleepers == 0
    assert clock.monotonic() == 1000.0
    await task


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "seconds", [pytest.param(0.0, id="zero"), pytest.param(-1.0, id="negative")]
)
async def test_real_clock_sleep_non_positive_yields(seconds: float) -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    task = asyncio.create_task(other(), name="other")
    await REAL_CLOCK.sleep(seconds)
    assert ran == ["other"]
    await task


def test_real_clock_readings_agree_with_time() -> None:
    before = time.monotonic_ns()
    reading = REAL_CLOCK.monotonic_ns()
    assert before <= reading <= time.monotonic_ns()
    assert abs(REAL_CLOCK.wall_ns() - time.time_ns()) < 5_000_000_000
    assert REAL_CLOCK.monotonic() >= before / 1e9


@pytest.mark.asyncio
async def test_skewed_clock_runs_at_its_rate_with_its_wall_offset(clock: FakeClock) -> None:
    skewed = SkewedClock(2.0, offset=5.0, base=clock)
    mono0, wall0 = skewed.monotonic(), skewed.wall_ns()
    assert (mono0, wall0) == (clock.monotonic(), clock.wall_ns() + 5_000_000_000)
    clock.advance(1.5)
    assert skewed.monotonic() - mono0 == pytest.approx(3.0)
    assert skewed.wall_ns() - wall0 == 3_000_000_000
    assert skewed.monotonic_ns() == round(skewed.monotonic() * 1e9)
    # A sleep of 3 s on it is 1.5 s of the base clock.
    sleeper = asyncio.ensure_future(skewed.sleep(3.0))
    await asyncio.sleep(0)
    clock.advance(1.499)
    await asyncio.sleep(0)
    assert not sleeper.done()
    clock.advance(0.001)
    await sleeper


@pytest.mark.asyncio
async def test_skewed_clock_slow_rate_stretches_sleeps(clock: FakeClock) -> None:
    skewed = SkewedClock(0.5, base=clock)
    start = skewed.monotonic()
    sleeper = asyncio.ensure_future(skewed.sleep(1.0))
    await asyncio.sleep(0)
    assert clock.next_deadline() == pytest.approx(clock.monotonic() + 2.0)
    clock.advance(2.0)
    await sleeper
    assert skewed.monotonic() - start == pytest.approx(1.0)


@pytest.mark.parametrize("rate", [0.0, -1.0, float("inf"), float("nan")])
def test_skewed_clock_rejects_a_rate_that_is_not_positive_and_finite(rate: float) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        SkewedClock(rate)
