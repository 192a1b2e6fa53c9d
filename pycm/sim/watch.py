"""Watchers: one per open watch, each with its own bounded queue.

The store offers every change to every watcher synchronously (``offer`` is O(1) and never
blocks); a watcher filters by namespace, label and field selector and translates selector
transitions the way kube-apiserver's watch cache does: a MODIFIED that brings an object into
the selection is delivered as ADDED, one that takes it out as DELETED (carrying the new object).
A shardSelector (:mod:`pycm.sim.shardselector`) filters too; it reads only uid or namespace,
which never change, so it never causes a transition.

A watcher that falls more than ``capacity`` live events behind is ended (``overflowed``), never
buffered without bound: its client relists and rewatches, as client-go's reflector does when
the apiserver drops a slow watch. The initial events (the synthetic ADDED of the current state,
or the replay from the retained history) are finite and not counted against the capacity.

Each queued entry carries the object's JSON encoding when the store made one at commit
(``StoreEvent.encoded``), so a typed watch serves those bytes instead of encoding the object
again for every watcher.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pycm.sim.objects import Obj
from pycm.sim.resources import ResourceKey
from pycm.sim.selectors import FieldSelector, LabelSelector
from pycm.sim.shardselector import ShardSelector

__all__ = ["ADDED", "BOOKMARK", "DELETED", "ERROR", "MODIFIED", "Entry", "StoreEvent", "Watcher"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class StoreEvent:
    """One change in the store. ``obj`` and ``old`` are the store's own copies: never mutate.

    ``encoded`` is ``orjson.dumps(obj)`` as the store made it at commit (None when it did not):
    the same bytes a watch would produce, since the object never changes afterwards.
    """

    type: str
    resource: ResourceKey
    obj: Obj
    old: Obj | None
    rv: int
    encoded: bytes | None = None


# A queued event: (type as this watcher sees it, the object, its JSON encoding or None).
Entry = tuple[str, Obj, bytes | None]


class Watcher:
    """A filtered, bounded view of the store's change stream."""

    def __init__(
        self,
        resource: ResourceKey,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        capacity: int,
        on_stop: Callable[[Watcher], None],
        shards: ShardSelector | None = None,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.shards = shards
        # Without selectors only the namespace decides what this watcher sees.
        self._unselective = labels.empty and fields.empty and shards is None
        self.capacity = capacity
        self._on_stop = on_stop
        # Invariant: len(_live) <= capacity; nothing is added once `closed`.
        self._initial: deque[Entry] = deque()
        self._live: deque[Entry] = deque()
        self._wake = asyncio.Event()
        self.closed = False
        self.overflowed = False
        self.close_reason = ""

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.shards is not None and not self.shards.matches(obj):
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def translate(self, event: StoreEvent) -> tuple[str, Obj] | None:
        """The event this watcher sees for ``event``, if any."""
        if event.resource != self.resource:
            return None
        if self._unselective:
            # An object never changes namespace, so no transition: seen as it is, or not at all
            # (the same answer as below, without matching the old object too: a replayed
            # backlog translates every event of the history).
            if self.namespace is None:
                return event.type, event.obj
            meta = event.obj.get("metadata") or {}
            return (event.type, event.obj) if meta.get("namespace", "") == self.namespace else None
        now = self.matches(event.obj)
        if event.type != MODIFIED or event.old is None:
            return (event.type, event.obj) if now else None
        before = self.matches(event.old)
        if now and before:
            return (MODIFIED, event.obj)
        if now:
            return (ADDED, event.obj)
        if before:
            return (DELETED, event.obj)
        return None

    def add_initial(self, type_: str, obj: Obj, encoded: bytes | None = None) -> None:
        self._initial.append((type_, obj, encoded))
        self._wake.set()

    def replay(self, events: Iterable[StoreEvent]) -> None:
        """Queue, as initial entries, what this watcher sees of ``events`` (the history)."""
        translate = self.translate
        entries = [
            (seen[0], seen[1], event.encoded)
            for event in events
            if (seen := translate(event)) is not None
        ]
        if entries:
            self._initial.extend(entries)
            self._wake.set()

    def offer(self, event: StoreEvent) -> None:
        if self.closed:
            return
        seen = self.translate(event)
        if seen is None:
            return
        if len(self._live) >= self.capacity:
            self.overflowed = True
            self.close("watcher fell behind: queue capacity exceeded")
            return
        self._live.append((seen[0], seen[1], event.encoded))
        self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._initial) + len(self._live)

    def pop_entry(self) -> Entry | None:
        """The next queued entry without waiting (None when empty)."""
        if self._initial:
            return self._initial.popleft()
        if self._live:
            return self._live.popleft()
        return None

    def pop(self) -> tuple[str, Obj] | None:
        """The next queued event without waiting (None when empty)."""
        entry = self.pop_entry()
        return None if entry is None else (entry[0], entry[1])

    async def wait(self, wait_seconds: float | None = None) -> bool:
        """Wait until an entry is queued (True) or ``wait_seconds`` pass or the watcher closes
        (False). It returns at once when one is queued already: a consumer that drains every
        queued entry after each wake-up pays for a wait once a batch, not once an event."""
        while not self.closed:
            if self._initial or self._live:
                return True
            self._wake.clear()
            if wait_seconds is not None and wait_seconds <= 0:
                return False
            try:
                async with asyncio.timeout(wait_seconds):
                    await self._wake.wait()
            except TimeoutError:
                return False
        return False

    async def next(self, wait_seconds: float | None = None) -> tuple[str, Obj] | None:
        """The next event; None on timeout or once closed and drained (check ``closed``).

        A closed watcher drops what it had queued: an ended watch delivers nothing more.
        """
        if not await self.wait(wait_seconds):
            return None
        return self.pop()

    def close(self, reason: str = "closed") -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self._initial.clear()
        self._live.clear()
        self._wake.set()
        self._on_stop(self)

    def stop(self) -> None:
        """The consumer is done (client went away): unregister."""
        self.close("stopped")
