"""The stuck-worker watcher: names the key a worker has held longer than a threshold.

``workqueue_unfinished_work_seconds`` grows when a worker hangs in a sync, but it names no key.
This watcher looks at every controller queue's processing set (when each key was taken, and
by which task: :mod:`pycm.workqueue.inspect`) once per tick and, when one key has been held for
``threshold`` seconds (``--stuck-worker-threshold``, default 60 s), emits ``queue.stuck``
(:class:`~pycm.trace.kinds.WorkerStuck`: controller, key, worker, how long) and logs a warning,
**once per processing of the key** (a key taken again is a new processing). When the key is no
longer held by that processing, it emits ``queue.unstuck`` with the time held (at least). The
incident timeline and the queue drill-downs show both.

Ticks are ``threshold / 4`` apart (between 50 ms and 1 s), so a mark comes at most that late.
It reads only what the queues keep anyway: it costs a reconcile nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pycm.trace.bus import Bus
from pycm.trace.kinds import WorkerStuck, WorkerUnstuck
from pycm.util.clock import REAL_CLOCK, Clock
from pycm.workqueue.inspect import worker_index

__all__ = ["DEFAULT_STUCK_WORKER_THRESHOLD", "StuckQueue", "StuckWorkerWatcher"]

log = logging.getLogger(__name__)

DEFAULT_STUCK_WORKER_THRESHOLD = 60.0
_MIN_TICK, _MAX_TICK = 0.05, 1.0


class StuckQueue(Protocol):
    """The subset of a work queue the watcher reads."""

    def processing_items(self) -> Mapping[Any, int]: ...

    def takers(self) -> Mapping[Any, asyncio.Task[Any] | None]: ...


class _Mark:
    __slots__ = ("held_ns", "since_ns", "worker")

    def __init__(self, since_ns: int, worker: int, held_ns: int) -> None:
        self.since_ns = since_ns
        self.worker = worker
        self.held_ns = held_ns


class StuckWorkerWatcher:
    """Marks keys held longer than ``threshold`` seconds; ``queues()`` gives the controllers'
    queues by name (read at each tick, so controllers added later are watched too)."""

    def __init__(
        self,
        queues: Callable[[], Mapping[str, StuckQueue]],
        threshold: float = DEFAULT_STUCK_WORKER_THRESHOLD,
        *,
        bus: Bus,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if threshold <= 0:
            raise ValueError("the stuck-worker threshold must be positive")
        self._queues = queues
        self.threshold = threshold
        self._threshold_ns = round(threshold * 1e9)
        self.interval = min(_MAX_TICK, max(_MIN_TICK, threshold / 4))
        self._bus = bus
        self._clock = clock
        # (controller, key) -> the mark of the processing that was reported stuck. Bounded by
        # the keys being processed (a mark goes when its processing ends).
        self._marks: dict[tuple[str, str], _Mark] = {}

    async def run(self) -> None:
        """Tick until cancelled."""
        while True:
            await self._clock.sleep(self.interval)
            self.check()

    def check(self) -> None:
        """One tick: mark keys over the threshold, unmark those let go."""
        now = self._clock.monotonic_ns()
        marks = self._marks
        seen: set[tuple[str, str]] = set()
        for controller, queue in list(self._queues().items()):
            processing = queue.processing_items()
            if not processing:
                continue
            takers = queue.takers()
            for item, since in list(processing.items()):
                held = now - since
                if held < self._threshold_ns:
                    continue
                key = item if type(item) is str else str(item)
                ident = (controller, key)
                mark = marks.get(ident)
                if mark is not None and mark.since_ns == since:
                    mark.held_ns = held
                    seen.add(ident)
                    continue
                if mark is not None:  # a new processing of the key: the old one ended
                    self._unmark(ident, mark)
                mark = marks[ident] = _Mark(since, worker_index(takers.get(item)), held)
                seen.add(ident)
                log.warning(
                    "%s: worker %s has been processing %s for %.0fs "
                    "(over --stuck-worker-threshold %gs)",
                    controller,
                    mark.worker if mark.worker >= 0 else "?",
                    key,
                    held / 1e9,
                    self.threshold,
                )
                self._bus.point(
                    WorkerStuck(
                        controller=controller,
                        key=key,
                        worker=mark.worker,
                        processing_s=held / 1e9,
                        threshold_s=self.threshold,
                    )
                )
        for ident in [i for i in marks if i not in seen]:
            self._unmark(ident, marks.pop(ident))

    def _unmark(self, ident: tuple[str, str], mark: _Mark) -> None:
        controller, key = ident
        log.info(
            "%s: worker %s let %s go after at least %.0fs",
            controller,
            mark.worker if mark.worker >= 0 else "?",
            key,
            mark.held_ns / 1e9,
        )
        self._bus.point(
            WorkerUnstuck(
                controller=controller, key=key, worker=mark.worker, processing_s=mark.held_ns / 1e9
            )
        )
