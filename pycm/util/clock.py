"""Injectable time.

Logic never reads the system clock directly: it takes a :class:`Clock`. Durations and deadlines
use the monotonic reading; only fields that are wall-clock by contract (Lease times, event
timestamps) use :meth:`Clock.wall_ns`. Tests use :class:`FakeClock` and advance it instead of
sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol

__all__ = ["REAL_CLOCK", "Clock", "FakeClock", "RealClock", "SkewedClock"]


class Clock(Protocol):
    """The subset of time that pycm's logic uses."""

    def monotonic(self) -> float:
        """Seconds on a monotonic scale (only differences are meaningful)."""
        ...

    def monotonic_ns(self) -> int:
        """Nanoseconds on the same monotonic scale."""
        ...

    def wall_ns(self) -> int:
        """Nanoseconds since the Unix epoch (wall clock)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep for ``seconds`` of this clock's time."""
        ...


class RealClock:
    """The system's clocks and asyncio's sleep.

    The readings are the ``time`` functions themselves (not methods wrapping them): the trace
    bus reads the clock twice per event, and a Python-level wrapper would double that cost.
    """

    monotonic = staticmethod(time.monotonic)
    monotonic_ns = staticmethod(time.monotonic_ns)
    wall_ns = staticmethod(time.time_ns)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


REAL_CLOCK: Clock = RealClock()


class SkewedClock:
    """Another clock run at ``rate`` times its speed, its wall clock shifted by ``offset``
    seconds: a debugging fault (``pycm run --debug-clock-rate / --debug-clock-offset``) that
    makes a replica's clock run fast or slow, as a VM's can, to show where leader election's
    margin against clock-rate skew ends (docs/operations.md).

    From the moment it is made, ``rate`` seconds pass on it for each second of ``base``: its
    monotonic and wall readings both count elapsed base time × rate (each from its own base
    reading, so a step of the base wall clock shows, scaled); ``sleep(s)`` waits ``s / rate``
    seconds of ``base``. Only pycm's injected clock skews: asyncio's own timeouts, the trace
    bus's timestamps and the peers' clocks do not.
    """

    def __init__(self, rate: float = 1.0, offset: float = 0.0, base: Clock = REAL_CLOCK) -> None:
        if not 0 < rate < float("inf"):
            raise ValueError(f"a clock rate must be positive and finite, not {rate!r}")
        self.rate = rate
        self.offset = offset
        self._base = base
        self._mono0_ns = base.monotonic_ns()
        self._wall0_ns = base.wall_ns()

    def monotonic(self) -> float:
        return self.monotonic_ns() / 1e9

    def monotonic_ns(self) -> int:
        elapsed = self._base.monotonic_ns() - self._mono0_ns
        return self._mono0_ns + round(elapsed * self.rate)

    def wall_ns(self) -> int:
        elapsed = self._base.wall_ns() - self._wall0_ns
        return self._wall0_ns + round(elapsed * self.rate) + _to_ns(self.offset)

    async def sleep(self, seconds: float) -> None:
        await self._base.sleep(seconds / self.rate)


class FakeClock:
    """A clock that moves only when told to.

    ``sleep`` parks the caller until :meth:`advance` moves time past its deadline; sleepers wake
    in deadline order (ties in the order they began sleeping). The wall clock moves with the
    monotonic one from ``wall_start_ns``.
    """

    def __init__(
        self, start: float = 1000.0, wall_start_ns: int = 1_700_000_000_000_000_000
    ) -> None:
        self._now_ns = _to_ns(start)
        self._wall_offset_ns = wall_start_ns - self._now_ns
        # Heap of (deadline_ns, tie-breaker, future); a future is done once woken or cancelled.
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self._now_ns / 1e9

    def monotonic_ns(self) -> int:
        return self._now_ns

    def wall_ns(self) -> int:
        return self._now_ns + self._wall_offset_ns

    async def sleep(self, seconds: float) -> None:
        delta_ns = _to_ns(seconds)
        if delta_ns <= 0:
            # Already due: yield once, as asyncio.sleep(0) does, instead of parking until the
            # next advance().
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        deadline = self._now_ns + delta_ns
        heapq.heappush(self._sleepers, (deadline, next(self._order), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many callers are parked in :meth:`sleep` right now."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    def next_deadline(self) -> float | None:
        """The earliest pending sleeper's wake-up time, if any."""
        self._drop_done()
        return self._sleepers[0][0] / 1e9 if self._sleepers else None

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come.

        Woken sleepers resume, in deadline order, once the caller yields to the loop; they all
        observe the new time (as with client-go's fake clock ``Step``).
        """
        if not seconds >= 0:  # also rejects NaN
            raise ValueError(f"a clock cannot go backwards (advance by {seconds!r})")
        self._now_ns += _to_ns(seconds)
        while self._sleepers and self._sleepers[0][0] <= self._now_ns:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    def set_wall_ns(self, wall_ns: int) -> None:
        """Step the wall clock (for skew tests) without moving monotonic time."""
        self._wall_offset_ns = wall_ns - self._now_ns

    def _drop_done(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)


def _to_ns(seconds: float) -> int:
    # Round, not truncate: int(1.001 * 1e9) is 1000999999, so truncating made advance(1.001)
    # fall 1 ns short, and the error piled up over repeated advances.
    return round(seconds * 1e9)
