"""client-go's event correlator (tools/record/events_cache.go), behaviour for behaviour.

Each event passes three stages, in client-go's order:

1. **aggregator** — events alike in everything but the message (the key of
   :func:`event_aggregator_by_reason`: source, involved object, type, reason, reporting
   controller and instance) are tracked per 10-minute window (reset once the previous one is
   older than that); once 10 distinct messages are in the window, the event is replaced by a
   fresh one whose message is "(combined from similar events): <latest message>", correlated
   under the aggregate key (and one message leaves the set, so it stays at 9 + the new one).
2. **logger (de-duplication)** — an event whose cache key was seen before becomes a patch of
   the Event first written: its name, resourceVersion and firstTimestamp, count + 1, and a
   patch of ``count``, ``lastTimestamp`` and ``message``. The observation is recorded whatever
   the next stage decides, so a filtered repeat still counts.
3. **spam filter** — a token bucket per :func:`get_spam_key` (source and involved object):
   25 events at once, then one every 5 minutes. An event over the limit is skipped.

:meth:`EventCorrelator.update_state` records what the server returned (its name, count and
resourceVersion) under the event's full key, as the broadcaster does after each write.

Keys are the fields joined with no separator, exactly as client-go joins them. Every cache is
an LRU of ``lru_cache_size`` entries (4096), so memory never grows with the objects seen.
Intervals and the token buckets read the clock's monotonic time; the names and timestamps of
combined events, its wall time — one reading of each per stage, as client-go reads its clock.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "COMBINED_PREFIX",
    "CorrelationResult",
    "CorrelatorOptions",
    "EventCorrelator",
    "event_aggregator_by_reason",
    "event_aggregator_by_reason_message",
    "get_event_key",
    "get_spam_key",
    "populate_defaults",
]

Event = Mapping[str, Any]
KeyFunc = Callable[[Event], tuple[str, str]]
MessageFunc = Callable[[Event], str]
SpamKeyFunc = Callable[[Event], str]

MAX_LRU_CACHE_ENTRIES = 4096
# More than 10 events alike but for the message within 10 minutes are aggregated.
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_S = 600
# A source may send 25 events about an object at once, then one every 5 minutes: the long tail
# of events about something always unhealthy stays small.
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _source(event: Event) -> Mapping[str, Any]:
    return event.get("source") or {}


def _involved(event: Event) -> Mapping[str, Any]:
    return event.get("involvedObject") or {}


def get_event_key(event: Event) -> str:
    """The full key: source, involved object (field path included), type, reason, message."""
    src, obj = _source(event), _involved(event)
    return "".join(
        _text(v)
        for v in (
            src.get("component"),
            src.get("host"),
            obj.get("kind"),
            obj.get("namespace"),
            obj.get("name"),
            obj.get("fieldPath"),
            obj.get("uid"),
            obj.get("apiVersion"),
            event.get("type"),
            event.get("reason"),
            event.get("message"),
        )
    )


def get_spam_key(event: Event) -> str:
    """The spam filter's default key: the source and the involved object (no field path)."""
    src, obj = _source(event), _involved(event)
    return "".join(
        _text(v)
        for v in (
            src.get("component"),
            src.get("host"),
            obj.get("kind"),
            obj.get("namespace"),
            obj.get("name"),
            obj.get("uid"),
            obj.get("apiVersion"),
        )
    )


def event_aggregator_by_reason(event: Event) -> tuple[str, str]:
    """(aggregate key, local key): events with the same source, involved object (no field
    path), type, reason, reporting controller and instance aggregate; the message tells them
    apart (EventAggregatorByReasonFunc)."""
    src, obj = _source(event), _involved(event)
    key = "".join(
        _text(v)
        for v in (
            src.get("component"),
            src.get("host"),
            obj.get("kind"),
            obj.get("namespace"),
            obj.get("name"),
            obj.get("uid"),
            obj.get("apiVersion"),
            event.get("type"),
            event.get("reason"),
            event.get("reportingComponent"),  # ReportingController's JSON name
            event.get("reportingInstance"),
        )
    )
    return key, _text(event.get("message"))


def event_aggregator_by_reason_message(event: Event) -> str:
    """The combined event's message (EventAggregatorByReasonMessageFunc)."""
    return COMBINED_PREFIX + _text(event.get("message"))


def _float32(value: float) -> float:
    # client-go's QPS is a float32: 1/300 is 0.0033333334 there.
    return float(struct.unpack("f", struct.pack("f", value))[0])


