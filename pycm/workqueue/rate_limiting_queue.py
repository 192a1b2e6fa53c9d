"""The rate-limiting queue (client-go rate_limiting_queue.go): a delaying queue and a limiter.

``add_rate_limited(item)`` is ``add_after(item, limiter.when(item))``; ``forget`` tells the
limiter the item succeeded; ``num_requeues`` is the limiter's count. :meth:`drop` is pycm's own:
the controller machinery calls it when it gives up on a key (max retries, terminal error) — it
forgets the item and emits ``queue.drop`` with the retries the key had.
"""

from __future__ import annotations

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
        self.rate_limiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )

    def _retries(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` once the rate limiter says it may be retried."""
        if self._shutting_down:
            return
        self.add_after(item, self.rate_limiter.when(item), "rate_limited")

    def forget(self, item: T) -> None:
        """Stop counting the item's retries (it succeeded); it does not leave the queue."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    def drop(self, item: T, reason: str = "") -> None:
        """Give up on ``item``: forget it and emit ``queue.drop`` with the retries it had."""
        retries = self.rate_limiter.num_requeues(item)
        self.rate_limiter.forget(item)
        self._point(ItemDropped(queue=self.name, key=_key(item), retries=retries, reason=reason))
