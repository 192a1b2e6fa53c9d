"""The watch history: the newest store events, for watches that resume from a version.

Bounded twice — by count (``window`` events, ``--watch-window``) and by bytes (``max_bytes``,
see :func:`event_size`) — so a cluster of large objects under churn cannot hold ``window`` of
them: memory plateaus whatever the object size. kube-apiserver's watch cache is
bounded the same way in spirit (a capacity, and events older than a few minutes dropped).

Invariant: every event with rv > ``compacted_rv`` is retained, in rv order; so a watch from
rv >= ``compacted_rv`` can be served exactly, and one from an older rv gets 410 Expired (its
client relists). Events fall out oldest first (the newest is always kept); :meth:`compact`
drops them all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from pycm.sim import errors
from pycm.sim.watch import StoreEvent

__all__ = ["DEFAULT_HISTORY_BYTES", "History", "event_size"]

# 64 MiB counted by event_size: ~10k events of ~3 KiB pods, the default 10k-event window of
# ordinary pods, while a churn of 100 KiB ConfigMaps keeps ~330 of them rather than 10k (2 GB).
DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024


def event_size(encoded: bytes) -> int:
    """What an event whose object encodes to ``encoded`` counts against ``max_bytes``: the
    encoding it holds (served as is by typed watches), plus as much again standing for the
    object's dict (which holds a few times more; the count is a bound, not a measure)."""
    return 2 * len(encoded)


class History:
    def __init__(self, window: int, max_bytes: int = DEFAULT_HISTORY_BYTES) -> None:
        if window < 1:
            raise ValueError("the watch window must hold at least 1 event")
        if max_bytes < 1:
            raise ValueError("the watch history must hold at least 1 byte")
        self._window = window
        self.max_bytes = max_bytes
        # (event, its size): sizes are kept so eviction need not re-measure.
        self._events: deque[tuple[StoreEvent, int]] = deque()
        self.bytes = 0  # the sum of the retained events' sizes
        self.compacted_rv = 0

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: StoreEvent, size: int = 0) -> None:
        """Retain ``event`` (``size`` bytes), dropping the oldest past either bound."""
        self._events.append((event, size))
        self.bytes += size
        events = self._events
        while len(events) > self._window or (self.bytes > self.max_bytes and len(events) > 1):
            dropped, dropped_size = events.popleft()
            self.bytes -= dropped_size
            self.compacted_rv = dropped.rv

    def since(self, rv: int) -> Iterator[StoreEvent]:
        """Every retained event after ``rv`` (410 Expired if some were dropped)."""
        self.check(rv)
        return (event for event, _ in list(self._events) if event.rv > rv)

    def check(self, rv: int, what: str = "") -> None:
        if rv < self.compacted_rv:
            raise errors.expired(what or f"too old resource version: {rv} ({self.compacted_rv})")

    def compact(self, rv: int) -> None:
        """Forget everything up to and including ``rv`` (the current version)."""
        self._events.clear()
        self.bytes = 0
        self.compacted_rv = rv
