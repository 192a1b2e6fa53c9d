"""Why a reconcile ran: the cause of each watch event, as data (DESIGN.md, "Causality is data").

A reconcile's trigger is the step that caused the watch event that enqueued its key — never
"whatever span was current when the handler ran" (informer tasks inherit the start-up context):

1. **this manager's own write.** The API client notes every successful create, update, patch
   and delete made inside a reconcile in :class:`CauseTable`: (namespace, name,
   resourceVersion the response returned) → the reconcile's begin record and the verb. A watch
   event whose object carries that resourceVersion was caused by that reconcile (its trace and
   span ids, controller and key are derived from the record when read). A delete's response
   may carry the object's last resourceVersion rather than the deletion's (the emulator's does),
   so a delete is also noted by (namespace, name) and matched by the DELETED event.
2. **an outside writer.** Else the object names its writer: the newest ``metadata.managedFields``
   entry (manager, operation, time), which the informer notes here before its transform drops
   ``managedFields`` (:meth:`CauseTable.note_writer`).
3. **the informer itself**: its first list (``initial``), a later list (``relist``, noted by the
   informer for the objects a relist changed), a resync (an update with an unchanged
   resourceVersion).

Both tables are bounded (oldest dropped first): a handler runs within milliseconds of the
transform and a watch event within a second or so of the write, so a few thousand entries hold
every cause still to be asked for; a lost entry only makes a cause "unknown", never wrong.

A :class:`Trigger` is what a handler enqueues with a key; the worker puts it in the reconcile's
begin record and the bus spells it out as ``ReconcileStarted.trigger_*`` when read. When the
queue merges several events for one key into one reconcile, the trigger is the newest, holding
the first (``first``) and the count (``merged``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycm.trace.context import SpanValue, record_ids

__all__ = [
    "RELIST",
    "CauseTable",
    "Trigger",
    "cause_of_record",
    "cause_of_span",
    "newest_writer",
]

MAX_WRITES = 16_384
MAX_WRITERS = 16_384
MAX_DELETES = 4_096

RELIST = ("", "", "", "relist")
"""The writer noted for an object a relist (not the first list) brought: the event is the
informer's own catch-up, whatever wrote the object meanwhile."""

Writer = tuple[str, str, str, str]
"""(manager, operation, time, event override or "") of an object's newest managedFields entry."""

CauseRef = tuple[Any, ...]
"""A reconcile's begin record (pycm.trace.bus's layout), or a (trace_id, span_id) pair for a
write made in a step that is not a reconcile."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """The event that enqueued a key: what the reconcile it starts names as its cause.

    ``trace_id``/``span_id`` are explicit ids (a plugin's own, or a retry's previous reconcile
    given as ids); ``cause`` is this manager's write that produced the event (its reconcile's
    begin record, ids derived when read) with ``verb``; ``writer``, ``operation`` and
    ``write_time`` the outside writer the object names. ``paths``: an update's changed field
    paths. ``first`` and ``merged``: the first of the events merged into one reconcile, and how
    many were (1: none)."""

    kind: str = ""
    resource_version: str = ""
    event: str = ""  # add, update, delete, initial, relist, resync, retry, requeue, ...
    trace_id: str = ""
    span_id: str = ""
    object: str = ""  # namespace/name of the event's object
    paths: str = ""
    writer: str = ""
    operation: str = ""
    write_time: str = ""
    cause: CauseRef | None = None
    verb: str = ""
    first: Trigger | None = None
    merged: int = 1

    def ids(self) -> tuple[str, str]:
        """(trace_id, span_id) of the step this event links to, or ("", "")."""
        if self.trace_id:
            return self.trace_id, self.span_id
        cause = self.cause
        if cause is None:
            return "", ""
        if len(cause) == 2:
            return cause[0], cause[1]
        return record_ids(cause)

    def cause_controller_key(self) -> tuple[str, str]:
        """(controller, key) of the reconcile that caused the event, or ("", "")."""
        cause = self.cause
        if cause is None or len(cause) == 2:
            return "", ""
        return cause[2][3], cause[5]

    def merge(self, newer: Trigger) -> Trigger:
        """``newer`` arrived while this one's key still waited: one reconcile for both."""
        return Trigger(
            newer.kind,
            newer.resource_version,
            newer.event,
            newer.trace_id,
            newer.span_id,
            newer.object,
            newer.paths,
            newer.writer,
            newer.operation,
            newer.write_time,
            newer.cause,
            newer.verb,
            self.first or self,
            self.merged + newer.merged,
        )


