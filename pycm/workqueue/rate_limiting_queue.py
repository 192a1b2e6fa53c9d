"""The rate-limiting queue (client-go rate_limiting_queue.go): a delaying queue and a limiter.

``add_rate_limited(item)`` is ``add_after(item, limiter.when(item))``; ``forget`` tells the
limiter the item succeeded; ``num_requeues`` is the limiter's count. :meth:`drop` is pycm's own:
the controller machinery calls it when it gives up on a key (max retries, terminal error) — it
forgets the item and emits ``queue.drop`` with the retries the key had.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemDropped
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.workqueue.delaying_queue import DelayingQueue
from pycm.workqueue.metrics import QueueMetrics
from pycm.workqueue.queue import T, _key
from pycm.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue[T]):
    """A :class:`~pycm.workqueue.delaying_queue.DelayingQueue` whose retries a
    :class:`~pycm.workqueue.rate_limiters.RateLimiter` spaces out (default: the controller
    default, on this queue's clock)."""

    # Every reconcile asks for its key's retries and (when it succeeds) forgets the key, so
    # these two are the limiter's own bound methods, set in __init__, not methods delegating
    # to it: a Python frame less each (for the default limiter, two: see MaxOfRateLimiter).
    forget: Callable[[T], None]
    """Stop counting the item's retries (it succeeded); it does not leave the queue."""
    num_requeues: Callable[[T], int]
    """How many times the item was rate-limited since it was last forgotten."""
    requeues: Mapping[T, int] | None
    """The limiter's counts when it exposes them (the default and the per-item limiters do),
    read-only: ``num_requeues(item) == requeues.get(item, 0)``, and ``forget`` does nothing
    while it is empty. The worker reads it where it would call both per reconcile. Else None."""

    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        super().__init__(name, clock=clock, bus=bus, metrics=metrics)
        limiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )
        self.rate_limiter: Final = limiter
        self.forget = limiter.forget
        self.num_requeues = limiter.num_requeues
        self.requeues = getattr(limiter, "requeues", None)

    def _retries(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` once the rate limiter says it may be retried."""
        if self._shutting_down:
            return
        self.add_after(item, self.rate_limiter.when(item), "rate_limited")

    def drop(self, item: T, reason: str = "") -> None:
        """Give up on ``item``: forget it and emit ``queue.drop`` with the retries it had."""
        retries = self.rate_limiter.num_requeues(item)
        self.rate_limiter.forget(item)
        self._point(ItemDropped(queue=self.name, key=_key(item), retries=retries, reason=reason))
