"""A frozen copy of pycm/trace/records.py for bench/_old_reducer.py (the ``trace.reduce`` peer).

The typed records the reducer (:mod:`pycm.trace.reducer`) folds events into.

Each record is a slotted dataclass whose fields are scalars, plain dicts/lists of scalars, a
:class:`~pycm.trace.histogram.Histogram`, a :class:`RateWindow`, a bounded deque, or a dict of
other records. :meth:`Record.dump` turns one into plain JSON-able data and :meth:`Record.load`
rebuilds it exactly (so a restored reducer continues as if it had seen every event);
derived values (percentiles, rates) appear in dumps but are ignored by ``load``.

Recency for eviction is ``touched``: the reducer's count of applied events when the record was
last updated (never a clock). Tables of records evict the least recently touched one.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pycm.trace.histogram import Histogram

__all__ = [
    "ApiRecord",
    "ControllerRecord",
    "HolderRecord",
    "InformerRecord",
    "InstanceRecord",
    "KeyRecord",
    "LeaseRecord",
    "QueueRecord",
    "RateWindow",
    "Record",
    "StepRecord",
    "bump",
    "evict_least_recent",
    "plain",
]

RATE_SLOTS = 60  # seconds of per-second counts kept for rates
OTHER = "(other)"  # the label counted once a label table is full
MAX_LABELS = 32  # distinct labels (verbs, reasons) per counter table; more go to OTHER

_R = TypeVar("_R", bound="Record")


def bump(table: dict[str, int], label: str, n: int = 1) -> None:
    """``table[label] += n``, folding new labels into :data:`OTHER` once the table is full."""
    if label in table:
        table[label] += n
    elif len(table) < MAX_LABELS:
        table[str(label)] = n
    else:
        table[OTHER] = table.get(OTHER, 0) + n


def evict_least_recent(table: dict[Any, Any]) -> None:
    """Remove the entry whose record was touched least recently (O(n); only when full)."""
    victim = min(table, key=lambda k: table[k].touched)
    del table[victim]


class RateWindow:
    """Per-second event counts for the last :data:`RATE_SLOTS` seconds, keyed by event ``ts``.

    Slot ``s % RATE_SLOTS`` holds second ``s``; a count for a second older than the one its slot
    now holds is dropped (it is out of the window). Clock-free: rates are asked for at a given
    ``now`` (the reducer passes the newest event ts it has seen).
    """

    __slots__ = ("counts", "secs")

    def __init__(self) -> None:
        self.secs: list[int] = [-1] * RATE_SLOTS
        self.counts: list[int] = [0] * RATE_SLOTS

    def add(self, ts_ns: int, n: int = 1) -> None:
        sec = ts_ns // 1_000_000_000
        slot = sec % RATE_SLOTS
        held = self.secs[slot]
        if held == sec:
            self.counts[slot] += n
        elif held < sec:
            self.secs[slot] = sec
            self.counts[slot] = n

    def total(self, now_ts_ns: int, window_s: int = 10) -> int:
        """Events in the ``window_s`` seconds ending with the second of ``now_ts_ns``."""
        now = now_ts_ns // 1_000_000_000
        start = now - min(window_s, RATE_SLOTS)
        return sum(c for s, c in zip(self.secs, self.counts, strict=True) if start < s <= now)

    def rate(self, now_ts_ns: int, window_s: int = 10) -> float:
        """Events per second over that window (the current, partial second included)."""
        window_s = max(1, min(window_s, RATE_SLOTS))
        return self.total(now_ts_ns, window_s) / window_s

    def dump(self) -> list[list[int]]:
        return [[s, c] for s, c in zip(self.secs, self.counts, strict=True) if s >= 0]

    @classmethod
    def load(cls, data: Any) -> RateWindow:
        w = cls()
        for s, c in data or ():
            w.secs[s % RATE_SLOTS] = int(s)
            w.counts[s % RATE_SLOTS] = int(c)
        return w


def plain(value: Any) -> Any:
    """``value`` as JSON-able plain data (lists, dicts with str keys, scalars)."""
    if isinstance(value, Record):
        return value.dump()
    if isinstance(value, Histogram):
        return value.to_dict()
    if isinstance(value, RateWindow):
        return value.dump()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | deque):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


class Record:
    """Base of the reducer's records: generic dump/load over the dataclass fields.

    ``_LOAD`` maps a field name to the function rebuilding it from its dumped form; other
    fields are copied as they are. Fields missing from the data keep their defaults.
    """

    __slots__ = ()
    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    @classmethod
    def _field_names(cls) -> tuple[str, ...]:
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(
                f.name
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            )
        return names

    def dump(self) -> dict[str, Any]:
        return {name: plain(getattr(self, name)) for name in self._field_names()}

    @classmethod
    def load(cls: type[_R], data: dict[str, Any]) -> _R:
        loaders = cls._LOAD
        kwargs: dict[str, Any] = {}
        for name in cls._field_names():
            if name in data:
                loader = loaders.get(name)
                kwargs[name] = loader(data[name]) if loader else _copy(data[name])
        return cls(**kwargs)


def _records(cls: type[_R]) -> Callable[[Any], dict[str, _R]]:
    return lambda data: {k: cls.load(v) for k, v in (data or {}).items()}


def _ring(maxlen: int) -> Callable[[Any], deque[Any]]:
    return lambda data: deque((_copy(v) for v in data or ()), maxlen=maxlen)


def _key_table(data: Any) -> dict[str, KeyRecord]:
    # Dumped as a list to keep the order (the eviction order of a least-recent table).
    return {d["key"]: KeyRecord.load(d) for d in data or ()}


# ---------------------------------------------------------------------------------------------
# Per instance
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class StepRecord(Record):
    """One bar of an instance's start-up waterfall. ``outcome`` is "" while the step runs."""

    start_ts: int = 0
    dur_ns: int = 0
    outcome: str = ""
    error: str = ""


