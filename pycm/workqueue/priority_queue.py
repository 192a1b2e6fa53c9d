"""The priority queue (controller-runtime ≥ 0.20 ``pkg/controller/priorityqueue``): a
rate-limiting queue whose waiting items are handed out highest priority first.

Why: a controller that starts (or takes over after a failover) gets one add for every object of
its informers' initial lists, and every resync gets one more; with a FIFO queue a change made
just then waits behind all of them. controller-runtime's handlers give those events
:data:`LOW_PRIORITY` (``WithLowPriorityWhenUnchanged``: an add from the initial list, an update
whose resourceVersion did not change), so the keys that just changed are reconciled first. Which
events are low is the controller's business (pycm.controller.worker); this module orders.

The contract is the rate-limiting queue's (dirty and processing sets, one worker per item, a
re-add while processing queues it again at ``done``, delayed and rate-limited adds, shutdown
with drain), with a priority on every add:

- ready items leave highest priority first, then in the order they became ready (an add, or
  the end of a delay); an item's place in line is kept when it is promoted;
- an item added again while it waits keeps the higher of the two priorities (it moves up,
  never down) — controller-runtime's "max of the passed priorities";
- a delayed add (``add_after``, ``add_rate_limited``) waits as in the delaying queue (the
  earliest time wins) and carries the highest priority it was scheduled with into the queue;
- ``priority=None`` means the priority the item was taken with while a worker holds it (a
  requeue, a retry after a failure, keeps its priority, as controller-runtime's controller
  does since 0.20.4), else :data:`DEFAULT_PRIORITY`.

Unlike controller-runtime's queue, a delayed item and the same item added meanwhile are two
entries, as in client-go's delaying queue: the delayed add comes later and queues it again
unless it is still waiting (pycm's delaying contract, unchanged here).

Depth by priority is ``workqueue_depth{priority=...}`` (pycm.workqueue.metrics) and
``GET /debug/pycm/queues`` lists each waiting key's priority (pycm.workqueue.inspect).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from typing import Final, Generic

from pycm.trace.bus import Bus
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.workqueue.metrics import PriorityQueueRecorder, QueueMetrics, QueueRecorder
from pycm.workqueue.queue import T
from pycm.workqueue.rate_limiters import RateLimiter
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = ["DEFAULT_PRIORITY", "LOW_PRIORITY", "PriorityQueue"]

DEFAULT_PRIORITY: Final = 0
# controller-runtime's handler.LowPriority: initial-list adds and resyncs.
LOW_PRIORITY: Final = -100


class _Ready(Generic[T]):
    """The items a worker may take now, in hand-out order: highest priority first, then by
    when they became ready. Queue's deque-like face (append, popleft, len) over a heap.

    ``priorities`` is the queue's own map (item → priority), read at :meth:`append`. A promoted
    item gets a new heap entry and the old one is left behind, dead; an entry is alive iff it
    is its item's entry in ``_entries``. Dead entries are dropped as they surface, and the heap
    is rebuilt when they outnumber the live ones.
    """

    __slots__ = ("_entries", "_heap", "_priorities", "_seq")

    def __init__(self, priorities: Mapping[T, int]) -> None:
        self._priorities = priorities
        # (-priority, seq, item): the smallest is handed out first; seq is unique, so items are
        # never compared.
        self._heap: list[tuple[int, int, T]] = []
        self._entries: dict[T, tuple[int, int, T]] = {}
        self._seq = itertools.count()

    def append(self, item: T, /) -> None:
        entry = (-self._priorities[item], next(self._seq), item)
        self._entries[item] = entry
        heapq.heappush(self._heap, entry)

    def popleft(self) -> T:
        heap, entries = self._heap, self._entries
        while True:
            entry = heapq.heappop(heap)
            item = entry[2]
            if entries.get(item) is entry:
                del entries[item]
                return item

    def promote(self, item: T, priority: int) -> None:
        """Move a ready ``item`` up to ``priority``, keeping its place among that priority's
        items (its seq); nothing when it is not ready (a worker holds it)."""
        entry = self._entries.get(item)
        if entry is None:
            return
        promoted = (-priority, entry[1], item)
        self._entries[item] = promoted
        heapq.heappush(self._heap, promoted)
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def ordered(self) -> list[T]:
        """The ready items in hand-out order (a new list: O(n log n), for the inspector)."""
        return [entry[2] for entry in sorted(self._entries.values())]

    def __len__(self) -> int:
        return len(self._entries)


class PriorityQueue(RateLimitingQueue[T]):
    """A :class:`~pycm.workqueue.rate_limiting_queue.RateLimitingQueue` that hands out the
    highest priority first; see the module docstring for the contract."""

    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        # Set before the base binds its metrics: the recorder reads _depths.
        # Dirty items → their priority. Keys as _dirty's: an item is here iff it is dirty.
        self._priorities: dict[T, int] = {}
        # Priority → dirty items with it (never 0: a count that drops to 0 is deleted). What
        # workqueue_depth{priority} shows; sums to len(_dirty).
        self._depths: dict[int, int] = {}
        # Items being processed → the priority they were taken with. Keys as _processing's.
        self._taken: dict[T, int] = {}
        # Items waiting in the delaying heap → the highest priority they were scheduled with.
        # Keys as _known's.
        self._delayed: dict[T, int] = {}
        self._recorder: PriorityQueueRecorder | None = None
        super().__init__(name, rate_limiter=rate_limiter, clock=clock, bus=bus, metrics=metrics)
        self._ready: _Ready[T] = _Ready(self._priorities)
        self._queue = self._ready

    def _bind_metrics(self, metrics: QueueMetrics) -> QueueRecorder:
        self._recorder = metrics.bind_prioritized(
            self.name, self._processing, self.clock, self._depths
        )
        # The default priority's series from the start: an idle queue shows depth 0, as a
        # plain queue's series does, rather than no series at all.
        self._recorder.priority_seen(DEFAULT_PRIORITY)
        return self._recorder

    def _resolve(self, item: T, priority: int | None) -> int:
        if priority is not None:
            return priority
        return self._taken.get(item, DEFAULT_PRIORITY)

    # -- adding ------------------------------------------------------------------------------

    def add(self, item: T, reason: str = "", priority: int | None = None) -> None:
        """Mark ``item`` as needing processing with ``priority`` (see the module docstring for
        None); an item that waits already moves up to it when it is higher."""
        if self._shutting_down:
            return
        new = self._resolve(item, priority)
        priorities, depths = self._priorities, self._depths
        current = priorities.get(item)
        if current is None:
            priorities[item] = new
            depths[new] = depths.get(new, 0) + 1
            if self._recorder is not None:
                self._recorder.priority_seen(new)
        elif new > current:
            priorities[item] = new
            self._count_out(current)
            depths[new] = depths.get(new, 0) + 1
            if self._recorder is not None:
                self._recorder.priority_seen(new)
            self._ready.promote(item, new)
        super().add(item, reason)

    def add_after(
        self, item: T, delay: float, reason: str = "after", priority: int | None = None
    ) -> None:
        """Add ``item`` with ``priority`` after ``delay`` seconds (now, if ``delay <= 0``);
        the earliest time and the highest priority win."""
        if self._shutting_down:
            return
        new = self._resolve(item, priority)
        self._count_retry(item, delay)
        if delay <= 0:
            self.add(item, reason, new)
            return
        scheduled = self._delayed.get(item)
        if scheduled is None or new > scheduled:
            self._delayed[item] = new
        self._schedule(item, delay, reason)

    def add_rate_limited(self, item: T, priority: int | None = None) -> None:
        """Add ``item`` with ``priority`` once the rate limiter says it may be retried."""
        if self._shutting_down:
            return
        self.add_after(item, self.rate_limiter.when(item), "rate_limited", priority)

    def _add_due(self, item: T, reason: str) -> None:
        self.add(item, reason, self._delayed.pop(item, DEFAULT_PRIORITY))

    def _count_out(self, priority: int) -> None:
        depths = self._depths
        left = depths[priority] - 1
        if left:
            depths[priority] = left
        else:
            del depths[priority]

    # -- taking ------------------------------------------------------------------------------

    async def get(self) -> T:
        item = await super().get()
        priority = self._priorities.pop(item)
        self._count_out(priority)
        self._taken[item] = priority
        return item

    async def get_with_priority(self) -> tuple[T, int]:
        """The next item and the priority it waited with (controller-runtime's
        ``GetWithPriority``); the caller must call :meth:`done` with it."""
        item = await self.get()
        return item, self._taken[item]

    def done(self, item: T) -> None:
        self._taken.pop(item, None)
        super().done(item)

    # -- inspecting --------------------------------------------------------------------------

    def priorities(self) -> Mapping[T, int]:
        """Dirty items → the priority they wait with (read-only, live)."""
        return self._priorities

    def delayed_priorities(self) -> Mapping[T, int]:
        """Items waiting for their ready time → the priority they will be added with."""
        return self._delayed

    def depth_by_priority(self) -> Mapping[int, int]:
        """Priority → dirty items waiting with it (workqueue_depth's series; read-only)."""
        return self._depths

    def ready_in_order(self) -> list[T]:
        """The items a worker may take now, in the order they would be handed out."""
        return self._ready.ordered()

    # -- stopping ----------------------------------------------------------------------------

    def _stop_waiting(self) -> None:
        super()._stop_waiting()
        self._delayed.clear()
