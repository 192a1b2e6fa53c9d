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
2. **an outside writer.** Else the object names its writer in ``metadata.managedFields``: the
   informer notes the entries (manager, operation, time, subresource; never fieldsV1) before
   its transform drops them (:meth:`CauseTable.note_writer`), and :func:`choose_writer` picks
   the one that wrote this event.
3. **the informer itself**: its first list (``initial``), a later list (``relist``, noted by the
   informer for the objects a relist changed), a resync (an update with an unchanged
   resourceVersion).

A watch event can arrive before the response of the write that caused it (they come on two
connections, and the loop reads whichever is ready first). So a write is also noted while it is
in flight, by name (or, for a create with ``generateName``, by that prefix) with the field
manager it writes as: an event on that object whose newest managedFields entry names that
manager is this write's, though its response is still on the way. (One key is synced by one
worker at a time, so the in-flight creates sharing a generateName are one reconcile's.)

The tables are bounded in count and in age (:class:`_Generations`: an entry lives from one to
two minutes, fewer when the count bound is reached first): a handler runs within milliseconds of
the transform and a watch event within a second or so of the write, so what is older is never
asked for again, and a manager under steady churn holds a steady amount (before the age bound
the tables filled to their counts over an hour of churn, ~0.2 MB a minute: issue 40). A lost
entry only makes a cause "unknown", never wrong.

