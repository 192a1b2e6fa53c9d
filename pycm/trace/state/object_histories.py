"""The object histories: each object's bounded ring of steps and the reconciles indexed by span
id, with the bounds that keep them small (see :mod:`pycm.trace.state.objects`, whose events
fill them, for why each bound is there)."""

from __future__ import annotations

from collections import OrderedDict, deque

from pycm.trace.objref import ObjectRef
from pycm.trace.state.object_steps import (
    OKEY,
    RECONCILE,
    RESTORED,
    SIZE,
    SPAN_ID_,
    TAG,
    TS,
    ObjectHistorySnapshot,
    ObjectKey,
    ObjectStepSnapshot,
    Step,
    step_dicts,
    step_ts,
)

__all__ = [
    "DELETED_TTL_NS",
    "MAX_BYTES",
    "MAX_OBJECTS",
    "MAX_OBJECT_BYTES",
    "MAX_SPANS",
    "MAX_STEPS",
    "History",
    "ObjectHistories",
]

MAX_STEPS = 50  # steps kept per object (the newest)
MAX_OBJECT_BYTES = 64 * 1024  # estimated bytes of one object's steps
MAX_BYTES = 16 * 1024 * 1024  # estimated bytes of all histories
MAX_OBJECTS = 4096  # objects with a history (least recently touched evicted)
MAX_SPANS = 8192  # reconciles indexed by span id, for walking chains (oldest dropped)
DELETED_TTL_NS = 15 * 60 * 10**9  # a deleted object's history, and an indexed reconcile, kept


class History(deque[Step]):
    """One object's steps (oldest first), their estimated size, and how many were dropped.

    (The deque itself: one GC-tracked object per object with a history, not two.)"""

    __slots__ = ("bytes", "dropped")

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.dropped = 0


class ObjectHistories:
    """Every object's :class:`History` and the reconcile index (see the module docstring).

    Invariants: ``bytes`` is the sum of the histories' ``bytes`` and at most
    :data:`MAX_BYTES` after each fold; ``table``'s order is least recently touched first;
    ``spans`` holds at most :data:`MAX_SPANS` reconcile steps, oldest first."""

    __slots__ = ("_spans_due", "bytes", "deleted", "evicted", "spans", "table")

    def __init__(self) -> None:
        # OrderedDicts: moving a key to the end and taking the first are O(1) (a plain dict's
        # first key is found by skipping the holes its deletions left: quadratic under churn).
        self.table: OrderedDict[ObjectKey, History] = OrderedDict()
        self.spans: OrderedDict[str, Step] = OrderedDict()
        # (when its deletion was seen, object) in the order seen: expired by later steps' times.
        self.deleted: deque[tuple[int, ObjectKey]] = deque()
        self._spans_due = -(1 << 63)  # when the oldest indexed reconcile turns too old
        self.bytes = 0
        self.evicted = 0  # objects evicted

    def add(self, okey: ObjectKey, step: Step) -> None:
        table = self.table
        hist = table.get(okey)
        if hist is None:
            hist = History()
            if len(table) >= MAX_OBJECTS:
                self._evict()
            table[okey] = hist
        else:
            table.move_to_end(okey)  # the most recently touched is last
        size = step[SIZE]
        steps = hist
        steps.append(step)
        hist.bytes += size
        self.bytes += size
        if len(steps) > MAX_STEPS or hist.bytes > MAX_OBJECT_BYTES:
            self._trim(hist)
        if self.bytes > MAX_BYTES:
            while self.bytes > MAX_BYTES and len(table) > 1:
                self._evict()
        deleted = self.deleted
        if deleted:
            ts = step[TS]
            if type(ts) is not int:  # a restored step (its time in its dict)
                ts = step_ts(step)
            if deleted[0][0] < ts - DELETED_TTL_NS:
                self._expire(ts - DELETED_TTL_NS)

    def note_deleted(self, okey: ObjectKey, ts: int) -> None:
        """A watch event said ``okey`` was deleted at ``ts``: its history is dropped once
        :data:`DELETED_TTL_NS` has passed with no step of it since."""
        self.deleted.append((ts, okey))

    def _expire(self, cutoff: int) -> None:
        deleted, table = self.deleted, self.table
        while deleted and deleted[0][0] < cutoff:
            _, okey = deleted.popleft()
            hist = table.get(okey)
            if hist is not None and step_ts(hist[-1]) < cutoff:  # untouched since: not made again
                del table[okey]
                self.bytes -= hist.bytes
                self.evicted += 1

    def _trim(self, hist: History) -> None:
        steps = hist
        while len(steps) > MAX_STEPS or (hist.bytes > MAX_OBJECT_BYTES and len(steps) > 1):
            old = steps.popleft()
            hist.bytes -= old[SIZE]
            self.bytes -= old[SIZE]
            hist.dropped += 1

    def finish(self, step: Step, done: Step, extra: int) -> None:
        """Replace reconcile ``step`` by ``done`` (with its end), ``extra`` bytes larger."""
        if step[SPAN_ID_]:
            self.spans[step[SPAN_ID_]] = done  # (its place in the order is kept)
        hist = self.table.get(step[OKEY])
        if hist is None:
            return
        steps = hist
        for i in range(len(steps) - 1, -1, -1):  # it is one of the newest, as a rule
            if steps[i] is step:
                steps[i] = done
                hist.bytes += extra
                self.bytes += extra
                return

    def _evict(self) -> None:
        _, hist = self.table.popitem(last=False)
        self.bytes -= hist.bytes
        self.evicted += 1

    def note_span(self, span_id: str, step: Step) -> None:
        spans = self.spans
        spans[span_id] = step
        if len(spans) > MAX_SPANS:
            spans.popitem(last=False)
        ts = step[TS]
        if type(ts) is not int:  # a restored step (its time in its dict)
            ts = step_ts(step)
        if ts > self._spans_due:  # the oldest indexed reconcile is past the age bound
            cutoff = ts - DELETED_TTL_NS
            while spans and step_ts(next(iter(spans.values()))) < cutoff:
                spans.popitem(last=False)
            self._spans_due = step_ts(next(iter(spans.values()))) + DELETED_TTL_NS

    def history(self, ref: ObjectRef) -> ObjectHistorySnapshot | None:
        """``ref``'s history, or None when no step touched it."""
        hist = self.table.get((ref.resource, ref.namespace, ref.name))
        if hist is None:
            return None
        steps = sorted((d for s in hist for d in step_dicts(s)), key=_ts)
        over = len(steps) - MAX_STEPS  # (a reconcile of its own event shows two)
        return {
            "resource": ref.resource,
            "namespace": ref.namespace,
            "name": ref.name,
            "steps": steps[over:] if over > 0 else steps,
            "dropped": hist.dropped + max(over, 0),
            "bytes": hist.bytes,
        }

    def span(self, span_id: str) -> ObjectStepSnapshot | None:
        """The reconcile step of ``span_id``, if still indexed."""
        step = self.spans.get(span_id) if span_id else None
        return step_dicts(step)[-1] if step is not None else None

    def reconciled_by(self, okey: ObjectKey, controller: str) -> bool:
        """Whether ``controller`` reconciled the object in its held history."""
        hist = self.table.get(okey)
        return hist is not None and any(
            d["step"] == "reconcile" and d["controller"] == controller
            for s in hist
            if s[TAG] == RECONCILE or s[TAG] == RESTORED
            for d in step_dicts(s)
        )

    def resources(self) -> set[str]:
        """The resources of the objects with a history."""
        return {okey[0] for okey in self.table}


def _ts(step: ObjectStepSnapshot) -> int:
    return step["ts"]
