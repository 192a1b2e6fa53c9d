"""What a queue holds right now: the keys waiting, backing off and being processed.

:func:`inspect_queue` reads a live queue through :class:`InspectableQueue`, the read-only subset
of a rate-limiting queue it needs (the dirty set with its add times, the delaying heap's ready
times, the processing set with its start times and the tasks that took them, the limiter's
counts), and returns a :class:`QueueContents`: plain values, times relative to the queue's
clock. It never changes the queue and costs the queue nothing until it is called (the one
hot-path addition is the taker's task, stored by ``get()``); a call is O(keys held).

A priority queue (pycm.workqueue.priority_queue; :class:`PrioritizedQueue`, the optional part
the inspector reads) also shows each waiting and backing-off key's priority and the depth by
priority, and lists its waiting keys highest priority first (then oldest); a plain queue's
contents have no priority fields at all.

Used by ``GET /debug/pycm/queues`` (pycm.server.debug_queues) and the stuck-worker watcher
(pycm.controller.stuck).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from pycm.util.clock import Clock

__all__ = [
    "DEFAULT_LIMIT",
    "BackingOffKey",
    "InspectableQueue",
    "PrioritizedQueue",
    "ProcessingKey",
    "QueueContents",
    "WaitingKey",
    "inspect_queue",
    "worker_index",
]

DEFAULT_LIMIT = 100  # keys listed per section; the counts are always exact

# pycm.controller.worker names its tasks "<name>: worker <i>".
_WORKER = re.compile(r"worker (\d+)$")


class InspectableQueue(Protocol):
    """The read-only subset of :class:`~pycm.workqueue.rate_limiting_queue.RateLimitingQueue`
    that the inspector uses."""

    name: str
    clock: Clock

    def __len__(self) -> int: ...

    def dirty_items(self) -> Mapping[Any, int]: ...

    def processing_items(self) -> Mapping[Any, int]: ...

    def takers(self) -> Mapping[Any, asyncio.Task[Any] | None]: ...

    def delayed_items(self) -> Mapping[Any, int]: ...

    def num_requeues(self, item: Any) -> int: ...


class PrioritizedQueue(Protocol):
    """What a priority queue adds to :class:`InspectableQueue`."""

    def priorities(self) -> Mapping[Any, int]: ...

    def delayed_priorities(self) -> Mapping[Any, int]: ...

    def depth_by_priority(self) -> Mapping[int, int]: ...


@dataclass(frozen=True, slots=True)
class WaitingKey:
    """A key added and not yet taken by a worker."""

    key: str
    age_s: float  # since the add that made it wait
    priority: int | None = None  # the priority it waits with (None: not a priority queue)


@dataclass(frozen=True, slots=True)
class BackingOffKey:
    """A key scheduled to come back later (rate limited after a failure, or requeue_after)."""

    key: str
    retries: int  # the limiter's count (0: requeue_after, no failure)
    next_retry_in_s: float  # until it is added again (<= 0: due now)
    next_retry_at_ns: int  # that time on the wall clock (Unix ns)
    last_error: str = ""  # its last failure, when known
    priority: int | None = None  # the priority it comes back with (None: not a priority queue)


@dataclass(frozen=True, slots=True)
class ProcessingKey:
    """A key a worker holds."""

    key: str
    for_s: float  # since the worker took it
    worker: int  # the worker's index (-1: not one of a controller's workers)
    task: str  # the name of the task that took it


@dataclass(slots=True)
class QueueContents:
    """One queue's contents at one moment: counts exact, lists at most ``limit`` long
    (waiting oldest first, backing off soonest due first, processing longest first)."""

    queue: str
    depth: int  # keys waiting for a worker now (the queue's length; workqueue_depth)
    waiting_count: int  # keys added and not yet taken (depth + those processed and re-added)
    backing_off_count: int
    processing_count: int
    waiting: list[WaitingKey] = field(default_factory=list)
    backing_off: list[BackingOffKey] = field(default_factory=list)
    processing: list[ProcessingKey] = field(default_factory=list)
    # A priority queue's waiting keys by priority (workqueue_depth{priority}); None otherwise.
    depth_by_priority: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain values; a plain queue's has no priority fields (they would all be null)."""
        out = asdict(self)
        if self.depth_by_priority is None:
            del out["depth_by_priority"]
            for section in ("waiting", "backing_off"):
                for entry in out[section]:
                    del entry["priority"]
        return out


def worker_index(task: asyncio.Task[Any] | None) -> int:
    """The index of the controller worker ``task`` is (-1 when it is not one)."""
    if task is None:
        return -1
    match = _WORKER.search(task.get_name())
    return int(match.group(1)) if match else -1


def _key(item: Hashable) -> str:
    return item if type(item) is str else str(item)


def inspect_queue(
    queue: InspectableQueue,
    *,
    limit: int = DEFAULT_LIMIT,
    last_error: Callable[[str], str] | None = None,
) -> QueueContents:
    """The contents of ``queue`` now; ``last_error(key)`` names a backing-off key's last
    failure (the manager's state knows it: pycm.trace.state.queue_contents.last_error)."""
    clock = queue.clock
    now = clock.monotonic_ns()
    wall = clock.wall_ns()
    dirty = queue.dirty_items()
    processing = queue.processing_items()
    takers = queue.takers()
    delayed = queue.delayed_items()
    prioritized = _prioritized(queue)
    priorities: Mapping[Any, int] = {}
    delayed_priorities: Mapping[Any, int] = {}
    depth_by_priority = None
    if prioritized is None:
        waiting = [
            WaitingKey(_key(item), (now - since) / 1e9)
            for item, since in sorted(dirty.items(), key=lambda kv: kv[1])[:limit]
        ]
    else:
        priorities = prioritized.priorities()
        delayed_priorities = prioritized.delayed_priorities()
        depth_by_priority = {
            str(p): n for p, n in sorted(prioritized.depth_by_priority().items(), reverse=True)
        }
        # Hand-out order: highest priority first, then oldest (a key re-added while it is
        # processed waits in that order too, once its worker is done).
        waiting = [
            WaitingKey(_key(item), (now - since) / 1e9, priorities[item])
            for item, since in sorted(dirty.items(), key=lambda kv: (-priorities[kv[0]], kv[1]))[
                :limit
            ]
        ]
    backing_off = []
    for item, ready in sorted(delayed.items(), key=lambda kv: kv[1])[:limit]:
        key = _key(item)
        backing_off.append(
            BackingOffKey(
                key,
                queue.num_requeues(item),
                (ready - now) / 1e9,
                wall + (ready - now),
                last_error(key) if last_error is not None else "",
                delayed_priorities.get(item) if prioritized is not None else None,
            )
        )
    held = []
    for item, since in sorted(processing.items(), key=lambda kv: kv[1])[:limit]:
        task = takers.get(item)
        held.append(
            ProcessingKey(
                _key(item),
                (now - since) / 1e9,
                worker_index(task),
                task.get_name() if task is not None else "",
            )
        )
    return QueueContents(
        queue=queue.name,
        depth=len(queue),
        waiting_count=len(dirty),
        backing_off_count=len(delayed),
        processing_count=len(processing),
        waiting=waiting,
        backing_off=backing_off,
        processing=held,
        depth_by_priority=depth_by_priority,
    )


def _prioritized(queue: InspectableQueue) -> PrioritizedQueue | None:
    """``queue`` as a priority queue, when it is one."""
    if callable(getattr(queue, "priorities", None)) and callable(
        getattr(queue, "depth_by_priority", None)
    ):
        return queue  # type: ignore[return-value]
    return None
