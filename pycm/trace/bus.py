"""The trace bus: synchronous O(1) ``emit``, a log whose last events (the ring) backfill new
subscribers, bounded per-subscriber queues that drop their oldest events and say how many they
lost, and the steps that emit a begin and an end event around a block.

Its parts, one concept a module: the log, its one delivery and the subscriptions that read it
(pycm.trace.subscription), steps (pycm.trace.step), the compact reconcile records and how a
reader gets their events back (pycm.trace.records) and their one writer
(pycm.trace.reconciles.ReconcileRecorder). This module is the bus itself: stamping, points,
the ring's backfill, the reconcile heads and the wall-clock offset the records keep, and the
process's default bus. The names a reader of the bus uses are re-exported here.

One process has one default bus (:func:`default_bus`); components take a bus by injection and
tests make their own.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pycm.trace.causes import CauseTable
from pycm.trace.context import (
    IdKey,
    _current,
    new_id_key,
    new_root_ids,
    new_span_id,
    record_ids,
    span_ids,
)
from pycm.trace.events import Event, StepBegin
from pycm.trace.records import (
    RECONCILE_BEGIN,
    RECONCILE_END,
    RECONCILE_FAILED,
    Record,
    materialize,
    materialize_all,
)
from pycm.trace.step import Step, _step_classes, shared_fields, step_class
from pycm.trace.subscription import (
    DEFAULT_RING_SIZE,
    DEFAULT_SUBSCRIBER_QUEUE,
    EventLog,
    Subscription,
)
from pycm.util.clock import REAL_CLOCK, Clock, RealClock

__all__ = [
    "RECONCILE_BEGIN",
    "RECONCILE_END",
    "RECONCILE_FAILED",
    "Bus",
    "HeadHolder",
    "Record",
    "Step",
    "Subscription",
    "default_bus",
    "materialize",
    "record_ids",
    "set_default_bus",
    "shared_fields",
    "step_class",
]


def _slot_setter(name: str) -> Callable[[Event, Any], None]:
    """The store into the envelope slot ``name`` of any event, frozen or not: the slot
    descriptor's own setter, cheaper than object.__setattr__ (which looks the name up first)."""
    setter: Callable[[Event, Any], None] = Event.__dict__[name].__set__
    return setter


# The bus stamps the envelope into events the emitter has frozen; only these setters may.
_set_seq = _slot_setter("seq")
_set_ts = _slot_setter("ts")
_set_instance = _slot_setter("instance")
_set_trace_id = _slot_setter("trace_id")
_set_span_id = _slot_setter("span_id")
_set_parent_id = _slot_setter("parent_id")
_set_dur_ns = _slot_setter("dur_ns")


class HeadHolder(Protocol):
    """What keeps a reconcile head (``Bus.reconcile_head``): told when to ask for a new one."""

    def renew_head(self) -> None: ...


