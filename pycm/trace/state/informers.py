"""Informers: each (instance, resource)'s list/watch lifecycle and cache size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ControllersTookOver,
    HandlerLagged,
    InformerBackedOff,
    InformerListBegan,
    InformerListFinished,
    InformerProgress,
    InformerRelisted,
    InformersStarted,
    InformerStarted,
    InformerSynced,
    InformerWatchListFellBack,
    WatchClosed,
    WatchCloseReason,
    WatchOpened,
)
from pycm.trace.state import steps
from pycm.trace.state.domain import Moment
from pycm.trace.state.record import (
    BoundedTable,
    RateWindow,
    Record,
    bump,
    ms_to_ns,
    text_key,
)
from pycm.trace.state.registry import handles
from pycm.trace.state.startup import bar_begin, bar_end, bar_point
from pycm.trace.state.steps import close_step, open_step

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "SECTION",
    "InformerRecord",
    "InformerSnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
    "new_table",
]

MAX_INFORMERS = 1024  # (instance, resource) pairs
_MS = 1e-6
_OK = Outcome.OK
_ERROR = Outcome.ERROR


class InformerSnapshot(TypedDict):
    """One informer (instance + resource)."""

    instance: Annotated[str, "the instance running it"]
    resource: Annotated[str, "its resource (pods, apps/v1/deployments, ...)"]
    started: Annotated[bool, "it was started"]
    metadata_only: Annotated[bool, "a metadata informer"]
    resync_s: Annotated[float, "its resync period"]
    synced: Annotated[bool, "its cache synced"]
    synced_ts: Annotated[int, "when (Unix ns)"]
    sync_duration_ms: Annotated[float, "start to synced"]
    objects: Annotated[int, "objects in the cache (at sync, the last list or progress report)"]
    pending: Annotated[int, "deltas received and not yet in the cache (last progress report)"]
    lists: Annotated[int, "lists done"]
    list_errors: Annotated[int, "lists that failed"]
    list_items: Annotated[int, "items of the last list"]
    list_bytes: Annotated[int, "bytes of the last list"]
    list_pages: Annotated[int, "pages of the last list"]
    list_ms: Annotated[float, "duration of the last list"]
    watch_opens: Annotated[int, "watches opened"]
    watch_closes: Annotated[dict[str, int], "watches closed, by reason"]
    watch_events: Annotated[int, "watch events received (closed watches and the open one)"]
    open_watch_events: Annotated[int, "the open watch's events as last reported"]
    watch_rate: Annotated[list[list[int]], "[second, watch events] of the last 60 s (rate state)"]
    relists: Annotated[int, "relists"]
    relist_reasons: Annotated[dict[str, int], "relists by reason"]
    backoffs: Annotated[int, "backoffs"]
    last_backoff_ms: Annotated[float, "the last backoff delay"]
    resource_version: Annotated[str, "the newest resourceVersion seen"]
    last_error: Annotated[str, "the last list or watch error"]
    last_error_ts: Annotated[int, "when (Unix ns)"]
    handler_lost: Annotated[int, "notifications its handlers lost"]
    touched: Annotated[int, "recency for eviction"]
    watch_events_per_s: Annotated[float, "over the last 10 s of event time (derived)"]


@dataclass(slots=True)
class InformerRecord(Record):
    """One informer (instance + resource): list/watch lifecycle and cache size."""

    instance: str = ""
    resource: str = ""
    started: bool = False
    metadata_only: bool = False
    resync_s: float = 0.0
    synced: bool = False
    synced_ts: int = 0
    sync_duration_ms: float = 0.0
    objects: int = 0
    pending: int = 0
    lists: int = 0
    list_errors: int = 0
    list_items: int = 0
    list_bytes: int = 0
    list_pages: int = 0
    list_ms: float = 0.0
    watch_opens: int = 0
    watch_closes: dict[str, int] = field(default_factory=dict)  # reason -> count
    watch_events: int = 0
    open_watch_events: int = 0
    watch_rate: RateWindow = field(default_factory=RateWindow)
    relists: int = 0
    relist_reasons: dict[str, int] = field(default_factory=dict)
    backoffs: int = 0
    last_backoff_ms: float = 0.0
    resource_version: str = ""
    last_error: str = ""
    last_error_ts: int = 0
    handler_lost: int = 0
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {"watch_rate": RateWindow.load}


SECTION = "informers"


class StateView(steps.StateView, Protocol):
    """The state as this domain sees it."""

    informers: BoundedTable[tuple[str, str], InformerRecord]


def new_table() -> BoundedTable[tuple[str, str], InformerRecord]:
    return BoundedTable(
        MAX_INFORMERS, lambda key: InformerRecord(instance=key[0], resource=text_key(key[1]))
    )


def attach(state: StateView) -> None:
    state.informers = new_table()


def dump(state: StateView, at: Moment) -> dict[str, dict[str, InformerSnapshot]]:
    now, window_s = at.now, at.window_s
    out: dict[str, dict[str, InformerSnapshot]] = {}
    for (instance, name), i in state.informers.items():
        d = i.dump()
        d["watch_events_per_s"] = i.watch_rate.rate(now, window_s)
        out.setdefault(instance, {})[name] = d  # type: ignore[assignment]
    return out


def load(state: StateView, data: Any) -> None:
    state.informers.fill(
        ((instance, name), InformerRecord.load(d))
        for instance, table in (data or {}).items()
        for name, d in table.items()
    )


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


@handles(InformerStarted)
def _started(state: StateView, ev: InformerStarted, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.started = True
    rec.metadata_only = ev.metadata_only
    rec.resync_s = ev.resync_s


@handles(InformerListBegan)
def _list_began(state: StateView, ev: InformerListBegan, inst: InstanceRecord) -> None:
    open_step(state, ev)
    state.informers[ev.instance, ev.resource].touched = state.applied
    bar_begin(inst, f"informer.list/{ev.resource}", ev.ts)


@handles(InformerListFinished)
def _list_finished(state: StateView, ev: InformerListFinished, inst: InstanceRecord) -> None:
    close_step(state, ev)
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.lists += 1
    rec.list_ms = ev.dur_ns * _MS
    if ev.outcome != _OK:
        rec.list_errors += 1
        if ev.outcome == _ERROR:
            rec.last_error = ev.error
            rec.last_error_ts = ev.ts
    else:
        rec.list_items = rec.objects = ev.items
        rec.list_bytes = ev.bytes
        rec.list_pages = ev.pages
        if ev.resource_version:
            rec.resource_version = ev.resource_version
    bar_end(inst, f"informer.list/{ev.resource}", ev)


def _count_watch_events(rec: InformerRecord, open_watch_events: int, ts: int) -> None:
    """Count the open watch's events beyond those already counted (progress reports carry
    the open watch's running total, its close the final one; a lost report loses nothing)."""
    new = open_watch_events - rec.open_watch_events
    if new > 0:
        rec.watch_events += new
        rec.watch_rate.add(ts, new)
    rec.open_watch_events = open_watch_events


