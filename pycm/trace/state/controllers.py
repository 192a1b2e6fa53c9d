"""Controllers: init, lifecycle, reconcile totals and latency, the slowest and failing keys.

Keyed by (instance, controller name). A reconcile's in-flight count and longest running time
are derived at snapshot time from the open steps (:mod:`pycm.trace.state.steps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypedDict

from pycm.trace.events import Outcome
from pycm.trace.histogram import Histogram
from pycm.trace.kinds import (
    ConditionSet,
    ControllerDisabled,
    ControllerInitBegan,
    ControllerInitFinished,
    ControllerStarted,
    ControllerStopped,
    ControllerTokenRequested,
    FinalizerAdded,
    FinalizerRemoved,
    ObjectEnsured,
    OwnerReferenceSet,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
)
from pycm.trace.state import steps
from pycm.trace.state.domain import Moment
from pycm.trace.state.record import (
    BoundedTable,
    HistogramSnapshot,
    RateWindow,
    Record,
    bump,
    plain,
    text_key,
)
from pycm.trace.state.registry import handles, not_folded
from pycm.trace.state.startup import bar_begin, bar_end
from pycm.trace.state.steps import close_step, open_step

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "FAILING_KEYS",
    "SECTION",
    "SLOWEST_KEYS",
    "ControllerRecord",
    "ControllerSnapshot",
    "KeyRecord",
    "KeySnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
    "new_table",
]

SLOWEST_KEYS = 50
FAILING_KEYS = 50
MAX_CONTROLLERS = 1024  # (instance, controller) pairs; a manager runs tens
_MS = 1e-6  # ns -> ms
_OK = Outcome.OK
_ERROR = Outcome.ERROR
_RESULTS = tuple(r.value for r in ReconcileResult)


class KeySnapshot(TypedDict):
    """The last (or slowest) reconcile of one key, with its trace for the drill-down."""

    key: Annotated[str, "the work queue key (namespace/name)"]
    ts: Annotated[int, "when that reconcile ended (Unix ns)"]
    dur_ns: Annotated[int, "its duration"]
    result: Annotated[str, "success, requeue, requeue_after, error, conflict, cancelled"]
    outcome: Annotated[str, "the step outcome (ok, error, cancelled)"]
    error: Annotated[str, "its error"]
    action: Annotated[str, "what the sync did"]
    trace_id: Annotated[str, "its trace"]
    span_id: Annotated[str, "its span"]
    retries: Annotated[int, "the key's requeues before it"]
    api_calls: Annotated[int, "API calls it made"]
    count: Annotated[int, "failures of this key while it stayed in the table (failing)"]


class ControllerSnapshot(TypedDict):
    """One controller of one instance."""

    instance: Annotated[str, "the instance running it"]
    controller: Annotated[str, "the controller name"]
    init: Annotated[str, '"", running, started, not_started, error, cancelled']
    init_reason: Annotated[str, "why it did not start"]
    init_ms: Annotated[float, "its init function's duration"]
    disabled: Annotated[bool, "not started: disabled by --controllers or by default"]
    disabled_reason: Annotated[str, "why"]
    started: Annotated[bool, "its workers run"]
    stopped: Annotated[bool, "its workers stopped"]
    workers: Annotated[int, "worker count"]
    reconciles: Annotated[int, "reconciles ended; == sum(results)"]
    results: Annotated[dict[str, int], "result -> reconciles"]
    errors: Annotated[int, "failed reconciles"]
    last_ts: Annotated[int, "the newest reconcile end (Unix ns)"]
    latency: Annotated[HistogramSnapshot, "reconcile duration (ms)"]
    rate: Annotated[list[list[int]], "[second, reconciles] of the last 60 s (the rate's state)"]
    slowest: Annotated[list[KeySnapshot], "the slowest reconcile of each of the slowest keys"]
    slow_floor: Annotated[int, "the shortest duration in slowest once full (ns)"]
    failing: Annotated[list[KeySnapshot], "keys that failed, least recent first"]
    touched: Annotated[int, "recency for eviction"]
    in_flight: Annotated[int, "reconciles begun and not ended (derived)"]
    longest_running_ns: Annotated[int, "the oldest of those, running for (derived)"]
    reconciles_per_s: Annotated[float, "over the last 10 s of event time (derived)"]


@dataclass(slots=True)
class KeyRecord(Record):
    """The last (or slowest) reconcile of one key, with its trace for the drill-down."""

    key: str = ""
    ts: int = 0
    dur_ns: int = 0
    result: str = ""
    outcome: str = ""
    error: str = ""
    action: str = ""
    trace_id: str = ""
    span_id: str = ""
    retries: int = 0
    api_calls: int = 0
    count: int = 1  # failures of this key while it stayed in the table (failing table)


def _key_table(data: Any) -> dict[str, KeyRecord]:
    # Dumped as a list to keep the order (the eviction order of a least-recent table).
    return {d["key"]: KeyRecord.load(d) for d in data or ()}


@dataclass(slots=True)
class ControllerRecord(Record):
    """One controller (instance + name): lifecycle, reconcile totals, latency, hot keys.

    Invariant: ``reconciles == sum(results.values())``. ``slowest`` holds at most
    :data:`SLOWEST_KEYS` keys, each with its slowest reconcile, and ``slow_floor`` is the
    smallest duration in it once full; ``failing`` holds the last :data:`FAILING_KEYS` keys
    that failed, least recent first.
    """

    instance: str = ""
    controller: str = ""
    init: str = ""  # "", running, started, not_started, error
    init_reason: str = ""
    init_ms: float = 0.0
    disabled: bool = False
    disabled_reason: str = ""
    started: bool = False
    stopped: bool = False
    workers: int = 0
    reconciles: int = 0
    results: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    last_ts: int = 0
    latency: Histogram = field(default_factory=Histogram)
    rate: RateWindow = field(default_factory=RateWindow)
    slowest: dict[str, KeyRecord] = field(default_factory=dict)
    slow_floor: int = 0
    failing: dict[str, KeyRecord] = field(default_factory=dict)
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "latency": Histogram.from_dict,
        "rate": RateWindow.load,
        "slowest": _key_table,
        "failing": _key_table,
    }

    def dump(self) -> dict[str, Any]:
        out = Record.dump(self)
        out["slowest"] = [plain(r) for r in self.slowest.values()]
        out["failing"] = [plain(r) for r in self.failing.values()]
        return out


def _new(key: tuple[str, str]) -> ControllerRecord:
    return ControllerRecord(
        instance=key[0], controller=text_key(key[1]), results=dict.fromkeys(_RESULTS, 0)
    )


SECTION = "controllers"


class StateView(steps.StateView, Protocol):
    """The state as this domain sees it."""

    controllers: BoundedTable[tuple[str, str], ControllerRecord]


def new_table() -> BoundedTable[tuple[str, str], ControllerRecord]:
    return BoundedTable(MAX_CONTROLLERS, _new)


def attach(state: StateView) -> None:
    state.controllers = new_table()


def dump(state: StateView, at: Moment) -> dict[str, dict[str, ControllerSnapshot]]:
    now, window_s = at.now, at.window_s
    flight: dict[tuple[str, str], list[int]] = {}  # (instance, controller) -> [n, oldest]
    for begin in state.open.values():
        if isinstance(begin, ReconcileStarted):
            slot = flight.setdefault((begin.instance, begin.controller), [0, begin.ts])
            slot[0] += 1
            slot[1] = min(slot[1], begin.ts)
    out: dict[str, dict[str, ControllerSnapshot]] = {}
    for (instance, name), c in state.controllers.items():
        d = c.dump()
        n, oldest = flight.get((instance, name), (0, 0))
        d["in_flight"] = n
        d["longest_running_ns"] = now - oldest if n else 0
        d["reconciles_per_s"] = c.rate.rate(now, window_s)
        out.setdefault(instance, {})[name] = d  # type: ignore[assignment]
    return out


def load(state: StateView, data: Any) -> None:
    state.controllers.fill(
        ((instance, name), ControllerRecord.load(d))
        for instance, table in (data or {}).items()
        for name, d in table.items()
    )


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


@handles(ControllerInitBegan)
def _init_began(state: StateView, ev: ControllerInitBegan, inst: InstanceRecord) -> None:
    open_step(state, ev)
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    rec.init = "running"
    bar_begin(inst, f"controller.init/{ev.controller}", ev.ts)


@handles(ControllerInitFinished)
def _init_finished(state: StateView, ev: ControllerInitFinished, inst: InstanceRecord) -> None:
    close_step(state, ev)
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    if ev.outcome != _OK:
        rec.init = str(ev.outcome)
    else:
        rec.init = "started" if ev.started else "not_started"
    rec.init_reason = ev.reason or ev.error
    rec.init_ms = ev.dur_ns * _MS
    bar_end(inst, f"controller.init/{ev.controller}", ev)


@handles(ControllerDisabled)
def _disabled(state: StateView, ev: ControllerDisabled, inst: InstanceRecord) -> None:
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    rec.disabled = True
    rec.disabled_reason = ev.reason


@handles(ControllerStarted)
def _started(state: StateView, ev: ControllerStarted, inst: InstanceRecord) -> None:
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    rec.started = True
    rec.stopped = False
    rec.workers = ev.workers


@handles(ControllerStopped)
def _stopped(state: StateView, ev: ControllerStopped, inst: InstanceRecord) -> None:
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    rec.stopped = True


not_folded(ControllerTokenRequested, "token refreshes are shown in the event list only")
# The operator helpers' points: each write they make is an api.request, which the object's
# history already folds; the points name what the write meant, in the trace and the event list.
for _helper_kind in (FinalizerAdded, FinalizerRemoved, ConditionSet, OwnerReferenceSet):
    not_folded(_helper_kind, "its write is in the object's history as an api.request")
not_folded(ObjectEnsured, "its write (if any) is in the object's history as an api.request")


@handles(ReconcileStarted)
def _reconcile_started(state: StateView, ev: ReconcileStarted, inst: InstanceRecord) -> None:
    open_step(state, ev)
    # in flight is counted per controller: the record must exist
    state.controllers[ev.instance, ev.controller].touched = state.applied


@handles(ReconcileFinished)
def _reconcile_finished(state: StateView, ev: ReconcileFinished, inst: InstanceRecord) -> None:
    close_step(state, ev)
    rec = state.controllers[ev.instance, ev.controller]
    rec.touched = state.applied
    outcome = ev.outcome
    # A sync that raised ends with outcome error and the default result: count it as the
    # error it is (the worker rate-limits the key); a cancelled one as "cancelled".
    result: str = ev.result
    failed = outcome != _OK
    if failed:
        if result == ReconcileResult.SUCCESS:
            result = "error" if outcome == _ERROR else str(outcome)
    elif result == ReconcileResult.ERROR:
        failed = True
    rec.reconciles += 1
    bump(rec.results, result)
    ts = ev.ts
    if ts > rec.last_ts:
        rec.last_ts = ts
    dur = ev.dur_ns
    rec.latency.add(dur * _MS)
    rec.rate.add(ts)
    key = ev.key
    if failed:
        rec.errors += 1
        failing = rec.failing
        entry = failing.pop(key, None)
        if entry is None:
            entry = KeyRecord(key=key, count=0)
        _fill_key(entry, ev, result)
        entry.count += 1
        failing[key] = entry
        if len(failing) > FAILING_KEYS:
            del failing[next(iter(failing))]
        if outcome == _OK:  # an error result without an error outcome: not yet in the ring
            state.error(ev, f"{ev.controller} {key}: {result}")
    slowest = rec.slowest
    entry = slowest.get(key)
    if entry is not None:
        if dur > entry.dur_ns:
            _fill_key(entry, ev, result)
            if len(slowest) >= SLOWEST_KEYS:
                rec.slow_floor = min(r.dur_ns for r in slowest.values())
    elif len(slowest) < SLOWEST_KEYS or dur > rec.slow_floor:
        if len(slowest) >= SLOWEST_KEYS:
            victim = min(slowest, key=lambda k: slowest[k].dur_ns)
            del slowest[victim]
        entry = slowest[key] = KeyRecord(key=key)
        _fill_key(entry, ev, result)
        if len(slowest) >= SLOWEST_KEYS:
            rec.slow_floor = min(r.dur_ns for r in slowest.values())


def _fill_key(entry: KeyRecord, ev: ReconcileFinished, result: str) -> None:
    entry.ts = ev.ts
    entry.dur_ns = ev.dur_ns
    entry.result = result
    entry.outcome = str(ev.outcome)
    entry.error = ev.error
    entry.action = ev.action
    entry.trace_id = ev.trace_id
    entry.span_id = ev.span_id
    entry.retries = ev.retries
    entry.api_calls = ev.api_calls