class Bus(EventLog):
    """The process's event bus: an :class:`~pycm.trace.subscription.EventLog` (the log, its
    delivery, its subscriptions) that stamps what it is given: ``emit`` stamps an event's
    envelope and delivers it, ``point`` places a point event in the current step's trace,
    ``step`` makes a :class:`Step`; ``subscribe`` opens a reader, ``recent`` reads the ring."""

    def __init__(
        self,
        *,
        instance: str = "",
        ring_size: int = DEFAULT_RING_SIZE,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        super().__init__(instance=instance, ring_size=ring_size, clock=clock)
        # The key the ids of this bus's reconciles are derived from (see the record layouts).
        self._id_key: IdKey = new_id_key()
        # What holds a reconcile head of this bus (reconcile_head): told when one is renewed.
        self._head_holders: weakref.WeakSet[HeadHolder] = weakref.WeakSet()
        # The reconcile step reads one clock at each end: its begin's wall time is its
        # monotonic reading plus ``_wall_offset`` while that reading is before
        # ``_offset_due`` (else :meth:`offset_at` reads the wall clock and renews the offset;
        # a record holds the offset it was made with).
        # Only for the real clock, whose readings are the system's: the offset is renewed
        # every _OFFSET_TTL_NS, so a derived time is off by at most the wall clock's slew
        # against the monotonic one over that second (NTP slews at most 500 ppm: 0.5 ms), and
        # a step of the wall clock (settimeofday) shows within a second. Any other clock (a
        # FakeClock in tests) is read exactly every time: its due time is never reached.
        self._wall_offset = 0
        self._offset_due = 0 if isinstance(clock, RealClock) else -(1 << 63)
        # Why each reconcile ran: this manager's writes and the writers objects name
        # (pycm.trace.causes), filled by the API client and the informers of this bus.
        self.causes = CauseTable()
        _buses.add(self)

    def offset_at(self, monotonic_ns: int) -> int:
        """The wall clock's offset (ns) from the monotonic reading ``monotonic_ns`` just taken:
        the wall clock read, and the bus's offset renewed (see ``_offset_due``; the reconcile
        step's slow path). ``monotonic_ns`` plus it is the wall time read."""
        offset = self._wall_ns() - monotonic_ns
        if self._offset_due >= 0:
            self._wall_offset = offset
            self._offset_due = monotonic_ns + _OFFSET_TTL_NS
        return offset

    @property
    def instance(self) -> str:
        """The instance name stamped into events that carry none."""
        return self._instance

    @instance.setter
    def instance(self, instance: str) -> None:
        self._instance = instance
        self._renew_heads()

    @property
    def id_key(self) -> IdKey:
        """The key the ids of this bus's root reconciles are derived from."""
        return self._id_key

    @id_key.setter
    def id_key(self, key: IdKey) -> None:
        self._id_key = key
        self._renew_heads()

    def reconcile_head(self, holder: HeadHolder, controller: str, resource: str) -> Record:
        """The head of ``controller``'s root reconcile records on this bus (see the record
        layouts). ``holder`` keeps it, and its ``renew_head()`` is called whenever a field of
        it changes (the instance is named, the id key redrawn after a fork): it then asks for
        a new one. Records made before keep the head they were made with."""
        self._head_holders.add(holder)
        return (self._instance, self._id_key, "", controller, resource)

    def _renew_heads(self) -> None:
        for holder in list(self._head_holders):
            holder.renew_head()

    def emit(self, event: Event) -> None:
        """Stamp the envelope (seq, ts, and instance if unset) and deliver. O(subscribers)."""
        self._seq = seq = self._seq + 1
        _set_seq(event, seq)
        _set_ts(event, self._wall_ns())
        if not event.instance:
            _set_instance(event, self._instance)
        self.deliver(event)

    def point(self, event: Event, *, dur_ns: int = 0) -> Event:
        """Emit a point event inside the current step: its trace, the step as parent, an id
        of its own (kept if the caller chose it up front: the API client puts it in the
        request's traceparent). Outside any step, a timed point (``dur_ns``) starts its own
        trace — it may become a span — and an untimed one carries no ids (it is in no trace),
        which keeps hot untraced points such as queue adds from informer handlers cheap."""
        parent = _current.get()
        if parent is not None:
            trace_id, parent_id = span_ids(parent)
            _set_trace_id(event, trace_id)
            _set_parent_id(event, parent_id)
            if not event.span_id:
                _set_span_id(event, new_span_id())
        elif dur_ns:
            trace_id, span_id = new_root_ids()
            _set_trace_id(event, trace_id)
            _set_span_id(event, span_id)
        if dur_ns:
            _set_dur_ns(event, dur_ns)
        self.emit(event)
        return event

    def step(self, begin: StepBegin) -> Step:
        """A step context manager that emits ``begin`` now and its END when the block exits."""
        # Allocated empty and its slots stored here: a constructor would cost a frame more.
        step = (_step_classes.get(type(begin)) or step_class(type(begin)))()
        step.begin = begin
        step._bus = self
        step._end = None
        return step

    def recent(self, since: int = 0) -> list[Event]:
        """Events still in the ring (the last ``ring_size``) with ``seq > since``, oldest
        first."""
        return materialize_all(self._recent_entries(since))

    def subscribe(
        self,
        *,
        name: str = "subscriber",
        maxsize: int = DEFAULT_SUBSCRIBER_QUEUE,
        since: int | None = None,
        kinds: Iterable[str] | None = None,
    ) -> Subscription:
        """A new subscription; with ``since`` it is first filled from the ring (``seq > since``).

        If the ring no longer holds every event after ``since``, the subscriber's first read is a
        lag notice counting the ones it can never get.
        """
        kind_set = frozenset(kinds) if kinds is not None else None
        sub = Subscription(self, name, maxsize, kind_set)
        if since is not None:
            if sub._buffer is None:
                # It reads the log from the oldest of the ring's events after `since`; the
                # ones before that the ring no longer holds are lost to it. (Any overflow of
                # its maxsize shows in the seqs: Subscription.)
                wanted = min(since, self._seq) + 1
                held = self._seq - min(len(self._ring), self._ring_size) + 1
                sub._next_seq = max(wanted, held)
                sub._lost = sub._next_seq - wanted
            else:
                backlog = self.recent(since)
                # Events after `since` that the ring no longer holds are lost to this subscriber.
                gone = backlog[0].seq - since - 1 if backlog else 0
                if gone > 0:
                    sub._lost += gone
                for event in backlog:
                    sub._push(event)
        self._subscribers = (*self._subscribers, sub)
        self._set_sinks()
        return sub


_OFFSET_TTL_NS = 1_000_000_000

# Every bus, for the fork hook below.
_buses: weakref.WeakSet[Bus] = weakref.WeakSet()


def _rekey() -> None:
    # A forked child would otherwise derive the same reconcile ids as its parent.
    for bus in list(_buses):
        bus.id_key = new_id_key()  # (renews the heads)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey)

_default = Bus()


def default_bus() -> Bus:
    """The process-wide bus that pycm's components use unless given another."""
    return _default


def set_default_bus(bus: Bus) -> Bus:
    """Replace the process-wide bus (the manager does this once, with its identity)."""
    global _default
    _default = bus
    return bus