@dataclass(frozen=True)
class CorrelatorOptions:
    """client-go's CorrelatorOptions; a zero value (0 / None) takes the default."""

    lru_cache_size: int = 0  # 4096
    burst_size: int = 0  # 25
    qps: float = 0.0  # 1/300
    key_func: KeyFunc | None = None  # event_aggregator_by_reason
    message_func: MessageFunc | None = None  # event_aggregator_by_reason_message
    max_events: int = 0  # 10
    max_interval_in_seconds: int = 0  # 600
    clock: Clock | None = None  # the real clock
    spam_key_func: SpamKeyFunc | None = None  # get_spam_key


def populate_defaults(options: CorrelatorOptions) -> CorrelatorOptions:
    """``options`` with every zero value replaced by its default (populateDefaults)."""
    return replace(
        options,
        lru_cache_size=options.lru_cache_size or MAX_LRU_CACHE_ENTRIES,
        burst_size=options.burst_size or DEFAULT_SPAM_BURST,
        qps=options.qps or DEFAULT_SPAM_QPS,
        key_func=options.key_func or event_aggregator_by_reason,
        message_func=options.message_func or event_aggregator_by_reason_message,
        max_events=options.max_events or DEFAULT_AGGREGATE_MAX_EVENTS,
        max_interval_in_seconds=options.max_interval_in_seconds or DEFAULT_AGGREGATE_INTERVAL_S,
        clock=options.clock or REAL_CLOCK,
        spam_key_func=options.spam_key_func or get_spam_key,
    )


class _LRU(Generic[K, V]):
    """groupcache's lru.Cache: a get or an add makes the entry the newest; past ``size``
    entries the oldest goes."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class _PassiveTokenBucket:
    """x/time/rate's limiter as client-go's passive rate limiter uses it: full at first, the
    clock read only when asked; a refused request changes nothing."""

    __slots__ = ("_burst", "_last_ns", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int) -> None:
        self._qps = qps
        self._burst = burst
        self._tokens = float(burst)
        self._last_ns: int | None = None

    def try_accept(self, now_ns: int) -> bool:
        tokens = float(self._burst)
        if self._last_ns is not None:
            elapsed = max(0, now_ns - self._last_ns) / 1e9
            tokens = min(float(self._burst), self._tokens + elapsed * self._qps)
        if tokens < 1.0:
            return False
        self._tokens = tokens - 1.0
        self._last_ns = now_ns
        return True


class EventSourceObjectSpamFilter:
    """A token bucket per spam key (NewEventSourceObjectSpamFilter)."""

    def __init__(
        self, lru_cache_size: int, burst: int, qps: float, clock: Clock, spam_key_func: SpamKeyFunc
    ) -> None:
        self._cache: _LRU[str, _PassiveTokenBucket] = _LRU(lru_cache_size)
        self._burst = burst
        self._qps = _float32(qps)
        self._clock = clock
        self._key = spam_key_func

    def filter(self, event: Event) -> bool:
        """True when the event must be skipped (its source and object are over the rate)."""
        key = self._key(event)
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = _PassiveTokenBucket(self._qps, self._burst)
        skip = not bucket.try_accept(self._clock.monotonic_ns())
        self._cache.add(key, bucket)
        return skip


@dataclass(slots=True)
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last_ns: int = 0  # monotonic time the aggregate was last recorded


def _time_text(wall_ns: int) -> str:
    return dt.datetime.fromtimestamp(wall_ns / 1e9, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventAggregator:
    """Groups similar events and replaces them by a combined one (NewEventAggregator)."""

    def __init__(
        self,
        lru_cache_size: int,
        key_func: KeyFunc,
        message_func: MessageFunc,
        max_events: int,
        max_interval_in_seconds: int,
        clock: Clock,
    ) -> None:
        self._cache: _LRU[str, _AggregateRecord] = _LRU(lru_cache_size)
        self._key = key_func
        self._message = message_func
        self._max_events = max_events
        self._max_interval_ns = max_interval_in_seconds * 10**9
        self._clock = clock

    def aggregate(self, event: Event) -> tuple[dict[str, Any], str, bool]:
        """(the event to write, its cache key, whether it is a combined event) — the full key
        for an ordinary event, the aggregate key for a combined one."""
        now_ns = self._clock.monotonic_ns()
        event_key = get_event_key(event)
        aggregate_key, local_key = self._key(event)
        record = self._cache.get(aggregate_key)
        if record is None or now_ns - record.last_ns > self._max_interval_ns:
            record = _AggregateRecord()
        record.local_keys.add(local_key)
        record.last_ns = now_ns
        self._cache.add(aggregate_key, record)
        if len(record.local_keys) < self._max_events:
            return dict(event), event_key, False
        record.local_keys.pop()  # never grow past the threshold
        wall_ns = self._clock.wall_ns()
        stamp = _time_text(wall_ns)
        obj = _involved(event)
        combined: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{_text(obj.get('name'))}.{wall_ns:x}",
                "namespace": (event.get("metadata") or {}).get("namespace", ""),
            },
            "count": 1,
            "firstTimestamp": stamp,
            "involvedObject": dict(obj),
            "lastTimestamp": stamp,
            "message": self._message(event),
            "type": event.get("type", ""),
            "reason": event.get("reason", ""),
            "source": dict(_source(event)),
        }
        return combined, aggregate_key, True


@dataclass(slots=True)
class _EventLog:
    count: int
    first_timestamp: Any
    name: str
    resource_version: str


class EventLogger:
    """Counts the occurrences of each event by cache key (newEventLogger)."""

    def __init__(self, lru_cache_size: int) -> None:
        self._cache: _LRU[str, _EventLog] = _LRU(lru_cache_size)

    def observe(
        self, event: Mapping[str, Any], key: str
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the event, the patch to write it with — None for a first occurrence)."""
        observed = dict(event)
        patch: dict[str, Any] | None = None
        last = self._cache.get(key)
        if last is not None and last.count > 0:
            meta = {**(event.get("metadata") or {}), "name": last.name}
            if last.resource_version:
                meta["resourceVersion"] = last.resource_version
            else:
                meta.pop("resourceVersion", None)
            observed["metadata"] = meta
            observed["firstTimestamp"] = last.first_timestamp
            observed["count"] = last.count + 1
            # The two-way merge patch from a copy with count 0, lastTimestamp at the epoch and
            # no message: what differs from that.
            patch = {"count": observed["count"]}
            if observed.get("lastTimestamp") not in (None, "1970-01-01T00:00:00Z"):
                patch["lastTimestamp"] = observed["lastTimestamp"]
            if observed.get("message"):
                patch["message"] = observed["message"]
        self._record(key, observed)
        return observed, patch

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Record the server's copy of a written event under its full key."""
        self._record(get_event_key(event), event)

    def _record(self, key: str, event: Mapping[str, Any]) -> None:
        meta = event.get("metadata") or {}
        self._cache.add(
            key,
            _EventLog(
                count=int(event.get("count") or 0),
                first_timestamp=event.get("firstTimestamp"),
                name=_text(meta.get("name")),
                resource_version=_text(meta.get("resourceVersion")),
            ),
        )