def _cause_ref(begin: tuple[Any, ...]) -> CauseRef:
    """What a cause keeps of a reconcile's begin record: its seq, head and key in the record's
    places (so :func:`record_ids` reads it), not the record itself, whose own trigger holds its
    cause's, and so on back through every reconcile that led here."""
    return (0, begin[1], begin[2], 0, 0, begin[5])


def cause_of_span(span: SpanValue | None) -> CauseRef | None:
    """The reconcile a span contextvar value belongs to, else the step's ids."""
    if span is None:
        return None
    if type(span) is list:  # a root reconcile's [calls, begin record]
        return _cause_ref(span[1])
    if len(span) == 3:  # a step counting calls inside a reconcile: (trace, span, calls)
        calls = span[2]
        if type(calls) is list and len(calls) > 1:
            return _cause_ref(calls[1])
    return (span[0], span[1])


def cause_of_record(begin: tuple[Any, ...]) -> CauseRef:
    """The cause a retry or requeue names: the reconcile of ``begin`` itself."""
    return _cause_ref(begin)


def newest_writer(meta: dict[str, Any]) -> Writer | None:
    """The newest entry of ``meta["managedFields"]``: (manager, operation, time, "")."""
    entries = meta.get("managedFields")
    if type(entries) is not list or not entries:
        return None
    best: dict[str, Any] | None = None
    best_time = ""
    for entry in entries:
        if type(entry) is dict:
            time = entry.get("time") or ""
            # (>=: of two entries in the same second, the later one in the list; times are
            # RFC 3339 in UTC, so their text sorts as their time.)
            if best is None or (type(time) is str and time >= best_time):
                best, best_time = entry, time if type(time) is str else ""
    if best is None:
        return None
    return (str(best.get("manager") or ""), str(best.get("operation") or ""), best_time, "")


class CauseTable:
    """The bounded tables behind :class:`Trigger`: this manager's writes by the resourceVersion
    they returned, and the outside writers objects name (see the module docstring)."""

    __slots__ = ("_deletes", "_writers", "_writes", "max_writers", "max_writes")

    def __init__(self, max_writes: int = MAX_WRITES, max_writers: int = MAX_WRITERS) -> None:
        self.max_writes = max_writes
        self.max_writers = max_writers
        # (namespace, name, rv) → (cause, verb); insertion order is age (oldest first).
        self._writes: dict[tuple[str, str, str], tuple[CauseRef, str]] = {}
        # (namespace, name) → (cause, verb) of a delete (see the module docstring).
        self._deletes: dict[tuple[str, str], tuple[CauseRef, str]] = {}
        # (namespace, name, rv) → the writer.
        self._writers: dict[tuple[str, str, str], Writer] = {}

    def __len__(self) -> int:
        return len(self._writes) + len(self._deletes) + len(self._writers)

    def note_write(
        self, namespace: str, name: str, rv: str, verb: str, span: SpanValue | None
    ) -> None:
        """A write made in ``span`` returned ``rv`` (the API client, per successful write)."""
        cause = cause_of_span(span)
        if cause is None or not name:
            return
        entry = (cause, verb)
        if verb == "delete":
            deletes = self._deletes
            deletes.pop((namespace, name), None)
            deletes[(namespace, name)] = entry
            if len(deletes) > MAX_DELETES:
                del deletes[next(iter(deletes))]
        if not rv:
            return
        writes = self._writes
        writes[(namespace, name, rv)] = entry
        if len(writes) > self.max_writes:
            del writes[next(iter(writes))]

    def note_writer(self, namespace: str, name: str, rv: str, writer: Writer) -> None:
        """The object (namespace, name) at ``rv`` names ``writer`` (the informer's transform)."""
        writers = self._writers
        writers[(namespace, name, rv)] = writer
        if len(writers) > self.max_writers:
            del writers[next(iter(writers))]

    def write_of(self, namespace: str, name: str, rv: str) -> tuple[CauseRef, str] | None:
        return self._writes.get((namespace, name, rv))

    def delete_of(self, namespace: str, name: str) -> tuple[CauseRef, str] | None:
        return self._deletes.get((namespace, name))

    def writer_of(self, namespace: str, name: str, rv: str) -> Writer | None:
        return self._writers.get((namespace, name, rv))

    def clear(self) -> None:
        self._writes.clear()
        self._deletes.clear()
        self._writers.clear()
