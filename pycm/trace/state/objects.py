"""Each object's history: the last steps that touched it, folded from the events that name it.

Keyed by (resource, namespace, name) across instances (a viewer of three replicas folds one
history per object, each step naming its instance). Four kinds of step:

- ``watch``: a watch event of the object that enqueued a key (add, update, delete, initial,
  relist, resync), with its resourceVersion, changed paths and writer: this manager's reconcile
  that wrote it (``cause_*``, ``verb``) or the outside writer its managedFields name
  (``writer``); ``controller``/``key`` name the queue and key it went to. Read from the trigger
  of the reconcile that took the key (``ReconcileStarted.trigger_*``, and ``first_trigger_*``
  when the queue merged several events): the trace holds no per-watch-event record, so an event
  whose key is still waiting appears when its reconcile begins. Its ``ts`` is when the key was
  enqueued (the reconcile's begin less its queue wait; the newest of several merged events: the
  reconcile's begin).
- ``reconcile``: a reconcile of the object's key (``ReconcileStarted`` + ``ReconcileFinished``:
  controller, queue wait, how many events merged, its trigger, result, action, duration, error,
  trace and span ids). ``result`` is "" while it runs.
- ``write``: a create, update, patch or delete of the object by this manager (``api.request``:
  verb, returned resourceVersion, HTTP code, error), with the reconcile it was made in.
- ``event``: a core/v1 Event recorded about it (``event.recorded``: type, reason).

Every reconcile is also indexed by its span id (:attr:`ObjectHistories.spans`), so a chain of
causes can be walked from a reconcile to the reconcile whose write triggered it, and so on
(:mod:`pycm.trace.why`).

Folding is cheap (one list or tuple per step, a dict lookup or two); memory is bounded three
ways: :data:`MAX_STEPS` steps per object, :data:`MAX_OBJECT_BYTES` per object and
:data:`MAX_BYTES` in all (estimated sizes, :func:`step_bytes`), at most :data:`MAX_OBJECTS`
objects (the least recently touched evicted) and :data:`MAX_SPANS` indexed reconciles (oldest
first). Steps carry names, keys, paths, counts and timings only, never object bodies.

The histories are not part of the snapshot (they would make every snapshot megabytes): a
snapshot carries the histories it is asked for (``State.snapshot(objects=...)``, the stream's
``objects=``), and :meth:`State.restore` adopts those.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    EventRecorded,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
)
from pycm.trace.objref import ObjectRef, resource_of_kind
from pycm.trace.state.record import ms_to_ns
from pycm.trace.state.registry import also_handles, handles

if TYPE_CHECKING:
    from pycm.trace.state.core import State
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "FIELDS",
    "MAX_BYTES",
    "MAX_OBJECTS",
    "MAX_OBJECT_BYTES",
    "MAX_SPANS",
    "MAX_STEPS",
    "ObjectHistories",
    "ObjectHistorySnapshot",
    "ObjectStepSnapshot",
    "dump",
    "load",
    "step_bytes",
]

MAX_STEPS = 50  # steps kept per object (the newest)
MAX_OBJECT_BYTES = 64 * 1024  # estimated bytes of one object's steps
MAX_BYTES = 16 * 1024 * 1024  # estimated bytes of all histories
MAX_OBJECTS = 4096  # objects with a history (least recently touched evicted)
MAX_SPANS = 8192  # reconciles indexed by span id, for walking chains (oldest dropped)
MAX_ERROR = 256  # characters of an error kept in a step
# An estimate of one step's memory: the list (30 slots) and its id strings; a step's own
# strings (key, paths, error) are added by length. Shared strings are counted as if not.
_STEP_BASE = 600

_WATCH_EVENTS = frozenset({"add", "update", "delete", "initial", "relist", "resync"})
_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
_OK = Outcome.OK
_ERROR = Outcome.ERROR
_SUCCESS = ReconcileResult.SUCCESS
_RESULT_ERROR = ReconcileResult.ERROR

FIELDS = (
    "ts",
    "instance",
    "step",
    "resource",
    "controller",
    "key",
    "event",
    "kind",
    "object",
    "rv",
    "paths",
    "writer",
    "verb",
    "code",
    "result",
    "action",
    "error",
    "dur_ns",
    "wait_ms",
    "merged",
    "trace_id",
    "span_id",
    "cause_trace_id",
    "cause_span_id",
    "cause_controller",
    "cause_key",
    "type",
    "reason",
)
"""A step's fields, in the order a step list holds them (then its object key and size)."""

