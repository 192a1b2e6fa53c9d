# Over 500 lines: one step-tuple layout, written by these handlers, read by this store and dump.
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
first). Time bounds them too, by the steps' own timestamps (so a replayed recording folds as the
live run did): a deleted object's history is dropped :data:`DELETED_TTL_NS` after its deletion was
seen unless a step touched it since (an object of that name made again), and a reconcile leaves the
span index at that age. Without them a manager under churn (pods made and deleted every second)
grew for over an hour, until 4 096 histories, most of deleted pods, had piled up (issue 40); a
recording (``--trace-file``, ``pycm why --replay``) keeps everything. Steps carry names, keys,
paths, counts and timings only, never object bodies.

The histories are not part of the snapshot (they would make every snapshot megabytes): a
snapshot carries the histories it is asked for (``State.snapshot(objects=...)``, the stream's
``objects=``), and :meth:`State.restore` adopts those.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypedDict

from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    EventRecorded,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
)
from pycm.trace.objref import ObjectRef, resource_of_kind
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.record import ms_to_ns
from pycm.trace.state.registry import also_handles, handles

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "FIELDS",
    "MAX_BYTES",
    "MAX_OBJECTS",
    "MAX_OBJECT_BYTES",
    "MAX_SPANS",
    "MAX_STEPS",
    "SECTION",
    "ObjectHistories",
    "ObjectHistorySnapshot",
    "ObjectStepSnapshot",
    "StateView",
    "attach",
    "dump",
    "load",
    "step_bytes",
]

MAX_STEPS = 50  # steps kept per object (the newest)
MAX_OBJECT_BYTES = 64 * 1024  # estimated bytes of one object's steps
MAX_BYTES = 16 * 1024 * 1024  # estimated bytes of all histories
MAX_OBJECTS = 4096  # objects with a history (least recently touched evicted)
MAX_SPANS = 8192  # reconciles indexed by span id, for walking chains (oldest dropped)
DELETED_TTL_NS = 15 * 60 * 10**9  # a deleted object's history, and an indexed reconcile, kept
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
"""A step's fields, in the order its snapshot (:class:`ObjectStepSnapshot`) lists them."""

# A step as held: a flat tuple of names, keys, ids and numbers, its layout set by its tag. Tuples
# of such atoms are what folding can make cheapest: one allocation, and the garbage collector
# stops tracking them at its first pass, so thousands of held steps add nothing to every later
# collection (lists, or the events themselves, would be traversed by each of them). Every
# layout starts (tag, object key, estimated size, ts, instance, controller, key).
TAG, OKEY, SIZE, TS, INSTANCE, CONTROLLER, KEY = range(7)
# RECONCILE: the reconcile and the trigger that started it (``event`` .. ``cause_key``), then
# OWN_WATCH_TS: when the trigger was an event of the reconciled object itself (the common case),
# the time it was enqueued (that watch step is read from the same tuple: 0 when it was not);
# once the reconcile ended, FINISH more: result, action, dur_ns, error.
# WATCH: the same layout for an event of another object (its ts is when it was enqueued).
(EVENT_, KIND_, OBJECT_, RV_, PATHS_, WRITER_, VERB_, MERGED_, WAIT_MS_, TRACE_ID_, SPAN_ID_) = (
    range(7, 18)
)
CAUSE_TRACE_ID_, CAUSE_SPAN_ID_, CAUSE_CONTROLLER_, CAUSE_KEY_, OWN_WATCH_TS = range(18, 23)
RESULT_, ACTION_, DUR_NS_, ERROR_ = range(23, 27)
# Tags (FIRST: the first of several events merged into one reconcile; RESTORED: a step adopted
# from a snapshot, (tag, key, size, its dict)).
RECONCILE, WATCH, FIRST, WRITE, EVENT, RESTORED = range(6)