@dataclass(slots=True)
class InstanceRecord(Record):
    """One manager replica as seen through its events."""

    name: str = ""
    role: str = "unknown"  # leader, standby, unknown, stopped
    lease: str = ""  # the lease this instance campaigns for (namespace/name), once seen
    first_ts: int = 0
    last_ts: int = 0
    last_seq: int = 0
    events: int = 0
    command: str = ""
    version: str = ""
    exit_code: int | None = None
    stop_reason: str = ""
    # Start-up waterfall, step name -> bar; the first occurrence of a name wins (a relist is
    # not start-up); cleared when a new start-up begins after one that ended.
    steps: dict[str, StepRecord] = field(default_factory=dict)
    health: dict[str, dict[str, Any]] = field(default_factory=dict)  # check -> state
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {"steps": _records(StepRecord)}


# ---------------------------------------------------------------------------------------------
# Leases
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class HolderRecord(Record):
    """Renew statistics of one holder of a lease."""

    renews: int = 0
    failures: int = 0
    last_renew_ts: int = 0
    last_latency_ms: float = 0.0
    max_latency_ms: float = 0.0
    touched: int = 0


HOLDER_HISTORY = 64  # holder changes kept per lease (days of normal operation)
RENEW_HISTORY = 120  # renew attempts kept per lease (4 min at the default 2 s retry period)


@dataclass(slots=True)
class LeaseRecord(Record):
    """One Lease (namespace/name): holder timeline, renew latency and failures."""

    name: str = ""
    holder: str = ""
    transitions: int = 0  # leaseTransitions as reported (the highest seen)
    changes: int = 0  # holder changes this reducer saw
    lease_duration_s: float = 0.0
    skew_ms: float = 0.0  # the last observed renewTime - local clock
    max_abs_skew_ms: float = 0.0
    acquired: int = 0
    lost: int = 0
    released: int = 0
    attempts: dict[str, int] = field(default_factory=dict)  # acquire attempt result -> count
    failures: dict[str, int] = field(default_factory=dict)  # renew failure reason -> count
    holders: dict[str, HolderRecord] = field(default_factory=dict)
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HOLDER_HISTORY))
    renew_history: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=RENEW_HISTORY)
    )
    renew_latency: Histogram = field(default_factory=Histogram)
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "holders": _records(HolderRecord),
        "history": _ring(HOLDER_HISTORY),
        "renew_history": _ring(RENEW_HISTORY),
        "renew_latency": Histogram.from_dict,
    }


# ---------------------------------------------------------------------------------------------
# Informers, controllers, queues, API
# ---------------------------------------------------------------------------------------------


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
    lists: int = 0
    list_errors: int = 0
    list_items: int = 0
    list_bytes: int = 0
    list_pages: int = 0
    list_ms: float = 0.0
    watch_opens: int = 0
    watch_closes: dict[str, int] = field(default_factory=dict)  # reason -> count
    watch_events: int = 0
    relists: int = 0
    relist_reasons: dict[str, int] = field(default_factory=dict)
    backoffs: int = 0
    last_backoff_ms: float = 0.0
    resource_version: str = ""
    last_error: str = ""
    last_error_ts: int = 0
    handler_lost: int = 0
    touched: int = 0


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


SLOWEST_KEYS = 50
FAILING_KEYS = 50


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

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "wait": Histogram.from_dict,
        "work": Histogram.from_dict,
        "add_rate": RateWindow.load,
    }


@dataclass(slots=True)
class ApiRecord(Record):
    """One instance's API requests. ``errors`` counts 5xx answers and no answer (code 0)."""

    instance: str = ""
    requests: int = 0
    verbs: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)  # "2xx", "4xx", "5xx", "none", ...
    errors: int = 0
    retries: int = 0
    bytes: int = 0
    rate_limiter_wait_ms: float = 0.0
    latency: Histogram = field(default_factory=Histogram)
    rate: RateWindow = field(default_factory=RateWindow)
    touched: int = 0

    _LOAD: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "latency": Histogram.from_dict,
        "rate": RateWindow.load,
    }
