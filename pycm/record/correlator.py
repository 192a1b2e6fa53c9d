"""client-go's event correlator (tools/record/events_cache.go), in pycm's words.

Three stages, in order, for each event:

1. **spam filter** — a token bucket per (source, involved object): burst 25, refilled at one
   token every 5 minutes. An object that produces events faster than that loses the excess.
2. **aggregator** — events alike in everything but the message (same source, object, type,
   reason) are counted in a 10-minute window; from the 10th such event on, they are combined
   into one event whose message is "(combined from similar events): <latest message>".
3. **logger (de-duplication)** — an event identical to one already written (message included)
   becomes a patch of that Event: count + 1 and a new lastTimestamp, instead of a new object.

Caches are LRU-bounded (client-go uses 4096 entries) so memory never grows with the number of
distinct objects.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pycm.util.clock import REAL_CLOCK, Clock
from pycm.util.ratelimit import TokenBucket

__all__ = ["CorrelationResult", "EventCorrelator"]

MAX_LRU_CACHE_ENTRIES = 4096
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_S = 600.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(slots=True)
class _Aggregate:
    local_keys: set[str] = field(default_factory=set)
    last_seen: float = 0.0


@dataclass(slots=True)
class _Logged:
    count: int
    first_timestamp: str
    name: str
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class CorrelationResult:
    """``event`` is what to write; with ``patch`` it is an update of an existing Event named
    ``event['metadata']['name']``; ``skip`` means the spam filter dropped it."""

    event: dict[str, Any]
    patch: dict[str, Any] | None = None
    skip: bool = False
    aggregated: bool = False


def _object_key(event: dict[str, Any]) -> tuple[str, ...]:
    obj = event.get("involvedObject", {})
    source = event.get("source", {})
    return (
        str(source.get("component", "")),
        str(source.get("host", "")),
        str(obj.get("kind", "")),
        str(obj.get("namespace", "")),
        str(obj.get("name", "")),
        str(obj.get("uid", "")),
        str(obj.get("apiVersion", "")),
    )


class EventCorrelator:
    def __init__(self, clock: Clock = REAL_CLOCK, cache_size: int = MAX_LRU_CACHE_ENTRIES):
        self._clock = clock
        self._spam: _LRU[tuple[str, ...], TokenBucket] = _LRU(cache_size)
        self._aggregates: _LRU[tuple[str, ...], _Aggregate] = _LRU(cache_size)
        self._logged: _LRU[tuple[str, ...], _Logged] = _LRU(cache_size)

    def correlate(self, event: dict[str, Any], now_text: str) -> CorrelationResult:
        """Decide how to write ``event`` (a fresh Event body with count 1). ``now_text`` is
        the RFC 3339 time the recorder stamps on it."""
        object_key = _object_key(event)
        bucket = self._spam.get(object_key)
        if bucket is None:
            bucket = TokenBucket(SPAM_QPS, SPAM_BURST, clock=self._clock)
            self._spam.put(object_key, bucket)
        if not bucket.try_accept():
            return CorrelationResult(event, skip=True)

        aggregate_key = (*object_key, str(event.get("type", "")), str(event.get("reason", "")))
        message = str(event.get("message", ""))
        now = self._clock.monotonic()
        record = self._aggregates.get(aggregate_key)
        if record is None or now - record.last_seen > AGGREGATE_INTERVAL_S:
            record = _Aggregate()
        record.local_keys.add(message)
        record.last_seen = now
        self._aggregates.put(aggregate_key, record)
        aggregated = False
        if len(record.local_keys) >= AGGREGATE_MAX_EVENTS:
            event = {**event, "message": COMBINED_PREFIX + message}
            aggregated = True
            log_key = (*aggregate_key, COMBINED_PREFIX)
        else:
            log_key = (*aggregate_key, message)

        logged = self._logged.get(log_key)
        if logged is None:
            meta = event.get("metadata", {})
            self._logged.put(
                log_key,
                _Logged(1, str(event.get("firstTimestamp", now_text)), meta.get("name", "")),
            )
            return CorrelationResult(event, aggregated=aggregated)
        logged.count += 1
        event = {
            **event,
            "metadata": {**event.get("metadata", {}), "name": logged.name},
            "count": logged.count,
            "firstTimestamp": logged.first_timestamp,
            "lastTimestamp": now_text,
        }
        patch = {"count": logged.count, "lastTimestamp": now_text, "message": event["message"]}
        return CorrelationResult(event, patch=patch, aggregated=aggregated)