ObjectKey = tuple[str, str, str]  # (resource, namespace, name)
Step = tuple[Any, ...]


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
    return int(step[SIZE])


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
                ts = _step_ts(step)
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
            if hist is not None and _step_ts(hist[-1]) < cutoff:  # untouched since: not made again
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
            ts = _step_ts(step)
        if ts > self._spans_due:  # the oldest indexed reconcile is past the age bound
            cutoff = ts - DELETED_TTL_NS
            while spans and _step_ts(next(iter(spans.values()))) < cutoff:
                spans.popitem(last=False)
            self._spans_due = _step_ts(next(iter(spans.values()))) + DELETED_TTL_NS

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


def _step_ts(step: Step) -> int:
    """A held step's time (a restored one keeps its time in its dict)."""
    return int(step[3]["ts"]) if step[TAG] == RESTORED else int(step[TS])


_BLANK: dict[str, Any] = {f: 0 if f in ("ts", "code", "dur_ns", "merged") else "" for f in FIELDS}
_BLANK["wait_ms"] = 0.0
# The fields of a reconcile or watch step's tuple, by position (from ts).
_TRIGGERED = (
    ("ts", TS),
    ("instance", INSTANCE),
    ("controller", CONTROLLER),
    ("key", KEY),
    ("event", EVENT_),
    ("kind", KIND_),
    ("object", OBJECT_),
    ("rv", RV_),
    ("paths", PATHS_),
    ("writer", WRITER_),
    ("verb", VERB_),
    ("merged", MERGED_),
    ("cause_trace_id", CAUSE_TRACE_ID_),
    ("cause_span_id", CAUSE_SPAN_ID_),
    ("cause_controller", CAUSE_CONTROLLER_),
    ("cause_key", CAUSE_KEY_),
)
# The fields of the other layouts, in their order (from ts).
_WRITE = [
    "ts",
    "instance",
    "controller",
    "key",
    "rv",
    "verb",
    "code",
    "error",
    "dur_ns",
    "trace_id",
    "span_id",
]
_EVENT = [
    "ts",
    "instance",
    "controller",
    "key",
    "event",
    "kind",
    "trace_id",
    "span_id",
    "type",
    "reason",
]
_FIRST = [
    "ts",
    "instance",
    "controller",
    "key",
    "event",
    "kind",
    "object",
    "rv",
    "writer",
    "merged",
    "cause_trace_id",
]
_FIRST.append("cause_span_id")


def step_dicts(step: Step) -> list[ObjectStepSnapshot]:
    """A step as its snapshot's plain dicts: one, or two for a reconcile of the object's own
    watch event (that event's step, then the reconcile's)."""
    tag = step[TAG]
    if tag == RESTORED:
        return [dict(step[3])]  # type: ignore[list-item]
    d = _BLANK.copy()
    d["resource"] = step[OKEY][0]
    if tag in (WRITE, EVENT, FIRST):
        names = _WRITE if tag == WRITE else _EVENT if tag == EVENT else _FIRST
        d.update(zip(names, step[TS:], strict=True))
        d["step"] = "write" if tag == WRITE else "event" if tag == EVENT else "watch"
        return [d]  # type: ignore[list-item]
    for name, i in _TRIGGERED:
        d[name] = step[i]
    if tag == WATCH:
        d["step"] = "watch"
        return [d]  # type: ignore[list-item]
    out: list[Any] = []
    if step[OWN_WATCH_TS]:
        watch = d.copy()
        watch["ts"] = step[OWN_WATCH_TS]
        watch["step"] = "watch"
        out.append(watch)
    d["step"] = "reconcile"
    d["wait_ms"] = step[WAIT_MS_]
    d["trace_id"] = step[TRACE_ID_]
    d["span_id"] = step[SPAN_ID_]
    if len(step) > RESULT_:
        d["result"], d["action"], d["dur_ns"], d["error"] = step[RESULT_:]
    out.append(d)
    return out


