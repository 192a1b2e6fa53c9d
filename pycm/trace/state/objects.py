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

Every reconcile is also indexed by its span id
(:attr:`~pycm.trace.state.object_histories.ObjectHistories.spans`), so a chain of
causes can be walked from a reconcile to the reconcile whose write triggered it, and so on
(:mod:`pycm.trace.why`).

Folding is cheap (one list or tuple per step, a dict lookup or two); memory is bounded three
ways: :data:`MAX_STEPS` steps per object, :data:`MAX_OBJECT_BYTES` per object and
:data:`MAX_BYTES` in all (estimated sizes, :func:`step_bytes`), at most :data:`MAX_OBJECTS`
objects (the least recently touched evicted) and :data:`MAX_SPANS` indexed reconciles (oldest
first), all in :mod:`~pycm.trace.state.object_histories`, which holds the histories. Time
bounds them too, by the steps' own timestamps (so a replayed recording folds as the
live run did): a deleted object's history is dropped :data:`DELETED_TTL_NS` after its deletion was
seen unless a step touched it since (an object of that name made again), and a reconcile leaves the
span index at that age. Without them a manager under churn (pods made and deleted every second)
grew for over an hour, until 4 096 histories, most of deleted pods, had piled up (issue 40).
A deletion is seen as a reconcile's trigger — the newest event of its key, or the first of
several the queue merged — or as this manager's own delete that the server accepted. Seeing
the newest trigger only missed 42% of a churned Deployment's pods (a pod's DELETED event merged
with the ReplicaSet's update that followed it), and their histories piled up towards the count
bound at ~26 a minute — the growth `bench soak` still measured; the rest (a deletion merged
between two other events, ~6%) leave by the count and byte bounds. A
recording (``--trace-file``, ``pycm why --replay``) keeps everything. Steps carry names, keys,
paths, counts and timings only, never object bodies.

The histories are not part of the snapshot (they would make every snapshot megabytes): a
snapshot carries the histories it is asked for (``State.snapshot(objects=...)``, the stream's
``objects=``), and :meth:`State.restore` adopts those.

Modules: this one folds the events into steps (the domain: its handlers, dump and load);
:mod:`~pycm.trace.state.object_steps` holds a step's layouts and snapshot form;
:mod:`~pycm.trace.state.object_histories` the bounded histories and the span index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    EventRecorded,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
)
from pycm.trace.objref import resource_of_kind
from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.object_histories import ObjectHistories
from pycm.trace.state.object_steps import (
    CAUSE_TRACE_ID_,
    CONTROLLER,
    EVENT,
    FIRST,
    INSTANCE,
    KEY,
    MAX_ERROR,
    OKEY,
    OWN_WATCH_TS,
    RECONCILE,
    RESULT_,
    SIZE,
    STEP_BASE,
    TAG,
    TS,
    WAIT_MS_,
    WATCH,
    WRITE,
    ObjectHistorySnapshot,
    ObjectKey,
    Step,
    restored_step,
)
from pycm.trace.state.record import ms_to_ns
from pycm.trace.state.registry import also_handles, handles

if TYPE_CHECKING:
    from pycm.trace.state.startup import InstanceRecord

__all__ = ["SECTION", "StateView", "attach", "dump", "load"]

_WATCH_EVENTS = frozenset({"add", "update", "delete", "initial", "relist", "resync"})
_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
# A delete of this manager's that the server accepted (the object is gone, or going: a graceful
# delete's later steps keep its history, as for an object made again) or found nothing to delete.
_DELETED_CODES = frozenset({200, 202, 404})
_OK = Outcome.OK
_ERROR = Outcome.ERROR
_SUCCESS = ReconcileResult.SUCCESS
_RESULT_ERROR = ReconcileResult.ERROR

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
            step = restored_step(d, okey)
            objs.add(okey, step)
            span_id = step[3]["span_id"]
            if step[3]["step"] == "reconcile" and span_id:
                objs.note_span(span_id, step)
        if okey in objs.table:
            objs.table[okey].dropped += int(hist.get("dropped", 0))


# ---------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------


def _has_first(ev: ReconcileStarted) -> bool:
    """Whether a reconcile's trigger names the first of several merged watch events."""
    return (
        ev.trigger_merged > 1
        and bool(ev.first_trigger_object)
        and ev.first_trigger_event in _WATCH_EVENTS
    )


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
    size = STEP_BASE + len(key) + len(paths)
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
            first: Step = (FIRST, fkey, STEP_BASE + len(key), enqueued, ev.instance, ev.controller)
            first += (key, ev.first_trigger_event, ev.first_trigger_kind)
            first += (ev.first_trigger_object, ev.first_trigger_rv, ev.first_trigger_writer)
            first += (ev.trigger_merged, ev.first_trigger_trace_id, ev.first_trigger_span_id)
            objs.add(fkey, first)
            if ev.first_trigger_event == "delete":  # a deletion seen (module docstring)
                objs.note_deleted(fkey, enqueued)
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
        STEP_BASE + len(key) + len(error),
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
    if verb == "delete" and ev.code in _DELETED_CODES:  # a deletion seen (module docstring)
        objs.note_deleted(okey, ev.ts)


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
    step: Step = (EVENT, okey, STEP_BASE + len(key), ev.ts, ev.instance, controller, key)
    step += (str(ev.action), ev.object_kind, ev.trace_id, parent, ev.type, ev.reason)
    objs.add(okey, step)
