"""Leader election's margin against clock-rate skew, on one fake timeline.

Two electors share a fake lock server; either one's clock may run at a rate
(:class:`~pycm.util.clock.SkewedClock` over the shared :class:`~pycm.util.clock.FakeClock`, which
stands for real time). Timings are KCM's (lease 15 s, renew deadline 10 s, retry 2 s).

What they show (and docs/operations.md states):

- a leader cut off from the API server is fenced (its gate closes) ``RenewDeadline / rate`` real
  seconds after its last renew began; a standby takes over no earlier than ``LeaseDuration /
  standby_rate`` after it last saw the lease change. Fencing holds iff the first comes first:
  with an honest standby, for a leader rate above RenewDeadline / LeaseDuration (2/3);
- a standby whose clock runs faster than LeaseDuration / RetryPeriod (7.5×) takes a *healthy*
  lease; the old leader's next renew attempt sees the new holder and closes its gate then.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest

from pycm.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector
from pycm.leaderelection.fake import FakeLock, FakeLockServer
from pycm.leaderelection.resourcelock import LockError
from pycm.trace.bus import Bus
from pycm.util.clock import Clock, FakeClock, SkewedClock

LEASE, RENEW, RETRY = 15.0, 10.0, 2.0
STEP = 0.05


class CutLock(FakeLock):
    """A FakeLock whose calls fail while ``cut`` (a partition between one replica and the API
    server)."""

    cut = False

    async def _enter(self, operation: str) -> None:
        if self.cut:
            raise LockError(f"injected partition ({operation})")
        await super()._enter(operation)


def _elector(server: FakeLockServer, identity: str, clock: Clock) -> tuple[LeaderElector, CutLock]:
    lock = CutLock(server, identity)

    async def lead() -> None:
        await asyncio.Event().wait()

    config = LeaderElectionConfig(
        lock=lock,
        callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=lambda: None),
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        name="pycm",
    )
    rng = random.Random(identity)
    return LeaderElector(config, clock=clock, bus=Bus(instance=identity), rng=rng), lock


async def _settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("leader_rate", "fenced_in_time"),
    [
        pytest.param(1.0, True, id="honest-clock"),
        pytest.param(0.8, True, id="slow-inside-the-margin"),
        pytest.param(0.5, False, id="half-speed-beyond-the-margin"),
    ],
)
@pytest.mark.asyncio
async def test_cut_off_leader_is_fenced_before_the_takeover_only_inside_the_skew_margin(
    leader_rate: float, fenced_in_time: bool
) -> None:
    base = FakeClock()
    server = FakeLockServer()
    a, a_lock = _elector(server, "a", SkewedClock(leader_rate, base=base))
    b, _ = _elector(server, "b", base)
    tasks = [asyncio.create_task(a.run(), name="a")]
    await _settle()
    assert a.is_leader()
    tasks.append(asyncio.create_task(b.run(), name="b"))
    # A healthy lease for a while: the standby sees it renewed and leaves it alone.
    await _advance(base, 30.0)
    assert a.is_leader() and a.gate.is_open() and not b.is_leader()
    # Cut the leader off right after a renew: nothing it sends arrives from here on.
    await _advance_until(base, lambda: (a.gate.age() or RENEW) < STEP, 20.0)
    a_lock.cut = True
    cut_at = base.monotonic()
    last_renew = cut_at - (a.gate.age() or 0.0) / leader_rate  # in real (fake-base) time
    closed_at = taken_at = None
    while closed_at is None or taken_at is None:
        base.advance(STEP)
        await _settle()
        if closed_at is None and not a.gate.is_open():
            closed_at = base.monotonic()
        if taken_at is None and b.is_leader():
            taken_at = base.monotonic()
        assert base.monotonic() - cut_at < 60, "neither fenced nor taken over"
    # Fenced RenewDeadline of the leader's own clock after its last renew began; taken over
    # no earlier than LeaseDuration after that renew (the standby saw it after it began).
    assert closed_at - last_renew == pytest.approx(RENEW / leader_rate, abs=2 * STEP)
    assert taken_at - last_renew >= LEASE
    assert (closed_at < taken_at) is fenced_in_time, (closed_at - cut_at, taken_at - cut_at)
    await _stop(tasks)


@pytest.mark.asyncio
async def test_fast_standby_takes_a_healthy_lease_old_leader_fenced_at_its_next_renew() -> None:
    base = FakeClock()
    server = FakeLockServer()
    a, _ = _elector(server, "a", base)
    b, _ = _elector(server, "b", SkewedClock(10.0, base=base))  # above LEASE / RETRY = 7.5
    tasks = [asyncio.create_task(a.run(), name="a")]
    await _settle()
    tasks.append(asyncio.create_task(b.run(), name="b"))
    # Nothing is wrong with the leader; the standby's 15 s lease lasts 1.5 s of real time,
    # shorter than the 2 s between renewals, so it sees the lease expire and takes it.
    took = await _advance_until(base, b.is_leader, 30.0)
    assert took < LEASE
    assert a.gate.is_open(), "the leader's own renew is still fresh: only its renew can tell"
    fenced = await _advance_until(base, lambda: not a.gate.is_open(), RETRY * 2.2 + 1)
    assert fenced <= RETRY * 2.2 + STEP  # at its next renew attempt, not RenewDeadline later
    assert fenced < RENEW
    await _stop(tasks)


async def _advance(clock: FakeClock, seconds: float) -> None:
    end = clock.monotonic() + seconds
    while clock.monotonic() < end:
        clock.advance(STEP)
        await _settle()


async def _advance_until(clock: FakeClock, done: Callable[[], bool], limit: float) -> float:
    """Move the fake time in small steps until ``done()`` holds; the time that took."""
    start = clock.monotonic()
    while not done():
        assert clock.monotonic() - start < limit, f"not within {limit}s"
        clock.advance(STEP)
        await _settle()
    return clock.monotonic() - start


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
