"""Work queues: each (instance, queue)'s depth, throughput, retries, drops, wait and work time,
and what it holds (``contents``: the keys waiting, backing off and processing, folded by
:mod:`pycm.trace.state.queue_contents`).

``depth`` is taken from the newest event carrying one (by ``ts``), so an event merged out of
order cannot move it back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.histogram import Histogram
from pycm.trace.kinds import (
    ItemAdded,
    ItemDone,
    ItemDropped,
    ItemRequeued,
    ItemTaken,
    QueueShutDown,
)
from pycm.trace.state import queue_contents
from pycm.trace.state.domain import Moment
from pycm.trace.state.queue_contents import QueueContents, QueueContentsSnapshot
from pycm.trace.state.record import (
    BoundedTable,
    HistogramSnapshot,
    RateWindow,
    Record,
    bump,
    text_key,
)
from pycm.trace.state.registry import handles

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "SECTION",
    "QueueRecord",
    "QueueSnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
    "new_table",
]

MAX_QUEUES = 1024  # (instance, queue) pairs


class QueueSnapshot(TypedDict):
    """One work queue of one instance."""

    instance: Annotated[str, "the instance"]
    queue: Annotated[str, "the queue name (the controller's)"]
    depth: Annotated[int, "keys waiting, from the newest event carrying it"]
    depth_ts: Annotated[int, "that event's ts"]
    max_depth: Annotated[int, "the highest depth seen"]
    adds: Annotated[int, "adds"]
    deduped: Annotated[int, "adds of a key that was already waiting"]
    gets: Annotated[int, "keys taken by workers"]
    dones: Annotated[int, "keys done"]
    retries: Annotated[int, "rate-limited requeues"]
    drops: Annotated[int, "keys dropped (max retries)"]
    drop_reasons: Annotated[dict[str, int], "drops by reason"]
    shut_down: Annotated[bool, "the queue was shut down"]
    wait: Annotated[HistogramSnapshot, "time keys waited (ms)"]
    work: Annotated[HistogramSnapshot, "time workers held keys (ms)"]
    add_rate: Annotated[list[list[int]], "[second, adds] of the last 60 s (the rate's state)"]
    touched: Annotated[int, "recency for eviction"]
    adds_per_s: Annotated[float, "over the last 10 s of event time (derived)"]
    contents: Annotated[QueueContentsSnapshot, "the keys it holds now"]


@dataclass(slots=True)
class QueueRecord(Record):
    """One work queue (instance + name). ``depth`` is from the newest event carrying one."""

    instance: str = ""
    queue: str = ""
    depth: int = 0
    depth_ts: int = 0
    max_depth: int = 0
    adds: int = 0
    deduped: int = 0  # adds of a key that was already waiting
    gets: int = 0
    dones: int = 0
    retries: int = 0
    drops: int = 0
    drop_reasons: dict[str, int] = field(default_factory=dict)
    shut_down: bool = False
    wait: Histogram = field(default_factory=Histogram)
    work: Histogram = field(default_factory=Histogram)
    add_rate: RateWindow = field(default_factory=RateWindow)
    touched: int = 0
    contents: QueueContents = field(default_factory=QueueContents)

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "wait": Histogram.from_dict,
        "work": Histogram.from_dict,
        "add_rate": RateWindow.load,
        "contents": QueueContents.load,
    }


SECTION = "queues"


class StateView(queue_contents.StateView, Protocol):
    """The state as this domain sees it."""

    queues: BoundedTable[tuple[str, str], QueueRecord]


def new_table() -> BoundedTable[tuple[str, str], QueueRecord]:
    return BoundedTable(
        MAX_QUEUES, lambda key: QueueRecord(instance=key[0], queue=text_key(key[1]))
    )


def attach(state: StateView) -> None:
    state.queues = new_table()


def dump(state: StateView, at: Moment) -> dict[str, dict[str, QueueSnapshot]]:
    now, window_s = at.now, at.window_s
    out: dict[str, dict[str, QueueSnapshot]] = {}
    for (instance, name), q in state.queues.items():
        d = q.dump()
        d["adds_per_s"] = q.add_rate.rate(now, window_s)
        errors = functools.partial(queue_contents.failure_since, state, instance, name)
        d["contents"] = queue_contents.view(q.contents, now, errors)
        out.setdefault(instance, {})[name] = d  # type: ignore[assignment]
    return out


def load(state: StateView, data: Any) -> None:
    state.queues.fill(
        ((instance, name), QueueRecord.load(d))
        for instance, table in (data or {}).items()
        for name, d in table.items()
    )


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


def _depth(rec: QueueRecord, ts: int, depth: int) -> None:
    if ts >= rec.depth_ts:
        rec.depth = depth
        rec.depth_ts = ts
    if depth > rec.max_depth:
        rec.max_depth = depth


@handles(ItemAdded)
def _added(state: StateView, ev: ItemAdded, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.adds += 1
    if not ev.queued:
        rec.deduped += 1
    rec.add_rate.add(ev.ts)
    _depth(rec, ev.ts, ev.depth)
    queue_contents.added(rec.contents, ev.key, ev.queued, ev.reason, ev.ts)


@handles(ItemTaken)
def _taken(state: StateView, ev: ItemTaken, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.gets += 1
    rec.wait.add(ev.wait_ms)
    _depth(rec, ev.ts, ev.depth)
    queue_contents.taken(rec.contents, ev.key, ev.ts)


@handles(ItemDone)
def _done(state: StateView, ev: ItemDone, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.dones += 1
    rec.work.add(ev.work_ms)
    _depth(rec, ev.ts, ev.depth)
    queue_contents.done(rec.contents, ev.key)


@handles(ItemRequeued)
def _requeued(state: StateView, ev: ItemRequeued, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.retries += 1
    queue_contents.requeued(rec.contents, ev.key, ev.delay_ms, ev.retries, ev.ts)


@handles(ItemDropped)
def _dropped(state: StateView, ev: ItemDropped, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.drops += 1
    bump(rec.drop_reasons, ev.reason)
    queue_contents.dropped(rec.contents, ev.key)
    state.error(ev, f"{ev.queue} dropped {ev.key} after {ev.retries} retries: {ev.reason}")


@handles(QueueShutDown)
def _shut_down(state: StateView, ev: QueueShutDown, inst: InstanceRecord) -> None:
    rec = state.queues[ev.instance, ev.queue]
    rec.touched = state.applied
    rec.shut_down = True
    queue_contents.shut_down(rec.contents)
