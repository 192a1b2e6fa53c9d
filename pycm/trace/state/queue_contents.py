"""What each work queue holds, folded from its events: keys waiting, backing off, processing.

The queue handlers of :mod:`pycm.trace.state.queues` call :func:`added`, :func:`taken`,
:func:`requeued`, :func:`dropped`, :func:`done` and :func:`shut_down` with the queue's
:class:`QueueContents` (a field of its record), so a viewer that sees only events and snapshots
(the TUI, the dashboard) shows the same as ``GET /debug/pycm/queues`` reads live:

- **waiting**: a ``queue.add`` that queued the key (``queued``) until the ``queue.get`` that
  took it — a key added again while being processed waits too (the queue's dirty set);
- **backing off**: a ``queue.retry`` with a delay until the delayed add comes (an add of the key
  whose reason is a delayed one, or at or after the due time), the key is dropped, or the queue
  shuts down; its retries are the limiter's count the retry carried (0: requeue_after);
- **processing**: ``queue.get`` until ``queue.done``; ``stuck`` from the stuck-worker mark
  (``queue.stuck``, pycm.controller.stuck) until ``queue.unstuck`` or ``queue.done``. A mark is
  also an entry in the state's recent errors.

The last error of a backing-off key is not folded here: it is the error of the key's entry in
its controller's ``failing`` table (:mod:`pycm.trace.state.controllers`) when that failure
ended after the retry, or at most :data:`FAILURE_SLACK_NS` before it (the worker requeues a
failed key, then the failed ``reconcile.end`` comes; a recording or another process may stamp
the two the other way round), read at snapshot time by :func:`last_error`. A key requeued
without a failure (``Result(requeue=True)``, ``requeue_after``) has none.

Bounds: each list keeps at most :data:`MAX_KEYS` keys (the first come: the oldest waiting, the
longest processing), and a key at most :data:`MAX_KEY_CHARS` characters. The counts are exact
while the stream is complete; the backing-off count can only drift when more than
:data:`MAX_KEYS` keys back off at once and one of the keys not kept is retried again before it
came back (its membership is not known).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.kinds import WorkerStuck, WorkerUnstuck
from pycm.trace.state.domain import Stream
from pycm.trace.state.record import BoundedTable, Record, ms_to_ns
from pycm.trace.state.registry import handles

if TYPE_CHECKING:
    from pycm.trace.state.controllers import ControllerRecord
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "DELAYED_REASONS",
    "MAX_KEYS",
    "BackingOffKeySnapshot",
    "ProcessingKeySnapshot",
    "QueueContents",
    "QueueContentsSnapshot",
    "StateView",
    "WaitingKeySnapshot",
    "last_error",
    "view",
]

MAX_KEYS = 50  # keys kept per list per queue (counts stay exact)
MAX_KEY_CHARS = 320  # a namespace/name is at most 63 + 1 + 253
# The reasons of the adds a delaying queue makes when a delay ends (add_rate_limited,
# Result(requeue_after=...), Controller.enqueue_after's default).
DELAYED_REASONS = frozenset({"rate_limited", "requeue_after", "after"})
_DUE_SLACK_NS = 1_000_000  # an add this close to the due time is the delayed add
FAILURE_SLACK_NS = 1_000_000_000  # a failure this long before a retry is the retry's cause
_MS = 1e-6


class WaitingKeySnapshot(TypedDict):
    """A key waiting for a worker."""

    key: Annotated[str, "the key"]
    since_ts: Annotated[int, "the add that made it wait (Unix ns)"]
    age_ms: Annotated[float, "now_ts - since_ts (derived)"]


class BackingOffKeySnapshot(TypedDict):
    """A key scheduled to come back after a delay (rate limited, or requeue_after)."""

    key: Annotated[str, "the key"]
    since_ts: Annotated[int, "the retry that scheduled it (Unix ns)"]
    retries: Annotated[int, "the limiter's count at that retry (0: requeue_after)"]
    due_ts: Annotated[int, "when it is added again (Unix ns)"]
    due_in_ms: Annotated[float, "due_ts - now_ts; <= 0 when due (derived)"]
    last_error: Annotated[str, 'its last failure ("" none or unknown; derived)']


class ProcessingKeySnapshot(TypedDict):
    """A key a worker holds."""

    key: Annotated[str, "the key"]
    since_ts: Annotated[int, "when a worker took it (Unix ns)"]
    for_ms: Annotated[float, "now_ts - since_ts (derived)"]
    stuck: Annotated[bool, "marked stuck (queue.stuck) and not yet let go (derived)"]


class QueueContentsSnapshot(TypedDict):
    """What one queue holds (each list at most 50 keys; the counts exact)."""

    waiting_count: Annotated[int, "keys waiting for a worker"]
    backing_off_count: Annotated[int, "keys backing off"]
    processing_count: Annotated[int, "keys being processed"]
    waiting: Annotated[list[WaitingKeySnapshot], "waiting keys, oldest first"]
    backing_off: Annotated[list[BackingOffKeySnapshot], "backing-off keys, soonest due first"]
    processing: Annotated[list[ProcessingKeySnapshot], "keys being processed, longest first"]
    stuck: Annotated[dict[str, int], "keys marked stuck and still held -> the worker's index"]


def _keyed(fields: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    """The loader of a dumped list (``[{key, field...}]``) into its dict (key -> values)."""

    def load(data: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for d in data or ():
            values = [int(d[f]) for f in fields]
            out[str(d["key"])] = values[0] if len(values) == 1 else values
        return out

    return load


@dataclass(slots=True)
class QueueContents(Record):
    """The keys of one queue. Invariants: each dict holds at most :data:`MAX_KEYS` keys, in
    the order they came; ``*_count >= len(dict)``."""

    waiting_count: int = 0
    backing_off_count: int = 0
    processing_count: int = 0
    waiting: dict[str, int] = field(default_factory=dict)  # key -> since ts
    backing_off: dict[str, list[int]] = field(default_factory=dict)  # key -> [since, retries, due]
    processing: dict[str, int] = field(default_factory=dict)  # key -> since ts
    # Keys marked stuck (queue.stuck) still held -> the worker's index; at most MAX_KEYS.
    stuck: dict[str, int] = field(default_factory=dict)

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "waiting": _keyed(("since_ts",)),
        "backing_off": _keyed(("since_ts", "retries", "due_ts")),
        "processing": _keyed(("since_ts",)),
        "stuck": lambda data: {str(k): int(v) for k, v in (data or {}).items()},
    }

    def dump(self) -> dict[str, Any]:
        return {
            "waiting_count": self.waiting_count,
            "backing_off_count": self.backing_off_count,
            "processing_count": self.processing_count,
            "waiting": [{"key": k, "since_ts": t} for k, t in self.waiting.items()],
            "backing_off": sorted(
                (
                    {"key": k, "since_ts": v[0], "retries": v[1], "due_ts": v[2]}
                    for k, v in self.backing_off.items()
                ),
                key=lambda d: d["due_ts"],
            ),
            "processing": [{"key": k, "since_ts": t} for k, t in self.processing.items()],
            "stuck": dict(self.stuck),
        }


def view(
    contents: QueueContents, now: int, error_of: Callable[[str, int], str]
) -> QueueContentsSnapshot:
    """The snapshot of ``contents`` at ``now`` (derived ages; ``error_of(key, since_ts)``)."""
    d: Any = contents.dump()
    for w in d["waiting"]:
        w["age_ms"] = (now - w["since_ts"]) * _MS
    for b in d["backing_off"]:
        b["due_in_ms"] = (b["due_ts"] - now) * _MS
        b["last_error"] = error_of(b["key"], b["since_ts"])
    stuck = d["stuck"]
    for p in d["processing"]:
        p["for_ms"] = (now - p["since_ts"]) * _MS
        p["stuck"] = p["key"] in stuck
    return d  # type: ignore[no-any-return]


class StateView(Stream, Protocol):
    """The state as the queues' contents see it: the queues (their records are the queues
    domain's, which builds on this module: typed there) and the controllers' failures."""

    queues: BoundedTable[tuple[str, str], Any]
    controllers: BoundedTable[tuple[str, str], ControllerRecord]


def last_error(state: StateView, instance: str, controller: str, key: str) -> str:
    """The last failure of ``key`` while it backs off in ``controller``'s queue ("" when it
    does not back off, backs off without a failure, or its failure left the table)."""
    queue = state.queues.get((instance, controller))
    if queue is None:
        return ""
    entry = queue.contents.backing_off.get(key)
    if entry is None:
        return ""
    return failure_since(state, instance, controller, key, entry[0])


def failure_since(state: StateView, instance: str, controller: str, key: str, since: int) -> str:
    """The error of ``key``'s newest failed reconcile if it ended after ``since`` (the retry),
    or at most :data:`FAILURE_SLACK_NS` before it."""
    rec = state.controllers.get((instance, controller))
    if rec is None:
        return ""
    failed = rec.failing.get(key)
    if failed is None or failed.ts < since - FAILURE_SLACK_NS:
        return ""
    return failed.error or failed.result


# ---------------------------------------------------------------------------------------------
# The fold (called by the handlers of pycm.trace.state.queues)
# ---------------------------------------------------------------------------------------------


def _bounded(key: str) -> str:
    if key.__class__ is not str:
        raise TypeError("keys are strings")  # counted as malformed
    return key if len(key) <= MAX_KEY_CHARS else key[:MAX_KEY_CHARS]


def added(c: QueueContents, key: str, queued: bool, reason: str, ts: int) -> None:
    if key.__class__ is not str or len(key) > MAX_KEY_CHARS:
        key = _bounded(key)
    backing = c.backing_off.get(key)
    if backing is not None and (reason in DELAYED_REASONS or ts >= backing[2] - _DUE_SLACK_NS):
        del c.backing_off[key]
        c.backing_off_count = max(0, c.backing_off_count - 1)
    elif backing is None and reason in DELAYED_REASONS and c.backing_off_count > len(c.backing_off):
        c.backing_off_count -= 1  # one of the keys not kept came back
    if queued:
        c.waiting_count += 1
        waiting = c.waiting
        if key not in waiting and len(waiting) < MAX_KEYS:
            waiting[key] = ts


def taken(c: QueueContents, key: str, ts: int) -> None:
    if key.__class__ is not str or len(key) > MAX_KEY_CHARS:
        key = _bounded(key)
    if c.waiting_count:
        c.waiting_count -= 1
    c.waiting.pop(key, None)
    c.processing_count += 1
    processing = c.processing
    if len(processing) < MAX_KEYS:
        processing[key] = ts


def done(c: QueueContents, key: str) -> None:
    if c.processing_count:
        c.processing_count -= 1
    if key.__class__ is not str or len(key) > MAX_KEY_CHARS:
        key = _bounded(key)
    c.processing.pop(key, None)
    if c.stuck:
        c.stuck.pop(key, None)


def requeued(c: QueueContents, key: str, delay_ms: float, retries: int, ts: int) -> None:
    if delay_ms <= 0:
        return  # added at once: a queue.add follows
    if key.__class__ is not str or len(key) > MAX_KEY_CHARS:
        key = _bounded(key)
    due = ts + ms_to_ns(delay_ms)
    backing = c.backing_off.get(key)
    if backing is not None:
        backing[1] = retries
        if due < backing[2]:  # the delaying queue keeps the earlier time
            backing[0], backing[2] = ts, due
        return
    c.backing_off_count += 1
    if len(c.backing_off) < MAX_KEYS:
        c.backing_off[key] = [ts, int(retries), due]


def dropped(c: QueueContents, key: str) -> None:
    if c.backing_off.pop(_bounded(key), None) is not None:
        c.backing_off_count = max(0, c.backing_off_count - 1)


def shut_down(c: QueueContents) -> None:
    """A shut-down queue drops what waits for a delay and adds nothing more."""
    c.backing_off.clear()
    c.backing_off_count = 0


@handles(WorkerStuck)
def _stuck(state: StateView, ev: WorkerStuck, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.controller]
    rec.touched = state.applied
    stuck = rec.contents.stuck
    key = _bounded(ev.key)
    if key in stuck or len(stuck) < MAX_KEYS:
        stuck[key] = int(ev.worker)
    state.error(
        ev,
        f"{ev.controller}: worker {ev.worker} stuck on {ev.key} for {ev.processing_s:.0f}s "
        f"(threshold {ev.threshold_s:g}s)",
    )


@handles(WorkerUnstuck)
def _unstuck(state: StateView, ev: WorkerUnstuck, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.controller]
    rec.touched = state.applied
    rec.contents.stuck.pop(_bounded(ev.key), None)
