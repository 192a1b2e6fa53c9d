"""Compact reconcile records: the tuples a reconcile appends to the bus in place of its begin
and end events, their layouts, and how a reader gets the event back (:func:`materialize`).

The writer is :class:`pycm.trace.reconciles.ReconcileRecorder`; the bus's log and the
subscriptions hold the records as they are, and every read hands out the event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pycm.trace.causes import Trigger
from pycm.trace.context import record_ids
from pycm.trace.events import SCHEMA_VERSION, Event, Outcome, blank_class
from pycm.trace.kinds import ReconcileFinished, ReconcileResult, ReconcileStarted

__all__ = [
    "RECONCILE_BEGIN",
    "RECONCILE_END",
    "RECONCILE_FAILED",
    "Record",
    "kind_of",
    "materialize",
    "materialize_all",
    "record_ids",
]

# Every reconcile emits a begin and an end event (pycm.controller.worker.Controller.process,
# through pycm.trace.reconciles.ReconcileRecorder).
# Built as event objects, each is ~20 slot stores, a class switch, and an object the cyclic GC
# tracks for as long as the ring holds it (traversed by every older-generation collection: as
# much again as building it). So the reconcile step appends a *record* instead: a plain tuple
# of the event's values, which the GC untracks at its first collection (it holds only strings
# and numbers). Readers never see one: a subscription, ``recent()`` and the backfill of a new
# subscription hand out the event, built from the record when it is read (``materialize``), with
# every field, seq and kind it would have had. Each reader builds its own object (equal, not
# identical, to another reader's), so nothing long-lived is tracked by the GC either way.
#
# The layouts (the tag first, the seq second, as every reader of a buffer needs them):
#   head:  (instance, ids, parent_id, controller, resource)
#   begin: (RECONCILE_BEGIN, seq, head, start_ns, wall_offset_ns, key, queue_wait_ns, retries,
#           trigger or None)
#   end:   (RECONCILE_END, seq, begin record, end_ns, result value, action, uid, api_calls,
#           requeue_after_ms)
#   failed end: (RECONCILE_FAILED, ...the end's nine..., outcome value, error)
# What every root reconcile of a controller repeats is its *head*, one tuple its recorder holds
# (``Bus.reconcile_head``; renewed when the bus's instance or id key changes: an old record
# keeps the head it was made with), so a begin stores 9 values, not 12. The times are
# the two monotonic readings the step takes anyway: the begin's wall time is ``start_ns +
# wall_offset_ns`` (the offset is the bus's current one, an int shared by every record of its
# second: ``Bus.offset_at``) and the end's duration ``end_ns - start_ns``; adding them when
# read, not when written, spares a reconcile two big-int operations and two int objects. An
# end with the tag RECONCILE_END ended ok with a result other than error; any other end (the
# sync raised, the handling failed, cancelled) is RECONCILE_FAILED, with its outcome and error
# after the common nine.
# ``ids`` is the bus's id key (``Bus.id_key``, three items) for a root reconcile, whose ids are
# derived from it and the begin's seq when read (pycm.trace.context.reconcile_ids: none are
# drawn per reconcile), or the (trace_id, span_id) pair of a reconcile nested in a step.
# ``trigger`` is a pycm.trace.causes.Trigger (its kind, resource_version, event, trace_id and
# span_id); the end's ts is the begin's plus dur_ns, as a step's. The key's namespace and name
# are split from the key when the begin is built.

RECONCILE_BEGIN = 0
RECONCILE_END = 1
RECONCILE_FAILED = 2

Record = tuple[Any, ...]

_BEGIN_TWIN: Any = blank_class(ReconcileStarted)
_END_TWIN: Any = blank_class(ReconcileFinished)
_OUTCOMES = {o.value: o for o in Outcome}
_OK = Outcome.OK
_RESULTS = {r.value: r for r in ReconcileResult}


def _reconcile_begin(r: Record) -> Event:
    # One unpacking into locals, then one store per slot: cheaper than indexing per field.
    _, seq, head, start_ns, offset_ns, key, wait_ns, retries, trigger = r
    instance, _, parent_id, controller, resource = head
    e = _BEGIN_TWIN()
    e.v = SCHEMA_VERSION
    e.seq = seq
    e.ts = start_ns + offset_ns
    e.instance = instance
    e.trace_id, e.span_id = record_ids(r)
    e.parent_id = parent_id
    e.dur_ns = 0
    e.controller = controller
    e.key = key
    e.namespace, _, e.name = key.rpartition("/")
    e.resource = resource
    e.queue_wait_ms = wait_ns / 1e6
    e.retries = retries
    if trigger is None:
        _no_trigger(e)
    else:
        _set_trigger(e, trigger)
    e.__class__ = ReconcileStarted
    event: Event = e
    return event


def _no_trigger(e: Any) -> None:
    e.trigger_kind = e.trigger_object = e.trigger_rv = e.trigger_event = e.trigger_paths = ""
    e.trigger_trace_id = e.trigger_span_id = e.trigger_controller = e.trigger_key = ""
    e.trigger_verb = e.trigger_writer = e.trigger_operation = e.trigger_write_time = ""
    e.trigger_merged = 0
    _no_first(e)


def _no_first(e: Any) -> None:
    e.first_trigger_event = e.first_trigger_kind = e.first_trigger_object = ""
    e.first_trigger_rv = e.first_trigger_writer = ""
    e.first_trigger_trace_id = e.first_trigger_span_id = ""


def _set_trigger(e: Any, trigger: Any) -> None:
    """The begin's trigger_* fields from its pycm.trace.causes.Trigger (any object with the
    five original fields will do: a plugin's own trigger, an old test's)."""
    if type(trigger) is not Trigger:
        _no_trigger(e)
        e.trigger_kind = trigger.kind
        e.trigger_rv = trigger.resource_version
        e.trigger_event = trigger.event
        e.trigger_trace_id = trigger.trace_id
        e.trigger_span_id = trigger.span_id
        e.trigger_merged = 1
        return
    e.trigger_kind = trigger.kind
    e.trigger_rv = trigger.resource_version
    e.trigger_event = trigger.event
    e.trigger_object = trigger.object
    e.trigger_paths = trigger.paths
    e.trigger_trace_id, e.trigger_span_id = trigger.ids()
    e.trigger_controller, e.trigger_key = trigger.cause_controller_key()
    e.trigger_verb = trigger.verb
    e.trigger_writer = trigger.writer
    e.trigger_operation = trigger.operation
    e.trigger_write_time = trigger.write_time
    e.trigger_merged = trigger.merged
    first = trigger.first
    if first is None:
        _no_first(e)
    else:
        e.first_trigger_event = first.event
        e.first_trigger_kind = first.kind
        e.first_trigger_object = first.object
        e.first_trigger_rv = first.resource_version
        e.first_trigger_writer = first.writer
        e.first_trigger_trace_id, e.first_trigger_span_id = first.ids()


def _reconcile_end(r: Record) -> Event:
    tag, seq, b, end_ns, result, action, uid, api_calls, requeue_after_ms = r[:9]
    head = b[2]
    start_ns = b[3]
    e = _END_TWIN()
    e.v = SCHEMA_VERSION
    e.seq = seq
    e.ts = end_ns + b[4]  # the begin's ts plus dur_ns
    e.instance = head[0]
    e.trace_id, e.span_id = record_ids(b)
    e.parent_id = head[2]
    e.dur_ns = end_ns - start_ns
    if tag == RECONCILE_END:
        e.outcome = _OK
        e.error = ""
    else:
        e.outcome = _OUTCOMES[r[9]]
        e.error = r[10]
    e.controller = head[3]
    e.key = b[5]
    e.result = _RESULTS[result]
    e.action = action
    e.uid = uid
    e.api_calls = api_calls
    e.requeue_after_ms = requeue_after_ms
    e.retries = b[7]
    e.__class__ = ReconcileFinished
    event: Event = e
    return event


# By tag: the record's builder and its kind's wire name.
_BUILDERS: tuple[Callable[[Record], Event], ...] = (
    _reconcile_begin,
    _reconcile_end,
    _reconcile_end,
)
_RECORD_KINDS: tuple[str, ...] = (
    ReconcileStarted.KIND,
    ReconcileFinished.KIND,
    ReconcileFinished.KIND,
)


def materialize(entry: Event | Record) -> Event:
    """The event an entry of the ring or of a subscription's buffer stands for."""
    if type(entry) is tuple:
        return _BUILDERS[entry[0]](entry)
    event: Event = entry  # type: ignore[assignment]
    return event


def kind_of(entry: Event | Record) -> str:
    if type(entry) is tuple:
        return _RECORD_KINDS[entry[0]]
    return entry.KIND  # type: ignore[union-attr]


def materialize_all(entries: Iterable[Event | Record]) -> list[Event]:
    builders = _BUILDERS
    return [e if type(e) is not tuple else builders[e[0]](e) for e in entries]  # type: ignore[misc]
