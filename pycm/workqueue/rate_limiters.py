"""Rate limiters: how long an item waits before it is retried (client-go default_rate_limiters.go).

A :class:`RateLimiter` answers ``when(item)`` — the delay before the item's next try, counting
the try — and forgets an item once it succeeds. Strategies compose rather than inherit: the
controller default, :func:`default_controller_rate_limiter`, is the max of a per-item
exponential backoff and an overall token bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Protocol

from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.ratelimit import TokenBucket

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

# 2.0 ** 1024 overflows a float: past this exponent every delay is the cap anyway.
_MAX_EXPONENT = 1023


class RateLimiter(Protocol):
    """The subset of rate limiting that a rate-limiting queue uses."""

    def when(self, item: Hashable) -> float:
        """Seconds the item must wait before its next try (records the try)."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking the item (it succeeded or was given up on)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many tries of the item this limiter has counted since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base_delay × 2^failures``, capped at ``max_delay``: 5 ms, 10 ms, 20 ms … 1000 s.

    Invariant: ``_failures[item]`` is the number of ``when`` calls since the item was forgotten.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("delays cannot be negative")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        # The counts themselves, read-only (see MaxOfRateLimiter.requeues).
        self.requeues: Mapping[Hashable, int] = self._failures

    def when(self, item: Hashable) -> float:
        failures = self._failures
        exp = failures.get(item, 0)
        failures[item] = exp + 1
        if exp > _MAX_EXPONENT:
            return self.max_delay
        delay = self.base_delay * 2.0**exp
        return delay if delay < self.max_delay else self.max_delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """``fast_delay`` for the first ``max_fast_attempts`` tries of an item, ``slow_delay`` after.

    Invariant: ``_failures[item]`` is the number of ``when`` calls since the item was forgotten.
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0 or max_fast_attempts < 0:
            raise ValueError("delays and attempts cannot be negative")
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}
        self.requeues: Mapping[Hashable, int] = self._failures

    def when(self, item: Hashable) -> float:
        attempts = self._failures.get(item, 0) + 1
        self._failures[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket shared by all items: each ``when`` reserves a token and returns
    the wait until it is due (x/time/rate ``Reserve().Delay()``). Tracks no items."""

    TRACKS_ITEMS = False  # forget() does nothing and num_requeues() is 0 (MaxOfRateLimiter)

    def __init__(
        self,
        qps: float = 10.0,
        burst: int = 100,
        *,
        clock: Clock = REAL_CLOCK,
        bucket: TokenBucket | None = None,
    ) -> None:
        self.bucket = bucket if bucket is not None else TokenBucket(qps, burst, clock=clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters; every limiter sees every call.

    ``forget`` and ``num_requeues`` run once per reconcile, so they skip the limiters that
    track no items (``TRACKS_ITEMS = False``: forgetting is a no-op, the count always 0); when
    one limiter is left (the controller default: the per-item backoff), they are its own bound
    methods, with no frame of this class's in between.
    """

    forget: Callable[[Hashable], None]
    num_requeues: Callable[[Hashable], int]
    requeues: Mapping[Hashable, int] | None
    """When one limiter counts items and it exposes its counts (``requeues``, item → tries
    since forgotten; the per-item limiters do), that mapping, read-only: ``num_requeues(item)``
    is ``requeues.get(item, 0)`` and ``forget`` does nothing while it is empty. A reconcile
    reads it instead of two calls (pycm.controller.worker). Else None."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters
        self._per_item = tuple(lim for lim in limiters if getattr(lim, "TRACKS_ITEMS", True))
        self.requeues = None
        if len(self._per_item) == 1:
            self.forget = self._per_item[0].forget
            self.num_requeues = self._per_item[0].num_requeues
            self.requeues = getattr(self._per_item[0], "requeues", None)
        else:
            self.forget = self._forget_each
            self.num_requeues = self._most_requeues

    def when(self, item: Hashable) -> float:
        # Every limiter must record the try, so no short-circuiting max over a generator.
        delays = [limiter.when(item) for limiter in self.limiters]
        return max(delays)

    def _forget_each(self, item: Hashable) -> None:
        for limiter in self._per_item:
            limiter.forget(item)

    def _most_requeues(self, item: Hashable) -> int:
        # A loop, not max() over a generator: the generator's frame costs several times the
        # calls it makes.
        most = 0
        for limiter in self._per_item:
            n = limiter.num_requeues(item)
            if n > most:
                most = n
        return most


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> MaxOfRateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-item 5 ms × 2^n up to 1000 s, and
    overall 10 qps with a burst of 100 (the bucket only bites on large bursts of failures)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