A :class:`Trigger` is what a handler enqueues with a key; the worker puts it in the reconcile's
begin record and the bus spells it out as ``ReconcileStarted.trigger_*`` when read. When the
queue merges several events for one key into one reconcile, the trigger is the newest, holding
the first (``first``) and the count (``merged``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

from pycm.trace.context import SpanValue, record_ids

__all__ = [
    "RELIST",
    "CauseTable",
    "Trigger",
    "cause_of_record",
    "cause_of_span",
    "choose_writer",
    "writers_from_json",
    "writers_of",
]

MAX_WRITES = 16_384
MAX_WRITERS = 8_192  # (an entry may be a watched object's managedFields bytes, ~2 KB)
MAX_DELETES = 4_096
MAX_AGE_S = 120.0
"""The most an entry of the tables lives (it lives at least half of it, see _Generations)."""

Entry = tuple[str, str, str, str]
"""What a managedFields entry says of its writer: (manager, operation, time, subresource)."""

Writers = tuple[Entry, ...]
"""An object's managedFields entries, fieldsV1 left out (what the informer notes)."""

RELIST: Writers = (("", "", "", "relist"),)
"""The writers noted for an object a relist (not the first list) brought: the event is the
informer's own catch-up, whatever wrote the object meanwhile."""

CauseRef = tuple[Any, ...]
"""A reconcile's begin record (pycm.trace.bus's layout), or a (trace_id, span_id) pair for a
write made in a step that is not a reconcile."""


class Trigger(msgspec.Struct, frozen=True, gc=False):
    """The event that enqueued a key: what the reconcile it starts names as its cause.

    ``trace_id``/``span_id`` are explicit ids (a plugin's own, or a retry's previous reconcile
    given as ids); ``cause`` is this manager's write that produced the event (its reconcile's
    begin record, ids derived when read) with ``verb``; ``writer``, ``operation`` and
    ``write_time`` the outside writer the object names. ``paths``: an update's changed field
    paths. ``first`` and ``merged``: the first of the events merged into one reconcile, and how
    many were (1: none).

    Untracked by the cyclic GC (``gc=False``: it holds strings, ints, the cause's tuple of
    atoms and an older Trigger, never a cycle), so a reconcile's begin record that holds one
    is untracked too at its first collection, as a record without a trigger is (see
    pycm.trace.records): a ring of triggered reconciles costs no older-generation
    traversals. (A frozen, slotted dataclass is tracked for as long as it lives.)"""

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


class _Entry(msgspec.Struct):
    """What a managedFields entry says of its writer (its fieldsV1 skipped)."""

    manager: str | None = None
    operation: str | None = None
    time: str | None = None
    subresource: str | None = None


_ENTRIES = msgspec.json.Decoder(list[_Entry])


def writers_from_json(data: bytes) -> Writers | None:
    """managedFields as JSON bytes (the sharing decoder hands a watched object's on so) as
    :data:`Writers`; None if they are not a list of entries."""
    try:
        entries = _ENTRIES.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    out = tuple(
        (e.manager or "", e.operation or "", e.time or "", e.subresource or "") for e in entries
    )
    return out or None


def writers_of(meta: dict[str, Any]) -> Writers | None:
    """``meta["managedFields"]``'s entries as (manager, operation, time, subresource)."""
    entries = meta.get("managedFields")
    if type(entries) is bytes:
        return writers_from_json(entries)
    if type(entries) is not list or not entries:
        return None
    out = tuple(
        (
            str(e.get("manager") or ""),
            str(e.get("operation") or ""),
            str(e.get("time") or ""),
            str(e.get("subresource") or ""),
        )
        for e in entries
        if type(e) is dict
    )
    return out or None


def choose_writer(writers: Writers, paths: str, own: frozenset[str] | set[str]) -> Entry:
    """Which entry wrote the event: managedFields times have a second's resolution, so the
    newest entry alone is often a tie. Not this manager (its own writes are found by their
    resourceVersion, or in flight, before this is asked), and for an update whose changed
    paths are all under ``status`` an entry of the status subresource (else one that is not);
    of those the newest, the later of a tie."""
    candidates = [e for e in writers if e[0] not in own] or list(writers)
    if paths:
        status_only = all(p.startswith("status") for p in paths.split(","))
        preferred = [e for e in candidates if (e[3] == "status") == status_only]
        candidates = preferred or candidates
    best = candidates[0]
    for entry in candidates[1:]:
        if entry[2] >= best[2]:  # RFC 3339 in UTC: the text sorts as the time
            best = entry
    return best


def _newest_is(writers: Writers, manager: str) -> bool:
    """Whether ``manager``'s entry is (one of) the newest: then the event may be its write."""
    newest = max(entry[2] for entry in writers)
    return any(entry[0] == manager and entry[2] == newest for entry in writers)


K = TypeVar("K")
V = TypeVar("V")


class _Generations(Generic[K, V]):
    """A dict bounded in count and in age by two generations: entries go into the new one;
    when it holds half the count bound or is half the age bound old, it becomes the old one and
    the old one is dropped whole. So an entry lives between half the age bound and all of it
    (unless the count bound comes first) and at most ``limit`` entries are held; the cost is a
    clock reading per insert, not per entry (no timestamps kept)."""

    __slots__ = ("_born_ns", "_half_age_ns", "_half_limit", "_monotonic_ns", "_new", "_old")

    def __init__(self, limit: int, max_age_s: float, monotonic_ns: Callable[[], int]) -> None:
        self._half_limit = max(1, limit // 2)
        self._half_age_ns = int(max_age_s * 1e9) // 2
        self._monotonic_ns = monotonic_ns
        self._new: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._born_ns = monotonic_ns()

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def get(self, key: K) -> V | None:
        value = self._new.get(key)
        if value is None:
            value = self._old.get(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Insert into the new generation (a key put again is read from there: the new
        generation is asked first)."""
        now = self._monotonic_ns()
        if len(self._new) >= self._half_limit or now - self._born_ns >= self._half_age_ns:
            self._old, self._new = self._new, {}
            self._born_ns = now
        self._new[key] = value

    def replace(self, key: K, value: V) -> None:
        """A held entry's value changed in place (its generation, so its age, kept)."""
        if key in self._new:
            self._new[key] = value
        elif key in self._old:
            self._old[key] = value

    def pop(self, key: K) -> None:
        self._new.pop(key, None)
        self._old.pop(key, None)

    def clear(self) -> None:
        self._new.clear()
        self._old.clear()

    def to_dict(self) -> dict[K, V]:
        """Every held entry (the newer value of a key held in both generations)."""
        return {**self._old, **self._new}


class CauseTable:
    """The bounded tables behind :class:`Trigger`: this manager's writes by the resourceVersion
    they returned, and the outside writers objects name (see the module docstring)."""

    __slots__ = (
        "_deletes",
        "_in_flight",
        "_writers",
        "_writes",
        "max_writers",
        "max_writes",
        "own_managers",
    )

    def __init__(
        self,
        max_writes: int = MAX_WRITES,
        max_writers: int = MAX_WRITERS,
        max_age_s: float = MAX_AGE_S,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.max_writes = max_writes
        self.max_writers = max_writers
        # (namespace, name, rv) → (cause, verb).
        self._writes: _Generations[tuple[str, str, str], tuple[CauseRef, str]] = _Generations(
            max_writes, max_age_s, monotonic_ns
        )
        # (namespace, name) → (cause, verb) of a delete (see the module docstring).
        self._deletes: _Generations[tuple[str, str], tuple[CauseRef, str]] = _Generations(
            MAX_DELETES, max_age_s, monotonic_ns
        )
        # (namespace, name, rv) → the object's managedFields writers, or their JSON bytes
        # (decoded when first asked for: most events' writers never are).
        self._writers: _Generations[tuple[str, str, str], Writers | bytes] = _Generations(
            max_writers, max_age_s, monotonic_ns
        )
        # The field managers this manager's own clients write as (registered by each client).
        self.own_managers: set[str] = set()
        # (namespace, name, generated) → [cause, verb, manager, count] of writes in flight
        # (``generated``: the name is a generateName prefix); bounded by the requests open.
        self._in_flight: dict[tuple[str, str, bool], list[Any]] = {}

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
            self._deletes.put((namespace, name), entry)
        if rv:
            self._writes.put((namespace, name, rv), entry)

    def cause(
        self,
        kind: str,
        namespace: str,
        name: str,
        rv: str,
        event: str,
        paths: str = "",
        generate_name: str = "",
    ) -> Trigger:
        """The trigger of a watch event (``event``) on the object (namespace, name) at ``rv``,
        by the rules of the module docstring: this manager's write that returned ``rv`` (or,
        for a delete, that deleted it), else its write of the object still in flight when the
        object names its manager newest, else the writer the object names (or the informer's
        relist). ``paths``: an update's changed paths, named in the trigger."""
        obj_key = f"{namespace}/{name}" if namespace else name
        write = self._writes.get((namespace, name, rv))
        if write is None and event == "delete":
            write = self._deletes.get((namespace, name))
        if write is not None:
            return Trigger(
                kind, rv, event, object=obj_key, paths=paths, cause=write[0], verb=write[1]
            )
        writer = self.writer_of(namespace, name, rv)
        if writer is RELIST:
            return Trigger(kind, rv, "relist", object=obj_key, paths=paths)
        in_flight = self.in_flight_of(namespace, name, generate_name)
        if in_flight is not None and (writer is None or _newest_is(writer, in_flight[2])):
            return Trigger(
                kind, rv, event, object=obj_key, paths=paths, cause=in_flight[0], verb=in_flight[1]
            )
        if writer is None:
            return Trigger(kind, rv, event, object=obj_key, paths=paths)
        manager, operation, time, _ = choose_writer(writer, paths, self.own_managers)
        return Trigger(
            kind,
            rv,
            event,
            object=obj_key,
            paths=paths,
            writer=manager,
            operation=operation,
            write_time=time,
        )

    def write_started(
        self,
        namespace: str,
        name: str,
        generated: bool,
        verb: str,
        manager: str,
        span: SpanValue | None,
    ) -> tuple[str, str, bool] | None:
        """A write of (namespace, name) — a generateName prefix when ``generated`` — as
        ``manager``, made in ``span``, is on its way; returns the token for
        :meth:`write_ended`, or None when it is no step's."""
        cause = cause_of_span(span)
        if cause is None or not name:
            return None
        key = (namespace, name, generated)
        entry = self._in_flight.get(key)
        if entry is None:
            self._in_flight[key] = [cause, verb, manager, 1]
        else:
            entry[0], entry[1], entry[2] = cause, verb, manager
            entry[3] += 1
        return key

    def write_ended(self, token: tuple[str, str, bool]) -> None:
        entry = self._in_flight.get(token)
        if entry is not None:
            entry[3] -= 1
            if entry[3] <= 0:
                del self._in_flight[token]

    def in_flight_of(
        self, namespace: str, name: str, generate_name: str
    ) -> tuple[CauseRef, str, str] | None:
        """(cause, verb, manager) of a write of this object still in flight, by its name, else
        by its generateName prefix."""
        entry = self._in_flight.get((namespace, name, False))
        if entry is None and generate_name:
            entry = self._in_flight.get((namespace, generate_name, True))
        if entry is None:
            return None
        return entry[0], entry[1], entry[2]

    def note_writer(self, namespace: str, name: str, rv: str, writer: Writers | bytes) -> None:
        """The object (namespace, name) at ``rv`` names ``writer`` (the informer's transform)."""
        self._writers.put((namespace, name, rv), writer)

    def write_of(self, namespace: str, name: str, rv: str) -> tuple[CauseRef, str] | None:
        return self._writes.get((namespace, name, rv))

    def delete_of(self, namespace: str, name: str) -> tuple[CauseRef, str] | None:
        return self._deletes.get((namespace, name))

    def writer_of(self, namespace: str, name: str, rv: str) -> Writers | None:
        key = (namespace, name, rv)
        writers = self._writers.get(key)
        if type(writers) is bytes:
            decoded = writers_from_json(writers)
            if decoded is None:
                self._writers.pop(key)
                return None
            self._writers.replace(key, decoded)
            return decoded
        return writers  # type: ignore[return-value]

    def clear(self) -> None:
        self._in_flight.clear()
        self._writes.clear()
        self._deletes.clear()
        self._writers.clear()