(
    TS,
    INSTANCE,
    STEP,
    RESOURCE,
    CONTROLLER,
    KEY,
    EVENT,
    KIND,
    OBJECT,
    RV,
    PATHS,
    WRITER,
    VERB,
    CODE,
    RESULT,
    ACTION,
    ERROR,
    DUR_NS,
    WAIT_MS,
    MERGED,
    TRACE_ID,
    SPAN_ID,
    CAUSE_TRACE_ID,
    CAUSE_SPAN_ID,
    CAUSE_CONTROLLER,
    CAUSE_KEY,
    TYPE,
    REASON,
    OKEY,
    SIZE,
) = range(len(FIELDS) + 2)

ObjectKey = tuple[str, str, str]  # (resource, namespace, name)
Step = list[Any]  # FIELDS' values, then the object key and the estimated size


class ObjectStepSnapshot(TypedDict):
    """One step that touched an object (unused fields are "" or 0)."""

    ts: Annotated[int, "when (Unix ns): watch: enqueued; reconcile: began; write, event: ended"]
    instance: Annotated[str, "the instance that took it"]
    step: Annotated[str, "watch, reconcile, write or event"]
    resource: Annotated[str, "the object's resource"]
    controller: Annotated[
        str,
        "reconcile: its controller; watch: the queue it enqueued into; write, event: the "
        "controller of the reconcile it was made in",
    ]
    key: Annotated[
        str, "reconcile: its key; watch: the key enqueued; write, event: the reconcile's key"
    ]
    event: Annotated[
        str,
        "watch: add, update, delete, initial, relist, resync; reconcile: its trigger's "
        "event (also retry, requeue, requeue_after); event: the recorder's action",
    ]
    kind: Annotated[str, "watch, reconcile: the kind of the object whose event it was"]
    object: Annotated[str, "watch, reconcile: that object's namespace/name"]
    rv: Annotated[str, "watch, reconcile: that object's resourceVersion; write: the one returned"]
    paths: Annotated[str, "watch, reconcile: an update's changed field paths, comma-separated"]
    writer: Annotated[str, "watch, reconcile: the outside writer (managedFields manager)"]
    verb: Annotated[
        str,
        "write: create, update, patch, delete (/subresource); watch, reconcile: the verb "
        "of this manager's write that caused the event",
    ]
    code: Annotated[int, "write: the HTTP status (0: no answer)"]
    result: Annotated[
        str, 'reconcile: success, requeue, requeue_after, error, conflict, ... ("" running)'
    ]
    action: Annotated[str, "reconcile: what the sync did"]
    error: Annotated[str, "reconcile, write: the error (first 256 characters)"]
    dur_ns: Annotated[int, "reconcile, write: duration"]
    wait_ms: Annotated[float, "reconcile: time its key waited in the queue"]
    merged: Annotated[
        int, "reconcile, watch: events merged into that one reconcile (0: no trigger)"
    ]
    trace_id: Annotated[str, "reconcile: its trace; write, event: the trace it was made in"]
    span_id: Annotated[str, "reconcile: its span; write, event: the reconcile's span"]
    cause_trace_id: Annotated[
        str,
        "watch, reconcile: the trace of the reconcile whose write caused the event (or, "
        "for a retry or requeue, the previous reconcile of the key)",
    ]
    cause_span_id: Annotated[str, "its span"]
    cause_controller: Annotated[str, "its controller"]
    cause_key: Annotated[str, "its key"]
    type: Annotated[str, "event: Normal or Warning"]
    reason: Annotated[str, "event: its reason"]


class ObjectHistorySnapshot(TypedDict):
    """The last steps that touched one object, oldest first."""

    resource: Annotated[str, "its resource (deployments, replicasets, pods, ...)"]
    namespace: Annotated[str, '"" when cluster-scoped']
    name: Annotated[str, "its name"]
    steps: Annotated[list[ObjectStepSnapshot], "the steps, oldest first (the last 50)"]
    dropped: Annotated[int, "older steps dropped by the bounds"]
    bytes: Annotated[int, "the steps' estimated size"]


def step_bytes(step: Step) -> int:
    """The estimated memory of a step (see :data:`_STEP_BASE`)."""
    return _STEP_BASE + len(step[KEY]) + len(step[PATHS]) + len(step[ERROR])


class History:
    """One object's steps (oldest first), their estimated size, and how many were dropped."""

    __slots__ = ("bytes", "dropped", "steps")

    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        self.bytes = 0
        self.dropped = 0


