"""The delaying queue (client-go delaying_queue.go): a work queue that can add an item later.

``add_after(item, delay)`` adds at once when ``delay <= 0``; otherwise the item waits in a heap
keyed by its ready time, and adding a waiting item again keeps the earlier of the two times. One
task — the waiting loop — sleeps on the injected clock until the earliest ready time and then
adds whatever is due. Start and stop it with ``async with queue:`` (or :meth:`start` and
:meth:`aclose`); items given to ``add_after`` before the loop starts wait for it. Shutting down
drops the items still waiting, as client-go does.

Every ``add_after`` counts in ``workqueue_retries_total`` and emits ``queue.retry`` (even with
no delay, as client-go counts it); the eventual add emits ``queue.add`` with the given reason.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from types import TracebackType
from typing import Generic, Self

from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemRequeued
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.tasks import cancel_and_wait, create_guarded_task
from pycm.workqueue.metrics import QueueMetrics
from pycm.workqueue.queue import Queue, T, _key

__all__ = ["DelayingQueue"]


class _Waiting(Generic[T]):
    """One item waiting in the heap; ``alive`` turns False when an earlier time replaces it."""

    __slots__ = ("alive", "item", "ready_ns", "reason", "seq")

    def __init__(self, ready_ns: int, seq: int, item: T, reason: str) -> None:
        self.ready_ns = ready_ns
        self.seq = seq
        self.item = item
        self.reason = reason
        self.alive = True

    def __lt__(self, other: _Waiting[T]) -> bool:
        # Ready time first; equal times keep the order of add_after calls.
        return (self.ready_ns, self.seq) < (other.ready_ns, other.seq)


class DelayingQueue(Queue[T]):
    """A :class:`~pycm.workqueue.queue.Queue` with :meth:`add_after`."""

    def __init__(
        self,
        name: str,
        *,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        super().__init__(name, clock=clock, bus=bus, metrics=metrics)
        # Heap of waiting entries, earliest first; may hold dead entries (alive False).
        self._heap: list[_Waiting[T]] = []
        # Each waiting item → its one live heap entry. An item is here iff it has a live entry.
        self._known: dict[T, _Waiting[T]] = {}
        self._seq = itertools.count()
        self._loop_task: asyncio.Task[None] | None = None
        # Set while the loop is parked: resolved to make it look at the heap again. The loop
        # sleeps until _target_ns (None: no deadline); only an earlier entry needs a wake-up.
        self._wake: asyncio.Future[None] | None = None
        self._target_ns: int | None = None

    def waiting(self) -> int:
        """Items waiting for their ready time (not yet in the queue)."""
        return len(self._known)

    def delayed_items(self) -> dict[T, int]:
        """Items waiting for their ready time → that time (monotonic ns), read from the heap's
        live entries (a new dict: O(waiting), for the inspector)."""
        return {item: entry.ready_ns for item, entry in self._known.items()}

    def _retries(self, item: T) -> int:
        """The retry count reported on ``queue.retry`` (the rate-limiting queue knows it)."""
        return 0

    def add_after(self, item: T, delay: float, reason: str = "after") -> None:
        """Add ``item`` after ``delay`` seconds (now, if ``delay <= 0``); the earliest time wins."""
        if self._shutting_down:
            return
        self._count_retry(item, delay)
        if delay <= 0:
            self.add(item, reason)
            return
        self._schedule(item, delay, reason)

    def _count_retry(self, item: T, delay: float) -> None:
        """``workqueue_retries_total`` and ``queue.retry`` for one ``add_after``."""
        if self._metrics is not None:
            self._metrics.retried()
        self._point(
            ItemRequeued(
                queue=self.name,
                key=_key(item),
                delay_ms=delay * 1e3 if delay > 0 else 0.0,
                retries=self._retries(item),
            )
        )

    def _schedule(self, item: T, delay: float, reason: str) -> None:
        """Put ``item`` in the heap ``delay`` (> 0) seconds from now, unless it waits there for
        an earlier time already; wake the loop when this is its new earliest time."""
        ready_ns = self._now_ns() + round(delay * 1e9)
        known = self._known.get(item)
        if known is not None:
            if known.ready_ns <= ready_ns:
                return
            known.alive = False
        entry = _Waiting(ready_ns, next(self._seq), item, reason)
        self._known[item] = entry
        heapq.heappush(self._heap, entry)
        wake = self._wake
        if wake is not None and (self._target_ns is None or ready_ns < self._target_ns):
            self._wake = None
            if not wake.done():
                wake.set_result(None)

    def _add_due(self, item: T, reason: str) -> None:
        """Add an item whose delay ended (the waiting loop's add; the priority queue gives it
        the priority it was scheduled with)."""
        self.add(item, reason)

    # -- the waiting loop --------------------------------------------------------------------

    def start(self) -> None:
        """Start the waiting loop (a named, guarded task); a no-op if it runs or has stopped."""
        if self._loop_task is not None or self._shutting_down:
            return
        self._loop_task = create_guarded_task(
            self._wait_loop(), name=f"workqueue:{self.name}:delaying"
        )

    @property
    def started(self) -> bool:
        return self._loop_task is not None

    async def _wait_loop(self) -> None:
        loop = asyncio.get_running_loop()
        heap = self._heap
        while True:
            now_ns = self._now_ns()
            while heap and (not heap[0].alive or heap[0].ready_ns <= now_ns):
                entry = heapq.heappop(heap)
                if entry.alive:
                    del self._known[entry.item]
                    self._add_due(entry.item, entry.reason)
            wake: asyncio.Future[None] = loop.create_future()
            self._wake = wake
            if not heap:
                self._target_ns = None
                try:
                    await wake
                finally:
                    self._wake = None
                continue
            self._target_ns = target = heap[0].ready_ns
            timer = loop.create_task(
                self.clock.sleep((target - now_ns) / 1e9), name=f"workqueue:{self.name}:timer"
            )
            try:
                await asyncio.wait((timer, wake), return_when=asyncio.FIRST_COMPLETED)
            finally:
                self._wake = None
                if not timer.done():
                    timer.cancel()
                    await asyncio.wait((timer,))

    # -- stopping ----------------------------------------------------------------------------

    def shut_down(self) -> None:
        """Shut down the queue, drop waiting items and cancel the loop (await :meth:`aclose`
        to see it stopped)."""
        super().shut_down()
        self._stop_waiting()

    async def shut_down_with_drain(self) -> None:
        self._stop_waiting()
        await super().shut_down_with_drain()
        await self._join_loop()

    def _stop_waiting(self) -> None:
        self._heap.clear()
        self._known.clear()
        if self._loop_task is not None:
            self._loop_task.cancel()

    async def _join_loop(self) -> None:
        if self._loop_task is not None:
            await cancel_and_wait([self._loop_task])

    async def aclose(self) -> None:
        """Shut down and wait until the waiting loop has stopped."""
        self.shut_down()
        await self._join_loop()

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
