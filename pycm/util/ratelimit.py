"""A token bucket with golang.org/x/time/rate semantics, one token at a time, on an injected clock.

The bucket holds up to ``burst`` tokens and refills at ``qps`` tokens a second; it starts full.
:meth:`TokenBucket.reserve` always takes a token and says how long the caller must wait before
acting on it (the bucket may go negative: later callers queue up behind earlier reservations,
each ``1/qps`` after the previous one) — x/time/rate's ``Reserve().Delay()``, which client-go's
``BucketRateLimiter`` uses. :meth:`TokenBucket.try_accept` takes a token only if one is there
now (``Allow``), and :meth:`TokenBucket.wait` reserves and sleeps (``Wait``; a wait cancelled
before its time gives the token back). client-go's API client limiter (``--kube-api-qps``,
``--kube-api-burst``) is the same bucket.

Time is read in integer nanoseconds from the clock, so a :class:`~pycm.util.clock.FakeClock`
gives exact, repeatable delays (burst 100, qps 10: a hundred zeros, then 0.1, 0.2, 0.3 s …).
"""

from __future__ import annotations

import asyncio
import math

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["TokenBucket"]


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` banked; ``qps=math.inf`` never limits.

    Invariants: ``_tokens <= burst`` and is the balance at ``_last_ns`` (negative while callers
    hold reservations not yet due); ``_last_event_ns`` is the time the latest reservation may act.
    """

    __slots__ = ("_burst", "_clock", "_last_event_ns", "_last_ns", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int, *, clock: Clock = REAL_CLOCK) -> None:
        if not qps > 0:  # also rejects NaN
            raise ValueError(f"qps must be positive (math.inf for no limit), not {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst!r}")
        self._qps = float(qps)
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last_ns = self._last_event_ns = clock.monotonic_ns()

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return self._burst

    def tokens(self) -> float:
        """The balance now (negative when reservations are queued ahead of the refill)."""
        if self._qps == math.inf:
            return float(self._burst)
        return self._advance(self._clock.monotonic_ns())

    def _advance(self, now_ns: int) -> float:
        # A clock read before _last_ns (a reservation made "in the future") refills nothing.
        elapsed_ns = now_ns - self._last_ns if now_ns > self._last_ns else 0
        tokens = self._tokens + elapsed_ns / 1e9 * self._qps
        burst = self._burst
        return burst if tokens > burst else tokens

    def reserve(self) -> float:
        """Take a token; return the seconds to wait before using it (0.0 when one was banked)."""
        if self._qps == math.inf:
            return 0.0
        now_ns = self._clock.monotonic_ns()
        tokens = self._advance(now_ns) - 1.0
        wait = -tokens / self._qps if tokens < 0 else 0.0
        self._last_ns = now_ns
        self._tokens = tokens
        self._last_event_ns = now_ns + round(wait * 1e9)
        return wait

    def try_accept(self) -> bool:
        """Take a token only if one is available now (client-go ``TryAccept``)."""
        if self._qps == math.inf:
            return True
        now_ns = self._clock.monotonic_ns()
        tokens = self._advance(now_ns)
        if tokens < 1.0:
            return False
        self._last_ns = now_ns
        self._tokens = tokens - 1.0
        self._last_event_ns = now_ns
        return True

    async def wait(self) -> float:
        """Reserve a token and sleep until it may be used; return the seconds waited.

        If the caller is cancelled before its time comes, the token is given back (less what
        reservations made after it already count on), as x/time/rate's ``Reservation.Cancel``.
        """
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        act_ns = self._last_event_ns
        try:
            await self._clock.sleep(delay)
        except asyncio.CancelledError:
            self._cancel(act_ns)
            raise
        return delay

    def _cancel(self, act_ns: int) -> None:
        now_ns = self._clock.monotonic_ns()
        if act_ns <= now_ns:
            return  # its time has come: the token was used
        # Reservations made after this one are timed as if it stood; only the part of its
        # token they do not depend on can be restored.
        restore = 1.0 - (self._last_event_ns - act_ns) / 1e9 * self._qps
        if restore <= 0:
            return
        tokens = self._advance(now_ns) + restore
        self._tokens = min(tokens, float(self._burst))
        self._last_ns = now_ns
        if act_ns == self._last_event_ns:
            previous = act_ns - round(1e9 / self._qps)
            if previous >= now_ns:
                self._last_event_ns = previous