@dataclass(frozen=True, slots=True)
class CorrelationResult:
    """``event`` is what to write: a new Event, or (``count`` > 1) an update of the Event named
    ``event['metadata']['name']`` with ``patch``; ``skip``: the spam filter dropped it
    (``event`` is then what would have been written). ``aggregated``: a combined event."""

    event: dict[str, Any]
    patch: dict[str, Any] | None = None
    skip: bool = False
    aggregated: bool = False


class EventCorrelator:
    """Filters, aggregates, counts and de-duplicates events (NewEventCorrelatorWithOptions;
    ``EventCorrelator(clock=c)`` is NewEventCorrelator(c))."""

    def __init__(
        self, options: CorrelatorOptions | None = None, *, clock: Clock | None = None
    ) -> None:
        base = options or CorrelatorOptions()
        if clock is not None:
            base = replace(base, clock=clock)
        opts = self.options = populate_defaults(base)
        # populate_defaults set every callable and the clock; the fallbacks only say so to mypy.
        clock_ = opts.clock or REAL_CLOCK
        self._filter = EventSourceObjectSpamFilter(
            opts.lru_cache_size,
            opts.burst_size,
            opts.qps,
            clock_,
            opts.spam_key_func or get_spam_key,
        )
        self._aggregator = EventAggregator(
            opts.lru_cache_size,
            opts.key_func or event_aggregator_by_reason,
            opts.message_func or event_aggregator_by_reason_message,
            opts.max_events,
            opts.max_interval_in_seconds,
            clock_,
        )
        self._logger = EventLogger(opts.lru_cache_size)

    def correlate(self, event: Event) -> CorrelationResult:
        """Decide how to write ``event`` (a fresh Event body with count 1 and its timestamps)."""
        aggregated, key, combined = self._aggregator.aggregate(event)
        observed, patch = self._logger.observe(aggregated, key)
        if self._filter.filter(observed):
            return CorrelationResult(observed, skip=True, aggregated=combined)
        return CorrelationResult(observed, patch=patch, aggregated=combined)

    def update_state(self, event: Event) -> None:
        """Record the server's state of a written event (its name, resourceVersion, count)."""
        self._logger.update_state(event)
