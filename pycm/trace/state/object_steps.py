"""An object history's steps: how one is held (a flat tuple whose layout its tag sets), how it
reads as a snapshot (:class:`ObjectStepSnapshot`, :func:`step_dicts`) and how a snapshot's step
is adopted back (:func:`restored_step`). The histories that hold them are in
:mod:`pycm.trace.state.object_histories`; the fold that makes them in
:mod:`pycm.trace.state.objects`, whose docstring describes the four kinds of step."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

__all__ = [
    "FIELDS",
    "MAX_ERROR",
    "STEP_BASE",
    "ObjectHistorySnapshot",
    "ObjectKey",
    "ObjectStepSnapshot",
    "Step",
    "restored_step",
    "step_bytes",
    "step_dict",
    "step_dicts",
    "step_ts",
]

MAX_ERROR = 256  # characters of an error kept in a step
# An estimate of one step's memory: the list (30 slots) and its id strings; a step's own
# strings (key, paths, error) are added by length. Shared strings are counted as if not.
STEP_BASE = 600

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
    """The estimated memory of a step (see :data:`STEP_BASE`)."""
    return int(step[SIZE])


def _ts(step: ObjectStepSnapshot) -> int:
    return step["ts"]


def step_ts(step: Step) -> int:
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


def restored_step(data: Any, okey: ObjectKey) -> Step:
    """A snapshot's step ``data`` of object ``okey`` as held (tagged RESTORED: its dict kept);
    TypeError for a field of the wrong type."""
    d = {f: data.get(f, _BLANK[f]) for f in FIELDS}
    d["resource"] = okey[0]
    for f in _INT_FIELDS:
        if type(d[f]) is not int:
            raise TypeError("step field is not an int")
    size = STEP_BASE + len(str(d["key"])) + len(str(d["paths"])) + len(str(d["error"]))
    return (RESTORED, okey, size, d)


_INT_FIELDS = ("ts", "code", "dur_ns", "merged")
