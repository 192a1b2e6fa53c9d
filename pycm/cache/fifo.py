"""The ordered FIFO between the reflector and the informer's indexer (client-go ``RealFIFO``).

Choice: client-go's current design (``RealFIFO``, the informer default since 1.33), not
``DeltaFIFO``. Every delta is queued and popped in arrival order, with no per-key merging: the
indexer and the handlers see exactly the sequence the watch delivered, which is simpler to reason
about and to trace (one watch event → one delta → one notification), and it avoids DeltaFIFO's
per-key lists, de-duplication of consecutive deletes and the key re-queueing on each delta. What
DeltaFIFO's merging bought — fewer handler calls for a hot key — matters little here, because
handlers only compute keys and enqueue them into a de-duplicating work queue anyway.

:meth:`replace` queues ``Replaced`` for every listed object, then ``Deleted`` with a
:class:`~pycm.cache.store.DeletedFinalStateUnknown` tombstone for each key the consumer knows
(the indexer, adjusted by deltas still queued) that the list no longer has. :meth:`resync` queues
``Sync`` for every known key that has nothing queued.

Bounded? No, on purpose: both ends are ours. The producer is our reflector and the consumer is
the informer's processing loop, which only updates the in-memory indexer and pushes into the
handlers' own bounded buffers — it never waits for a handler — so the queue only holds what
arrived during one turn of the event loop (at most a list's worth after a Replace). Bounding it
would force either blocking the reflector (and so the socket) or dropping deltas, which would
corrupt the cache. The slow consumers we do not control — event handlers — are bounded.

The ``transform`` is applied on the way in (client-go applies it when queueing), to every object
except tombstones and Sync deltas (those come from the indexer, already transformed).

The consumer's resource version (client-go's ``LastStoreSyncResourceVersion``, what the
controllers' staleness guard compares its writes with): the reflector notes the RV it has
given the queue up to (:meth:`note_resource_version`: a list's, the last watch event's or
bookmark's); :attr:`resource_version` becomes it once every delta queued before the note has
been popped — so it never runs ahead of what the indexer holds.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from pycm.cache.listwatch import Obj
from pycm.cache.store import DeletedFinalStateUnknown, KeyFunc, KeyListerGetter, meta_namespace_key
from pycm.util.wakeup import Wakeup

__all__ = ["Delta", "DeltaType", "RealFIFO", "TransformFunc"]

TransformFunc = Callable[[Obj], Obj]


class DeltaType(enum.StrEnum):
    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"  # queued by replace() for a listed object
    SYNC = "Sync"  # queued by resync() for a known object


# The members as plain globals: an enum member read through its class costs a descriptor call
# (Python 3.11), and add/update run once per watch event.
_ADDED, _UPDATED = DeltaType.ADDED, DeltaType.UPDATED

Delta = tuple[DeltaType, Any]
"""A change and its object (a tombstone for some Deleted deltas)."""


class RealFIFO:
    """An ordered queue of deltas with ``Replace``/``Resync`` that know the consumer's state.

    Invariants: ``_queue`` holds deltas in arrival order; ``_enqueued - _popped == len(_queue)``;
    ``_initial_target`` is None until the first write, then the value of ``_enqueued`` right
    after it — the initial population is the deltas numbered below it.
    """

    def __init__(
        self,
        known_objects: KeyListerGetter,
        *,
        key_func: KeyFunc = meta_namespace_key,
        transform: TransformFunc | None = None,
    ) -> None:
        self._known = known_objects
        self._key = key_func
        self._transform = transform
        self._queue: deque[Delta] = deque()
        self._wakeup = Wakeup()  # the consumer parked in pop_batch
        self._enqueued = 0
        self._popped = 0
        self._initial_target: int | None = None
        # (deltas enqueued when noted, RV) in note order; a mark leaves once popped past.
        self._marks: deque[tuple[int, str]] = deque()
        self.resource_version = ""  # the consumer's: see the module's doc

    # -- producer side (the reflector's store) ------------------------------------------------

    def _push(self, delta: Delta) -> None:
        self._queue.append(delta)
        self._enqueued += 1
        wakeup = self._wakeup
        if wakeup.waiter is not None:
            wakeup.wake()

    def _populated(self) -> None:
        if self._initial_target is None:
            self._initial_target = self._enqueued

    # add/update are the watch's per-event path: the push is written out in each (no helper
    # calls) because a Python call costs as much as the rest of the method.

    def add(self, obj: Obj) -> None:
        t = self._transform
        self._queue.append((_ADDED, t(obj) if t is not None else obj))
        self._enqueued += 1
        wakeup = self._wakeup
        if wakeup.waiter is not None:
            wakeup.wake()
        if self._initial_target is None:
            self._initial_target = self._enqueued

    def update(self, obj: Obj) -> None:
        t = self._transform
        self._queue.append((_UPDATED, t(obj) if t is not None else obj))
        self._enqueued += 1
        wakeup = self._wakeup
        if wakeup.waiter is not None:
            wakeup.wake()
        if self._initial_target is None:
            self._initial_target = self._enqueued

    def delete(self, obj: Any) -> None:
        t = self._transform
        if t is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = t(obj)
        self._push((DeltaType.DELETED, obj))
        self._populated()

    def replace(self, items: Iterable[Obj], resource_version: str = "") -> None:
        # What the consumer will know once the queue drains: the indexer, then queued deltas.
        pending: dict[str, Any] = {}
        for kind, obj in self._queue:
            pending[self._key(obj)] = None if kind is DeltaType.DELETED else obj
        t = self._transform
        listed: set[str] = set()
        key = self._key
        push = self._push
        for obj in items:
            if t is not None:
                obj = t(obj)
            listed.add(key(obj))
            push((DeltaType.REPLACED, obj))
        known = self._known
        for k in known.list_keys():
            if k not in listed and k not in pending:
                last = known.get_by_key(k)
                if last is not None:
                    push((DeltaType.DELETED, DeletedFinalStateUnknown(k, last)))
        for k, last in pending.items():
            if last is not None and k not in listed:
                push((DeltaType.DELETED, DeletedFinalStateUnknown(k, last)))
        self._populated()

    def note_resource_version(self, resource_version: str) -> None:
        """Everything up to ``resource_version`` has been queued (see the module's doc)."""
        if not resource_version:
            return
        if self._popped >= self._enqueued:
            self._marks.clear()
            self.resource_version = resource_version
        elif self._marks and self._marks[-1][0] == self._enqueued:
            self._marks[-1] = (self._enqueued, resource_version)
        else:
            self._marks.append((self._enqueued, resource_version))

    def resync(self) -> None:
        queued = {self._key(obj) for _, obj in self._queue}
        known = self._known
        for k in known.list_keys():
            if k in queued:
                continue
            obj = known.get_by_key(k)
            if obj is not None:
                self._push((DeltaType.SYNC, obj))

    # -- consumer side ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def enqueued(self) -> int:
        """How many deltas have been queued so far (a target for :meth:`processed`)."""
        return self._enqueued

    def processed(self, target: int) -> bool:
        """Whether the first ``target`` deltas queued have been popped — and so, by
        :meth:`pop_batch`'s contract, applied to the indexer."""
        return self._popped >= target

    def has_synced(self) -> bool:
        """True once the first Replace (or first write) has been popped entirely."""
        target = self._initial_target
        return target is not None and self._popped >= target

    async def pop_batch(self, max_items: int = 1000) -> tuple[list[Delta], int]:
        """Wait for deltas and take up to ``max_items`` of them, oldest first.

        Returns the deltas and how many of them (a prefix) belong to the initial population.
        The caller must process them before it next awaits, so that :meth:`has_synced` (true as
        soon as the last initial delta is popped) is never observed ahead of the indexer.
        """
        while not self._queue:
            await self._wakeup.wait()
        queue = self._queue
        n = min(max_items, len(queue))
        popleft = queue.popleft
        batch = [popleft() for _ in range(n)]
        before = self._popped
        self._popped = before + n
        marks = self._marks
        while marks and marks[0][0] <= self._popped:
            self.resource_version = marks.popleft()[1]
        target = self._initial_target
        initial = 0 if target is None else max(0, min(n, target - before))
        return batch, initial
