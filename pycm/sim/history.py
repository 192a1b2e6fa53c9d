"""The watch history: the newest ``window`` store events, for watches that resume from a version.

Invariant: every event with rv > ``compacted_rv`` is retained, in rv order; so a watch from
rv >= ``compacted_rv`` can be served exactly, and one from an older rv gets 410 Expired (its
client relists). Events fall out of the window oldest first; :meth:`compact` drops them all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from pycm.sim import errors
from pycm.sim.watch import StoreEvent

__all__ = ["History"]


class History:
    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError("the watch window must hold at least 1 event")
        self._events: deque[StoreEvent] = deque(maxlen=window)
        self.compacted_rv = 0

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: StoreEvent) -> None:
        if len(self._events) == self._events.maxlen:
            self.compacted_rv = self._events[0].rv
        self._events.append(event)

    def since(self, rv: int) -> Iterator[StoreEvent]:
        """Every retained event after ``rv`` (410 Expired if some were dropped)."""
        self.check(rv)
        return (event for event in list(self._events) if event.rv > rv)

    def check(self, rv: int, what: str = "") -> None:
        if rv < self.compacted_rv:
            raise errors.expired(what or f"too old resource version: {rv} ({self.compacted_rv})")

    def compact(self, rv: int) -> None:
        """Forget everything up to and including ``rv`` (the current version)."""
        self._events.clear()
        self.compacted_rv = rv
