"""The state's building blocks: records, their tables, label counters and rate windows.

Each domain's record is a slotted dataclass (a :class:`Record`) whose fields are scalars, plain
dicts/lists of scalars, a :class:`~pycm.trace.histogram.Histogram`, a :class:`RateWindow`, a
bounded deque, or a :class:`BoundedTable` of other records. :meth:`Record.dump` turns one into
plain JSON-able data and :meth:`Record.load` rebuilds it exactly (so a restored state continues
as if it had seen every event); derived values (percentiles, rates) appear in dumps but are
ignored by ``load``.

Recency for eviction is ``touched``: the state's count of applied events when the record was
last updated (never a clock). A :class:`BoundedTable` evicts the least recently touched record.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import deque
from collections.abc import Callable, Hashable
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypedDict, TypeVar

from pycm.trace.histogram import Histogram

__all__ = [
    "OTHER",
    "BoundedTable",
    "HistogramSnapshot",
    "RateWindow",
    "Record",
    "bump",
    "ms_to_ns",
    "plain",
    "records",
    "ring",
    "text_key",
]

RATE_SLOTS = 60  # seconds of per-second counts kept for rates
OTHER = "(other)"  # the label counted once a label table is full
MAX_LABELS = 32  # distinct labels (verbs, reasons) per counter table; more go to OTHER

_R = TypeVar("_R", bound="Record")


class HistogramSnapshot(TypedDict):
    """A latency histogram in ms (:mod:`pycm.trace.histogram`)."""

    count: Annotated[int, "observations"]
    sum: Annotated[float, "their sum (ms)"]
    min: Annotated[float | None, "the smallest (null when empty)"]
    max: Annotated[float | None, "the largest (null when empty)"]
    buckets: Annotated[list[list[int]], "[bucket index, count] of the non-empty buckets"]
    p50: Annotated[float | None, "the median (null when empty)"]
    p90: Annotated[float | None, "the 90th percentile (null when empty)"]
    p99: Annotated[float | None, "the 99th percentile (null when empty)"]


class _Touched(Protocol):
    touched: int


_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V", bound=_Touched)


class BoundedTable(dict[_K, _V], Generic[_K, _V]):
    """A keyed collection of records that holds at most ``cap`` of them.

    ``table[key]`` is the one way the state reaches a record: it returns the record of ``key``,
    made by ``make(key)`` when absent (evicting the least recently touched one when full); the
    caller then stamps ``touched`` with its recency. A hit costs no Python call (the dict's own
    lookup; :meth:`__missing__` runs only on a miss), which keeps ``State.apply`` as fast as the
    hand-written tables it replaced. ``make`` raises :class:`TypeError` for a key of the wrong
    type (a hand-edited recording), which the state counts as malformed. Invariant:
    ``len(self) <= cap``. It is a dict, so snapshots and merges read it as one.
    """

    __slots__ = ("cap", "make")

    def __init__(self, cap: int, make: Callable[[_K], _V]) -> None:
        super().__init__()
        self.cap = cap
        self.make = make

    def __missing__(self, key: _K) -> _V:
        rec = self.make(key)  # before evicting: a bad key must not cost a record
        if len(self) >= self.cap:
            self.evict()
        self[key] = rec
        return rec

    def touch(self, key: _K, stamp: int) -> _V:
        """``table[key]`` stamped with ``stamp``."""
        rec = self[key]
        rec.touched = stamp
        return rec

    def evict(self) -> None:
        """Remove the least recently touched record (O(n); only when full)."""
        victim = min(self, key=lambda k: self[k].touched)
        del self[victim]

    def fill(self, items: Any) -> None:
        """Replace the contents by ``(key, record)`` pairs (a restore), keeping the cap."""
        self.clear()
        for key, rec in items:
            if len(self) >= self.cap:
                self.evict()
            self[key] = rec


def text_key(value: object) -> str:
    """``value`` if it is a str (a table name from an event), else :class:`TypeError`."""
    if value.__class__ is not str:
        raise TypeError("table names are strings")  # counted as malformed
    return value


# A duration from a (possibly hand-written or corrupt) event is bounded so that the arithmetic
# on it stays inside the signed 64-bit range every JSON encoder of a snapshot accepts.
_MAX_DURATION_NS = 2**53


def ms_to_ns(ms: float) -> int:
    """A duration in ms from an event as bounded, non-negative nanoseconds."""
    return int(min(max(ms, 0.0) * 1e6, _MAX_DURATION_NS))


def bump(table: dict[str, int], label: str, n: int = 1) -> None:
    """``table[label] += n``, folding new labels into :data:`OTHER` once the table is full."""
    if label in table:
        table[label] += n
    elif len(table) < MAX_LABELS:
        table[str(label)] = n
    else:
        table[OTHER] = table.get(OTHER, 0) + n


class RateWindow:
    """Per-second event counts for the last :data:`RATE_SLOTS` seconds, keyed by event ``ts``.

    Slot ``s % RATE_SLOTS`` holds second ``s``; a count for a second older than the one its slot
    now holds is dropped (it is out of the window). Clock-free: rates are asked for at a given
    ``now`` (the state passes the newest event ts it has seen).
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
    """Base of the state's records: generic dump/load over the dataclass fields.

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


def records(cls: type[Any], cap: int) -> Callable[[Any], BoundedTable[str, Any]]:
    """The loader of a dumped table of ``cls`` records (``{name: record}``)."""

    def load(data: Any) -> BoundedTable[str, Any]:
        table: BoundedTable[str, Any] = BoundedTable(cap, lambda _: cls())
        table.fill((k, cls.load(v)) for k, v in (data or {}).items())
        return table

    return load


def ring(maxlen: int) -> Callable[[Any], deque[Any]]:
    """The loader of a dumped bounded ring (a list, oldest first)."""
    return lambda data: deque((_copy(v) for v in data or ()), maxlen=maxlen)