class ObjectHistories:
    """Every object's :class:`History` and the reconcile index (see the module docstring).

    Invariants: ``bytes`` is the sum of the histories' ``bytes`` and at most
    :data:`MAX_BYTES` after each fold; ``table``'s order is least recently touched first;
    ``spans`` holds at most :data:`MAX_SPANS` reconcile steps, oldest first."""

    __slots__ = ("bytes", "evicted", "spans", "table")

    def __init__(self) -> None:
        # OrderedDicts: moving a key to the end and taking the first are O(1) (a plain dict's
        # first key is found by skipping the holes its deletions left: quadratic under churn).
        self.table: OrderedDict[ObjectKey, History] = OrderedDict()
        self.spans: OrderedDict[str, Step] = OrderedDict()
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
        steps = hist.steps
        steps.append(step)
        hist.bytes += size
        self.bytes += size
        while len(steps) > MAX_STEPS or (hist.bytes > MAX_OBJECT_BYTES and len(steps) > 1):
            old = steps.popleft()
            hist.bytes -= old[SIZE]
            self.bytes -= old[SIZE]
            hist.dropped += 1
        while self.bytes > MAX_BYTES and len(table) > 1:
            self._evict()

    def grow(self, step: Step, extra: int) -> None:
        """A step's estimated size grew by ``extra`` (a reconcile's end brought an error)."""
        step[SIZE] += extra
        hist = self.table.get(step[OKEY])
        if hist is not None and any(s is step for s in hist.steps):
            hist.bytes += extra
            self.bytes += extra

    def _evict(self) -> None:
        _, hist = self.table.popitem(last=False)
        self.bytes -= hist.bytes
        self.evicted += 1

    def note_span(self, span_id: str, step: Step) -> None:
        spans = self.spans
        spans[span_id] = step
        if len(spans) > MAX_SPANS:
            spans.popitem(last=False)

    def history(self, ref: ObjectRef) -> ObjectHistorySnapshot | None:
        """``ref``'s history, or None when no step touched it."""
        hist = self.table.get((ref.resource, ref.namespace, ref.name))
        if hist is None:
            return None
        return {
            "resource": ref.resource,
            "namespace": ref.namespace,
            "name": ref.name,
            "steps": sorted((step_dict(s) for s in hist.steps), key=_ts),
            "dropped": hist.dropped,
            "bytes": hist.bytes,
        }

    def span(self, span_id: str) -> ObjectStepSnapshot | None:
        """The reconcile step of ``span_id``, if still indexed."""
        step = self.spans.get(span_id) if span_id else None
        return step_dict(step) if step is not None else None

    def resources(self) -> set[str]:
        """The resources of the objects with a history."""
        return {okey[0] for okey in self.table}


def _ts(step: ObjectStepSnapshot) -> int:
    return step["ts"]


def step_dict(step: Step) -> ObjectStepSnapshot:
    """A step as its snapshot's plain dict."""
    return dict(zip(FIELDS, step, strict=False))  # type: ignore[return-value]


def _step_from(data: Any, okey: ObjectKey) -> Step:
    step: Step = [data.get(f, 0 if f in _NUMERIC else "") for f in FIELDS]
    step[RESOURCE] = okey[0]
    step.append(okey)
    step.append(0)
    for i in _INT_FIELDS:
        if type(step[i]) is not int:
            raise TypeError("step field is not an int")
    step[SIZE] = step_bytes(step)
    return step


_NUMERIC = frozenset({"ts", "code", "dur_ns", "wait_ms", "merged"})
_INT_FIELDS = (TS, CODE, DUR_NS, MERGED)


def dump(state: State, refs: Iterable[ObjectRef]) -> dict[str, ObjectHistorySnapshot]:
    """The histories of ``refs`` (those with one), by ``resource/namespace/name``."""
    out: dict[str, ObjectHistorySnapshot] = {}
    for ref in refs:
        hist = state.objects.history(ref)
        if hist is not None:
            out[ref.path] = hist
    return out


def load(state: State, data: Any) -> None:
    """Adopt the histories a snapshot carries (their reconciles indexed by span id too)."""
    objs = state.objects
    for hist in (data or {}).values():
        okey = (str(hist["resource"]), str(hist["namespace"]), str(hist["name"]))
        if okey in objs.table:
            continue  # this state's own is newer
        for d in hist.get("steps", ()):
            step = _step_from(d, okey)
            objs.add(okey, step)
            if step[STEP] == "reconcile" and step[SPAN_ID]:
                objs.note_span(step[SPAN_ID], step)
        if okey in objs.table:
            objs.table[okey].dropped += int(hist.get("dropped", 0))


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