def step_dict(step: Step) -> ObjectStepSnapshot:
    """A step's own dict (a reconcile's, not its watch event's)."""
    return step_dicts(step)[-1]


def _has_first(ev: ReconcileStarted) -> bool:
    """Whether a reconcile's trigger names the first of several merged watch events."""
    return (
        ev.trigger_merged > 1
        and bool(ev.first_trigger_object)
        and ev.first_trigger_event in _WATCH_EVENTS
    )


def _step_from(data: Any, okey: ObjectKey) -> Step:
    d = {f: data.get(f, _BLANK[f]) for f in FIELDS}
    d["resource"] = okey[0]
    for f in _INT_FIELDS:
        if type(d[f]) is not int:
            raise TypeError("step field is not an int")
    size = _STEP_BASE + len(str(d["key"])) + len(str(d["paths"])) + len(str(d["error"]))
    return (RESTORED, okey, size, d)


_INT_FIELDS = ("ts", "code", "dur_ns", "merged")


SECTION = "objects"


class StateView(Stream, Protocol):
    """The state as this domain sees it."""

    objects: ObjectHistories


def attach(state: StateView) -> None:
    state.objects = ObjectHistories()


def dump(state: StateView, at: Moment) -> dict[str, ObjectHistorySnapshot]:
    """The histories of ``at.objects`` (those with one), by ``resource/namespace/name``."""
    out: dict[str, ObjectHistorySnapshot] = {}
    for ref in at.objects:
        hist = state.objects.history(ref)
        if hist is not None:
            out[ref.path] = hist
    return out


def load(state: StateView, data: Any) -> None:
    """Adopt the histories a snapshot carries (their reconciles indexed by span id too)."""
    objs = state.objects
    for hist in (data or {}).values():
        okey = (str(hist["resource"]), str(hist["namespace"]), str(hist["name"]))
        if okey in objs.table:
            continue  # this state's own is newer
        for d in hist.get("steps", ()):
            step = _step_from(d, okey)
            objs.add(okey, step)
            span_id = step[3]["span_id"]
            if step[3]["step"] == "reconcile" and span_id:
                objs.note_span(span_id, step)
        if okey in objs.table:
            objs.table[okey].dropped += int(hist.get("dropped", 0))


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


@also_handles(ReconcileStarted)
def _reconcile_began(state: StateView, ev: ReconcileStarted, inst: InstanceRecord) -> None:
    objs = state.objects
    key = ev.key
    name = ev.name
    namespace = ev.namespace
    if not name:
        namespace, name = _split(key)
    okey = (ev.resource, namespace, name)
    paths = ev.trigger_paths
    size = _STEP_BASE + len(key) + len(paths)
    ts = ev.ts
    wait = ev.queue_wait_ms
    event = ev.trigger_event
    obj = ev.trigger_object
    tkey: ObjectKey | None = None
    own_ts = 0
    if obj and event in _WATCH_EVENTS:
        enqueued = ts - ms_to_ns(wait)
        if ev.trigger_merged > 1 and _has_first(ev):
            fns, fname = _split(ev.first_trigger_object)
            fkey = (resource_of_kind(ev.first_trigger_kind), fns, fname)
            first: Step = (FIRST, fkey, _STEP_BASE + len(key), enqueued, ev.instance, ev.controller)
            first += (key, ev.first_trigger_event, ev.first_trigger_kind)
            first += (ev.first_trigger_object, ev.first_trigger_rv, ev.first_trigger_writer)
            first += (ev.trigger_merged, ev.first_trigger_trace_id, ev.first_trigger_span_id)
            objs.add(fkey, first)
            enqueued = ts  # the newest of several came at some time up to the begin
        resource = resource_of_kind(ev.trigger_kind)
        if obj == key and resource == okey[0]:
            own_ts = enqueued  # the object's own event: read from the reconcile's step
            size *= 2  # (two steps shown: counted as two, as a restored history holds them)
        else:
            tns, tname = _split(obj)
            tkey = (resource, tns, tname)
    span_id = ev.span_id
    # One tuple display (no intermediate tuples): this runs for every reconcile.
    step: Step = (
        RECONCILE,
        okey,
        size,
        ts,
        ev.instance,
        ev.controller,
        key,
        event,
        ev.trigger_kind,
        obj,
        ev.trigger_rv,
        paths,
        ev.trigger_writer,
        ev.trigger_verb,
        ev.trigger_merged,
        wait,
        ev.trace_id,
        span_id,
        ev.trigger_trace_id,
        ev.trigger_span_id,
        ev.trigger_controller,
        ev.trigger_key,
        own_ts,
    )
    objs.add(okey, step)
    if span_id:
        objs.note_span(span_id, step)
    if tkey is not None:  # another object's event: its own step, in its history
        watch = (WATCH, tkey, size, enqueued, *step[INSTANCE:WAIT_MS_], 0.0, "", "")
        objs.add(tkey, (*watch, *step[CAUSE_TRACE_ID_:OWN_WATCH_TS], 0))
    if event == "delete" and obj:
        objs.note_deleted(tkey if tkey is not None else okey, ts)