@handles(InformerProgress)
def _progress(state: StateView, ev: InformerProgress, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.objects = ev.objects
    rec.pending = ev.pending
    if ev.watch_events < rec.open_watch_events:  # a report of the next watch, its close lost
        rec.open_watch_events = 0
    _count_watch_events(rec, ev.watch_events, ev.ts)
    if ev.resource_version:
        rec.resource_version = ev.resource_version


@handles(WatchOpened)
def _watch_opened(state: StateView, ev: WatchOpened, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.watch_opens += 1
    rec.open_watch_events = 0
    if ev.resource_version:
        rec.resource_version = ev.resource_version


@handles(WatchClosed)
def _watch_closed(state: StateView, ev: WatchClosed, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    bump(rec.watch_closes, ev.reason)
    _count_watch_events(rec, ev.events, ev.ts)
    rec.open_watch_events = 0
    if ev.resource_version:
        rec.resource_version = ev.resource_version
    if ev.reason == WatchCloseReason.ERROR:
        rec.last_error = ev.error
        rec.last_error_ts = ev.ts
        state.error(ev, f"watch {ev.resource} closed: {ev.error}")


@handles(InformerRelisted)
def _relisted(state: StateView, ev: InformerRelisted, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.relists += 1
    bump(rec.relist_reasons, ev.reason)


@handles(InformerWatchListFellBack)
def _watch_list_fell_back(
    state: StateView, ev: InformerWatchListFellBack, inst: InstanceRecord
) -> None:
    # Once per informer: worth the recent-errors list (the TUI's and the dashboard's).
    state.informers[ev.instance, ev.resource].touched = state.applied
    scope = "from now on" if ev.permanent else "this time"
    state.error(ev, f"{ev.resource}: streaming list failed, listing {scope}: {ev.reason}")


@handles(InformerBackedOff)
def _backed_off(state: StateView, ev: InformerBackedOff, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.backoffs += 1
    rec.last_backoff_ms = ev.delay_ms


@handles(InformerSynced)
def _synced(state: StateView, ev: InformerSynced, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.synced = True
    rec.synced_ts = ev.ts
    rec.objects = ev.objects
    rec.sync_duration_ms = ev.duration_ms
    dur_ns = ms_to_ns(ev.duration_ms)
    bar_point(inst, f"informer.synced/{ev.resource}", ev.ts - dur_ns, dur_ns)


@handles(HandlerLagged)
def _handler_lagged(state: StateView, ev: HandlerLagged, inst: InstanceRecord) -> None:
    rec = state.informers[ev.instance, ev.resource]
    rec.touched = state.applied
    rec.handler_lost += ev.lost
    state.error(ev, f"{ev.resource} handler {ev.handler} lost {ev.lost} notifications")


@handles(InformersStarted)
def _informers_started(state: StateView, ev: InformersStarted, inst: InstanceRecord) -> None:
    bar_point(inst, "informers.started", ev.ts, 0)


@handles(ControllersTookOver)
def _controllers_took_over(state: StateView, ev: ControllersTookOver, inst: InstanceRecord) -> None:
    # On the start-up bar: a warm standby's informers started long before it took over.
    bar_point(inst, "controllers.took_over", ev.ts, 0)