@also_handles(ReconcileStarted)
def _reconcile_began(state: State, ev: ReconcileStarted, inst: InstanceRecord) -> None:
    objs = state.objects
    key = ev.key
    name = ev.name
    namespace = ev.namespace
    if not name:
        namespace, name = _split(key)
    resource = ev.resource
    okey = (resource, namespace, name)
    wait = ev.queue_wait_ms
    event = ev.trigger_event
    kind = ev.trigger_kind
    obj = ev.trigger_object
    merged = ev.trigger_merged
    paths = ev.trigger_paths
    step: Step = [
        ev.ts,
        ev.instance,
        "reconcile",
        resource,
        ev.controller,
        key,
        event,
        kind,
        obj,
        ev.trigger_rv,
        paths,
        ev.trigger_writer,
        ev.trigger_verb,
        0,
        "",
        "",
        "",
        0,
        wait,
        merged,
        ev.trace_id,
        ev.span_id,
        ev.trigger_trace_id,
        ev.trigger_span_id,
        ev.trigger_controller,
        ev.trigger_key,
        "",
        "",
        okey,
        _STEP_BASE + len(key) + len(paths),
    ]
    objs.add(okey, step)
    if ev.span_id:
        objs.note_span(ev.span_id, step)
    if not obj or event not in _WATCH_EVENTS:
        return
    enqueued = ev.ts - ms_to_ns(wait)
    first_obj = ev.first_trigger_object
    if merged > 1 and first_obj and ev.first_trigger_event in _WATCH_EVENTS:
        fkind = ev.first_trigger_kind
        fns, fname = _split(first_obj)
        first: Step = [
            enqueued,
            ev.instance,
            "watch",
            "",
            ev.controller,
            key,
            ev.first_trigger_event,
            fkind,
            first_obj,
            ev.first_trigger_rv,
            "",
            ev.first_trigger_writer,
            "",
            0,
            "",
            "",
            "",
            0,
            0.0,
            merged,
            "",
            "",
            ev.first_trigger_trace_id,
            ev.first_trigger_span_id,
            "",
            "",
            "",
            "",
            None,
            _STEP_BASE + len(key),
        ]
        fkey = first[OKEY] = (resource_of_kind(fkind), fns, fname)
        first[RESOURCE] = fkey[0]
        objs.add(fkey, first)
        enqueued = ev.ts  # the newest of several: at some time up to the begin
    tns, tname = _split(obj)
    tkey = (resource_of_kind(kind), tns, tname)
    watch: Step = step.copy()
    watch[TS] = enqueued
    watch[STEP] = "watch"
    watch[WAIT_MS] = 0.0
    watch[TRACE_ID] = watch[SPAN_ID] = ""
    watch[OKEY] = tkey
    watch[RESOURCE] = tkey[0]
    objs.add(tkey, watch)


@also_handles(ReconcileFinished)
def _reconcile_finished(state: State, ev: ReconcileFinished, inst: InstanceRecord) -> None:
    objs = state.objects
    step = objs.spans.get(ev.span_id)
    if step is None:
        return  # its begin was not seen (a viewer attached mid-reconcile) or was dropped
    outcome = ev.outcome
    result: str = ev.result
    if outcome != _OK and result == _SUCCESS:
        result = "error" if outcome == _ERROR else str(outcome)
    step[RESULT] = result
    step[ACTION] = ev.action
    step[DUR_NS] = ev.dur_ns
    error = ev.error
    if error:
        error = error[:MAX_ERROR]
        step[ERROR] = error
        objs.grow(step, len(error))


@also_handles(ApiRequestCompleted)
def _request(state: State, ev: ApiRequestCompleted, inst: InstanceRecord) -> None:
    verb = ev.verb
    name = ev.name
    if verb not in _WRITE_VERBS or not name:
        return
    objs = state.objects
    okey = (ev.resource, ev.namespace, name)
    parent = ev.parent_id
    made_in = objs.spans.get(parent) if parent else None
    controller = key = ""
    if made_in is not None:
        controller = made_in[CONTROLLER]
        key = made_in[KEY]
    sub = ev.subresource
    error = ev.error[:MAX_ERROR] if ev.error else ""
    step: Step = [
        ev.ts,
        ev.instance,
        "write",
        ev.resource,
        controller,
        key,
        "",
        "",
        "",
        ev.resource_version,
        "",
        "",
        f"{verb}/{sub}" if sub else verb,
        ev.code,
        "",
        "",
        error,
        ev.dur_ns,
        0.0,
        0,
        ev.trace_id,
        parent,
        "",
        "",
        "",
        "",
        "",
        "",
        okey,
        _STEP_BASE + len(key) + len(error),
    ]
    objs.add(okey, step)


@handles(EventRecorded)
def _event(state: State, ev: EventRecorded, inst: InstanceRecord) -> None:
    name = ev.name
    if not name:
        return
    objs = state.objects
    okey = (resource_of_kind(ev.object_kind), ev.namespace, name)
    parent = ev.parent_id
    made_in = objs.spans.get(parent) if parent else None
    controller = key = ""
    if made_in is not None:
        controller = made_in[CONTROLLER]
        key = made_in[KEY]
    step: Step = [
        ev.ts,
        ev.instance,
        "event",
        okey[0],
        controller,
        key,
        str(ev.action),
        ev.object_kind,
        "",
        "",
        "",
        "",
        "",
        0,
        "",
        "",
        "",
        0,
        0.0,
        0,
        ev.trace_id,
        parent,
        "",
        "",
        "",
        "",
        ev.type,
        ev.reason,
        okey,
        _STEP_BASE + len(key),
    ]
    objs.add(okey, step)