@also_handles(ReconcileFinished)
def _reconcile_finished(state: StateView, ev: ReconcileFinished, inst: InstanceRecord) -> None:
    objs = state.objects
    step = objs.spans.get(ev.span_id)
    if step is None or step[TAG] != RECONCILE or len(step) > RESULT_:
        return  # its begin was not seen (a viewer attached mid-reconcile), dropped, or ended
    outcome = ev.outcome
    result = str(ev.result)  # (a plain str: an enum member would keep the step GC-tracked)
    if outcome != _OK and result == _SUCCESS:
        result = "error" if outcome == _ERROR else str(outcome)
    error = ev.error[:MAX_ERROR] if ev.error else ""
    extra = len(error)
    done = (RECONCILE, step[OKEY], step[SIZE] + extra, *step[TS:], result, ev.action, ev.dur_ns)
    objs.finish(step, (*done, error), extra)


@also_handles(ApiRequestCompleted)
def _request(state: StateView, ev: ApiRequestCompleted, inst: InstanceRecord) -> None:
    name = ev.name
    verb = ev.verb
    if not name or verb not in _WRITE_VERBS:
        return
    objs = state.objects
    okey = (ev.resource, ev.namespace, name)
    parent = ev.parent_id
    made_in = objs.spans.get(parent) if parent else None
    controller = key = ""
    if made_in is not None and made_in[TAG] == RECONCILE:
        controller = made_in[CONTROLLER]
        key = made_in[KEY]
    sub = ev.subresource
    error = ev.error[:MAX_ERROR] if ev.error else ""
    step = (
        WRITE,
        okey,
        _STEP_BASE + len(key) + len(error),
        ev.ts,
        ev.instance,
        controller,
        key,
        ev.resource_version,
        f"{verb}/{sub}" if sub else verb,
        ev.code,
        error,
        ev.dur_ns,
        ev.trace_id,
        parent,
    )
    objs.add(okey, step)


@handles(EventRecorded)
def _event(state: StateView, ev: EventRecorded, inst: InstanceRecord) -> None:
    name = ev.name
    if not name:
        return
    objs = state.objects
    okey = (resource_of_kind(ev.object_kind), ev.namespace, name)
    parent = ev.parent_id
    made_in = objs.spans.get(parent) if parent else None
    controller = key = ""
    if made_in is not None and made_in[TAG] == RECONCILE:
        controller = made_in[CONTROLLER]
        key = made_in[KEY]
    step: Step = (EVENT, okey, _STEP_BASE + len(key), ev.ts, ev.instance, controller, key)
    step += (str(ev.action), ev.object_kind, ev.trace_id, parent, ev.type, ev.reason)
    objs.add(okey, step)
