"""The work queue (client-go queue.go): de-duplicating, FIFO, one worker per item at a time.

An item (usually a "namespace/name" key) is *dirty* from the moment it is added until a worker
takes it; adding a dirty item again is a no-op. A taken item is *processing* until the worker
calls :meth:`Queue.done`; adding it meanwhile only marks it dirty, and ``done`` puts it back in
line — so an item is never handed to two workers at once, and a change that arrives during a
sync is never lost.

``get()`` returns the item, or raises :class:`ShutDown` once the queue is shutting down and has
nothing left to hand out (client-go returns ``(item, shutdown)``; an exception keeps the item's
type exact). As in client-go, items already queued are still handed out after :meth:`shut_down`;
only new adds are refused. Parked getters are woken fairly: each new item wakes the getter that
has waited longest, and that item is reserved for it; shutting down wakes them all.

Every add, get and done is a trace event (``queue.add``, ``queue.get``, ``queue.done``) emitted
with :meth:`~pycm.trace.bus.Bus.point`, so it nests under the step that caused it; the first
shutdown emits ``queue.shutdown``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import ItemAdded, ItemDone, ItemTaken, QueueShutDown
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.workqueue.metrics import QueueMetrics, QueueRecorder

__all__ = ["Queue", "ShutDown"]

T = TypeVar("T", bound=Hashable)

# Bound once: get() records which task took an item (the inspector's "by which worker").
_current_task = asyncio.current_task


class _Line(Protocol[T]):
    """The order in which waiting items are handed out: a FIFO deque here; the priority queue
    (pycm.workqueue.priority_queue) puts its own priority order behind the same three calls."""

    def append(self, item: T, /) -> None: ...

    def popleft(self) -> T: ...

    def __len__(self) -> int: ...


class ShutDown(Exception):
    """``get()`` on a queue that is shutting down and has nothing left to hand out."""


def _key(item: Hashable) -> str:
    return item if type(item) is str else str(item)


class Queue(Generic[T]):
    """A de-duplicating FIFO work queue; see the module docstring for the contract."""

    def __init__(
        self,
        name: str,
        *,
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self.name = name
        self.clock = clock
        self._bus = bus if bus is not None else default_bus()
        self._point = self._bus.point
        self._now_ns = clock.monotonic_ns
        # Items waiting for a worker, oldest first. An item is in _queue only if it is in _dirty
        # and not in _processing, and at most once.
        self._queue: _Line[T] = deque()
        # Items that need processing → monotonic ns of the add that made them dirty. A dirty
        # item not in _processing is in _queue; a dirty item in _processing goes back into
        # _queue when done() is called. Adding a dirty item again changes nothing.
        self._dirty: dict[T, int] = {}
        # Items handed to a worker and not yet done → monotonic ns when taken. Never in _queue,
        # so never handed to a second worker.
        self._processing: dict[T, int] = {}
        # Items being processed → ns they waited between the add and the get (reconcile.begin's
        # queue_wait_ms); kept with _processing, so a worker reads its own item's wait.
        self._waited: dict[T, int] = {}
        # The same, read-only, for the worker's reconcile: a dict lookup, where wait_ns is a
        # method call (a reconcile reads it for every key).
        self.waits: Mapping[T, int] = self._waited
        # Items being processed → the task that took them (kept with _processing): which
        # worker holds a key, for the inspector (pycm.workqueue.inspect). One dict store a get.
        self._takers: dict[T, asyncio.Task[Any] | None] = {}
        # Parked getters, longest-waiting first. A future's result True means "an item in
        # _queue is reserved for you"; False means "shutting down: look again".
        self._waiters: deque[asyncio.Future[bool]] = deque()
        # Items in _queue promised to woken getters that have not run yet: 0 <= _reserved <=
        # len(_queue). A getter that arrives takes an item at once only if len(_queue) exceeds
        # it, so it cannot overtake a getter that was already waiting.
        self._reserved = 0
        self._shutting_down = False
        self._shutdown_emitted = False
        # Resolved when processing becomes empty (or shut_down() ends a drain early).
        self._drained: asyncio.Future[None] | None = None
        self._metrics: QueueRecorder | None = (
            self._bind_metrics(metrics) if metrics is not None else None
        )

    def _bind_metrics(self, metrics: QueueMetrics) -> QueueRecorder:
        """This queue's recorder (the priority queue binds one that counts depth by priority)."""
        return metrics.bind(self.name, self._processing, self.clock)

    # -- adding ------------------------------------------------------------------------------

    def add(self, item: T, reason: str = "") -> None:
        """Mark ``item`` as needing processing; ignored once the queue is shutting down."""
        if self._shutting_down:
            return
        dirty = self._dirty
        if item in dirty:
            self._point(
                ItemAdded(
                    queue=self.name,
                    key=_key(item),
                    reason=reason,
                    queued=False,
                    depth=len(self._queue),
                )
            )
            return
        dirty[item] = self._now_ns()
        if self._metrics is not None:
            self._metrics.added(len(dirty))
        if item not in self._processing:
            self._queue.append(item)
            self._wake_one()
        self._point(
            ItemAdded(
                queue=self.name, key=_key(item), reason=reason, queued=True, depth=len(self._queue)
            )
        )

    def _wake_one(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                self._reserved += 1
                waiter.set_result(True)
                return

    # -- taking ------------------------------------------------------------------------------

    async def get(self) -> T:
        """The next item, once one is available; the caller must call :meth:`done` with it.

        Raises :class:`ShutDown` when the queue is shutting down and no item is left for this
        caller. A caller cancelled while waiting takes nothing (a reserved item passes to the
        next waiter).
        """
        if len(self._queue) <= self._reserved:
            await self._wait_for_item()
        item = self._queue.popleft()
        now = self._now_ns()
        waited_ns = now - self._dirty.pop(item)
        self._processing[item] = now
        self._waited[item] = waited_ns
        self._takers[item] = _current_task()
        if self._metrics is not None:
            self._metrics.taken(waited_ns / 1e9, len(self._dirty))
        self._point(
            ItemTaken(
                queue=self.name, key=_key(item), wait_ms=waited_ns / 1e6, depth=len(self._queue)
            )
        )
        return item

    def wait_ns(self, item: T) -> int:
        """How long ``item``, being processed, waited between being added and taken (0 when
        it is not being processed)."""
        return self._waited.get(item, 0)

    async def _wait_for_item(self) -> None:
        """Park until an item in ``_queue`` is this caller's to take, or raise ShutDown."""
        loop = asyncio.get_running_loop()
        while True:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter: asyncio.Future[bool] = loop.create_future()
            self._waiters.append(waiter)
            try:
                reserved = await waiter
            except asyncio.CancelledError:
                if not waiter.done() or waiter.cancelled():
                    try:
                        self._waiters.remove(waiter)
                    except ValueError:
                        pass
                elif waiter.result():
                    # Woken for an item, then cancelled before taking it: hand it on.
                    self._reserved -= 1
                    self._wake_one()
                raise
            if reserved:
                self._reserved -= 1
                return
            if len(self._queue) > self._reserved:
                return  # woken by shutdown, but an item is still free: take it

    def done(self, item: T) -> None:
        """End the processing of ``item``; if it was re-added meanwhile, queue it again.

        Calling it for an item that is not being processed does nothing (client-go would queue a
        duplicate of a waiting item).
        """
        started = self._processing.pop(item, None)
        if started is None:
            return
        del self._waited[item]
        del self._takers[item]
        worked_ns = self._now_ns() - started
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing and self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._metrics is not None:
            self._metrics.done(worked_ns / 1e9)
        self._point(
            ItemDone(
                queue=self.name, key=_key(item), work_ms=worked_ns / 1e6, depth=len(self._queue)
            )
        )

    # -- inspecting --------------------------------------------------------------------------

    def len(self) -> int:
        """Items waiting for a worker now (not counting dirty items still being processed)."""
        return len(self._queue)

    def __len__(self) -> int:
        return len(self._queue)

    def processing(self) -> int:
        """Items handed to workers and not yet done."""
        return len(self._processing)

    def shutting_down(self) -> bool:
        return self._shutting_down

    # Read-only views for the inspector (pycm.workqueue.inspect): the live structures
    # themselves, never copied here; callers must not change them.

    def dirty_items(self) -> Mapping[T, int]:
        """Items added and not yet taken → monotonic ns of the add that made them dirty
        (an item being processed and added again is here too: it will be processed again)."""
        return self._dirty

    def processing_items(self) -> Mapping[T, int]:
        """Items handed to workers and not yet done → monotonic ns when taken."""
        return self._processing

    def takers(self) -> Mapping[T, asyncio.Task[Any] | None]:
        """Items being processed → the task that took them (None: taken outside a task)."""
        return self._takers

    # -- stopping ----------------------------------------------------------------------------

    def shut_down(self) -> None:
        """Refuse new adds and wake every parked getter; getters then drain what is queued and
        get :class:`ShutDown`. Ends a :meth:`shut_down_with_drain` that is still waiting."""
        self._begin_shutdown()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._emit_shutdown(drained=False, dur_ns=0)

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item being processed is done.

        Items still queued are not waited for (as in client-go). :meth:`shut_down` called
        meanwhile ends the wait early.
        """
        started = self._now_ns()
        self._begin_shutdown()
        if self._processing:
            if self._drained is None or self._drained.done():
                self._drained = asyncio.get_running_loop().create_future()
            # Shielded: one cancelled drainer must not end the wait of another.
            await asyncio.shield(self._drained)
        self._emit_shutdown(drained=True, dur_ns=self._now_ns() - started)

    def _begin_shutdown(self) -> None:
        self._shutting_down = True
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(False)

    def _emit_shutdown(self, *, drained: bool, dur_ns: int) -> None:
        if self._shutdown_emitted:
            return
        self._shutdown_emitted = True
        self._point(QueueShutDown(queue=self.name, drained=drained), dur_ns=dur_ns)
