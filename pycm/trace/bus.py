"""The trace bus: synchronous O(1) ``emit``, a log whose last events (the ring) backfill new
subscribers, bounded per-subscriber queues that drop their oldest events and say how many they
lost, and the steps (:class:`Step`) that emit a begin and an end event around a block.

Nothing a subscriber does can slow the emitter, nor can their number: ``emit`` appends to the
log, which the subscriptions without a filter (all of pycm's own readers) read at their own
pace, each from its own position, and only if a reader is parked waiting, or a subscription
filters by kind, is there more to do (wake it; push to the filtered one's deque). A subscriber
that stops reading loses its oldest events; when it reads again it first receives a
:class:`~pycm.trace.kinds.SubscriberLagged` event with the count.

One process has one default bus (:func:`default_bus`); components take a bus by injection and
tests make their own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import os
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice, repeat
from types import TracebackType
from typing import Any, ClassVar, Protocol

from pycm.trace.causes import CauseTable, Trigger
from pycm.trace.context import (
    IdKey,
    _current,
    mark_failed,
    new_id_key,
    new_root_ids,
    new_span_id,
    new_trace_id,
    record_ids,
    span_ids,
    take_span_id,
    take_trace_id,
)
from pycm.trace.events import (
    _KW_ONLY,
    ENVELOPE_FIELDS,
    SCHEMA_VERSION,
    Event,
    Outcome,
    StepBegin,
    StepEnd,
    blank_class,
)
from pycm.trace.kinds import (
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    SubscriberLagged,
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
    "step_class",
]

_consume: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend
"""Runs an iterator to its end, in C, keeping nothing (``Bus._trim``'s bulk popleft)."""

DEFAULT_RING_SIZE = 8192
DEFAULT_SUBSCRIBER_QUEUE = 4096


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
_set_class: Callable[[object, type], None] = object.__dict__["__class__"].__set__

# --- compact reconcile records ----------------------------------------------------------------
#
# Every reconcile emits a begin and an end event (pycm.controller.worker.Controller.process).
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
# What every root reconcile of a controller repeats is its *head*, one tuple the controller
# holds (``Bus.reconcile_head``; renewed when the bus's instance or id key changes: an old
# record keeps the head it was made with), so a begin stores 9 values, not 12. The times are
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


def _kind_of(entry: Event | Record) -> str:
    if type(entry) is tuple:
        return _RECORD_KINDS[entry[0]]
    return entry.KIND  # type: ignore[union-attr]


def _materialize_all(entries: Iterable[Event | Record]) -> list[Event]:
    builders = _BUILDERS
    return [e if type(e) is not tuple else builders[e[0]](e) for e in entries]  # type: ignore[misc]


_get_current = _current.get
_set_current = _current.set
_reset_current = _current.reset


class HeadHolder(Protocol):
    """What keeps a reconcile head (``Bus.reconcile_head``): told when to ask for a new one."""

    def renew_head(self) -> None: ...


class Subscription:
    """One consumer's view of the bus: a bounded FIFO, read by ``async for`` or :meth:`drain`.

    A subscription that takes every kind (``_kinds is None``, as all of pycm's own readers do:
    the state model, the recorder, the OTel sink, the dashboard) has no buffer of its own while
    it is open: it reads the bus's log (``Bus._ring``), which holds every entry in seq order,
    from ``_next_seq`` on. The emitter does nothing per such subscription (see :class:`Bus`). Its
    queue is what the log holds after ``_next_seq``, of which it keeps the newest ``maxsize``
    (a reader that falls further behind loses the oldest, as a drop-oldest queue would): the
    losses are read off the seqs, plus ``_lost`` for the ones its backfill could not get.
    A filtered subscription (``kinds``) has a buffer, a deque with ``maxlen=maxsize`` fed
    through :meth:`_push` (which counts what it drops in ``_lost``); so has a closed one (what
    it had not read yet, kept for the reader that ends after it). Either may hold compact
    reconcile records (see ``materialize``): every read hands out the event a record stands for.
    Invariants: ``len(_buffer) <= maxsize``; while ``_buffer`` is None, the log holds every seq
    from ``max(_next_seq, Bus.last_seq - maxsize + 1)`` on (``Bus._set_sinks``, ``Bus._trim``).
    """

    __slots__ = (
        "_buffer",
        "_bus",
        "_closed",
        "_kinds",
        "_lost",
        "_next_seq",
        "_waiter",
        "maxsize",
        "name",
    )

    def __init__(self, bus: Bus, name: str, maxsize: int, kinds: frozenset[str] | None) -> None:
        if maxsize < 1:
            raise ValueError("a subscriber's queue holds at least one event")
        self._bus = bus
        self.name = name
        self.maxsize = maxsize
        self._kinds = kinds
        self._buffer: deque[Event | Record] | None = (
            None if kinds is None else deque(maxlen=maxsize)
        )
        self._lost = 0
        self._next_seq = bus.last_seq + 1
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def _push(self, event: Event | Record) -> None:
        """Deliver one event (or reconcile record) through the filter (the bus's path for
        filtered subscriptions)."""
        kinds = self._kinds
        if kinds is not None and _kind_of(event) not in kinds:
            return
        buffer = self._buffer
        assert buffer is not None
        if len(buffer) == self.maxsize:
            self._lost += 1  # the append below drops the oldest
        buffer.append(event)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _first_kept(self) -> int:
        """The oldest seq this log reader still has: its next one, unless it fell more than
        ``maxsize`` behind (or behind what the log holds)."""
        bus = self._bus
        last = bus._seq
        return max(self._next_seq, last - self.maxsize + 1, last - len(bus._ring) + 1)

    def _unannounced_loss(self) -> int:
        if self._buffer is None:
            return self._lost + self._first_kept() - self._next_seq
        return self._lost

    @property
    def pending(self) -> int:
        """Events waiting to be read (not counting a pending lag notice)."""
        if self._buffer is None:
            return self._bus._seq - self._first_kept() + 1
        return len(self._buffer)

    @property
    def closed(self) -> bool:
        return self._closed

    def _lag_event(self, lost: int) -> SubscriberLagged:
        self._lost = 0
        bus = self._bus
        if self._buffer is None:
            self._next_seq = self._first_kept()
        return SubscriberLagged(
            subscriber=self.name, lost=lost, ts=bus.clock.wall_ns(), instance=bus.instance
        )

    def _take(self, limit: int | None) -> list[Event | Record]:
        """The next ``limit`` (all, for None) entries after the lag is announced, and past
        them: from the log (which may then drop what every reader has), or the buffer."""
        buffer = self._buffer
        if buffer is not None:
            if limit is None or limit >= len(buffer):
                taken = list(buffer)
                buffer.clear()
                return taken
            popleft = buffer.popleft
            return [popleft() for _ in range(limit)]
        bus = self._bus
        last = bus._seq
        count = last - self._next_seq + 1
        if limit is not None and limit < count:
            count = limit
        if count <= 0:
            bus._trim()  # (what it lost, announced just before, may be droppable)
            return []
        # From the log's newer end, where the unread entries are: O(what is read and newer).
        skip = last - (self._next_seq + count - 1)
        taken = list(islice(reversed(bus._ring), skip, skip + count))
        taken.reverse()
        self._next_seq += count
        bus._trim()
        return taken

    def get_nowait(self) -> Event | None:
        """The next event (a lag notice first, if any was lost), or None when empty."""
        lost = self._unannounced_loss()
        if lost:
            lag = self._lag_event(lost)
            if self._buffer is None:
                self._bus._trim()  # (what it lost may be droppable)
            return lag
        if self._buffer is not None:
            return materialize(self._buffer.popleft()) if self._buffer else None
        bus = self._bus
        last = bus._seq
        if self._next_seq > last:
            bus._trim()
            return None
        entry = bus._ring[self._next_seq - last - 1]  # a walk from the log's newer end
        self._next_seq += 1
        bus._trim()
        return materialize(entry)

    def drain(self, limit: int | None = None) -> list[Event]:
        """Everything waiting (up to ``limit``), a lag notice first if events were lost."""
        return _materialize_all(self.drain_entries(limit))

    def drain_entries(self, limit: int | None = None) -> list[Event | Record]:
        """As :meth:`drain`, but a reconcile's begin or end is handed out as its compact record
        (a tuple: layouts and ``materialize`` in pycm.trace.bus) where the bus appended one,
        unbuilt: for a reader that can use the values as they are (an exporter folding a
        reconcile into one span) and so need not build two event objects per reconcile.
        ``[materialize(e) for e in sub.drain_entries()]`` is ``sub.drain()``."""
        lost = self._unannounced_loss()
        if not lost:
            return self._take(limit)
        taken: list[Event | Record] = [self._lag_event(lost)]
        taken += self._take(limit)
        return taken

    async def wait(self) -> None:
        """Return once an event (or a lag notice) is waiting, or the subscription closed."""
        while not self.pending and not self._unannounced_loss() and not self._closed:
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            bus = self._bus
            if self._buffer is None:
                bus._park(self)
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
                bus._unpark(self)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            event = self.get_nowait()
            if event is not None:
                return event
            if self._closed:
                raise StopAsyncIteration
            await self.wait()

    def close(self) -> None:
        """Stop receiving; a reader parked in ``async for`` ends after what is waiting."""
        if self._closed:
            return
        self._closed = True
        if self._buffer is None:
            # What it has not read leaves the log with it: the log keeps only what open
            # readers need.
            self._lost = self._unannounced_loss()
            self._next_seq = self._first_kept()
            self._buffer = deque(self._take(None), maxlen=self.maxsize)
        self._bus._unsubscribe(self)
        self._wake()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# --- steps ------------------------------------------------------------------------------------

_FROM_BEGIN: Any = object()
"""The default of a finish() parameter whose attribute is copied from the begin event."""

# The ids an end event copies from its begin event (``instance`` is the bus's); the rest of the
# envelope but ``v`` is stamped when the step exits.
_IDS = ("trace_id", "span_id", "parent_id")
_STAMPED_AT_EXIT = frozenset({"seq", "ts", "dur_ns"})


def shared_fields(begin_cls: type[StepBegin]) -> tuple[str, ...]:
    """The attributes ``begin_cls`` shares with its END (copied into the end event)."""
    begin_names = {f.name for f in dataclasses.fields(begin_cls)}
    return tuple(
        f.name
        for f in dataclasses.fields(begin_cls.END)
        if f.name in begin_names and f.name not in ENVELOPE_FIELDS
    )


class Step:
    """One traced step: use as ``with bus.step(Begin(...)) as s: ...; s.finish(attr=...)``.

    Without ``finish`` the step ends with ``END`` carrying the attributes it shares with the
    begin event (outcome ok); an exception ends it with outcome error (or cancelled for
    ``CancelledError``) and the exception's text, and propagates.

    This class is on every hot path (each reconcile, each API call's parent), so each begin
    kind gets a generated subclass (:func:`step_class`) and the step works on the bus's
    internals directly: it stamps and delivers its two events as ``Bus.emit`` does, inline,
    on the events' mutable twins (plain slot stores, then one ``__class__`` switch freezes
    them), and its ``finish`` takes END's attributes as parameters (no dict, no keyword call of
    END's constructor). The end's ``ts`` is the begin's plus the duration, so
    ``end.ts - begin.ts == end.dur_ns`` exactly.
    """

    __slots__ = ("_bus", "_end", "_frozen", "_start_ns", "_token", "begin")

    # The generated subclass's kinds: the begin's mutable twin, and END.
    _BEGIN_BLANK: ClassVar[type]
    _END: ClassVar[type[StepEnd]]

    _bus: Bus
    _end: Any  # the end event as its mutable twin once finish() set it, else None
    _frozen: type[StepEnd]  # the class _end is frozen to at exit
    _start_ns: int
    _token: Any
    begin: StepBegin

    @property
    def trace_id(self) -> str:
        return self.begin.trace_id

    @property
    def span_id(self) -> str:
        return self.begin.span_id

    @property
    def parent_id(self) -> str:
        return self.begin.parent_id

    def __enter__(self) -> Step:
        begin: Any = self.begin
        bus = self._bus
        parent = _get_current()
        ids: Any
        if parent is None:
            # new_root_ids(), inlined: the span id is the trace id's low half.
            try:
                trace_id = take_trace_id()
            except IndexError:
                trace_id = new_trace_id()
            ids = (trace_id, trace_id[16:])
        else:
            try:
                span_id = take_span_id()
            except IndexError:
                span_id = new_span_id()
            parent_ids = span_ids(parent)  # a root reconcile's are derived (context.py)
            # A step inside a counting step (a reconcile) counts its API calls there too.
            if type(parent) is list:  # a root reconcile: the list is its counter
                ids = (parent_ids[0], span_id, parent)
            elif len(parent) == 2:
                ids = (parent_ids[0], span_id)
            else:
                ids = (parent_ids[0], span_id, parent[2])
        frozen = type(begin)
        _set_class(begin, self._BEGIN_BLANK)
        begin.trace_id = ids[0]
        begin.span_id = ids[1]
        if parent is not None:
            begin.parent_id = parent_ids[1]
        # Bus.emit, inlined.
        bus._seq = seq = bus._seq + 1
        begin.seq = seq
        begin.ts = bus._wall_ns()
        if not begin.instance:
            begin.instance = bus._instance
        _set_class(begin, frozen)
        bus._ring.append(begin)
        sink = bus._sink
        if sink is not None:
            sink(begin)
        self._token = _set_current(ids)
        self._start_ns = bus._monotonic_ns()
        return self

    def finish(self, end: StepEnd | None = None, /, **attrs: Any) -> None:
        """Set how the step ends (call it inside the block): a ready end event, or ``END``
        built from ``attrs`` plus the attributes it shares with the begin event (an attribute
        END does not have is a TypeError here). A ready event is the step's until it exits:
        the step stamps its ids, duration and seq into it.

        (The generated subclasses replace this with a builder taking END's attributes as
        parameters; this is the reference it must match.)"""
        if end is not None:
            if attrs:
                raise TypeError("finish() takes an end event or keyword attributes, not both")
            self._take_ready(end)
            return
        begin = self.begin
        names = shared_fields(type(begin))
        given = {**{n: getattr(begin, n) for n in names}, **attrs}
        built = self._END(**given)  # TypeError for an unknown attribute
        self._take_ready(built)

    def _take_ready(self, end: StepEnd) -> None:
        self._frozen = type(end)
        _set_class(end, blank_class(type(end)))
        twin: Any = end
        begin = self.begin
        twin.trace_id = begin.trace_id
        twin.span_id = begin.span_id
        twin.parent_id = begin.parent_id
        if not twin.instance:
            twin.instance = self._bus._instance
        self._end = twin

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        bus = self._bus
        dur_ns = bus._monotonic_ns() - self._start_ns
        _reset_current(self._token)
        end = self._end
        if end is None:
            self.finish()
            end = self._end
        if exc is not None:
            mark_failed(end, exc)
        end.dur_ns = dur_ns
        bus._seq = seq = bus._seq + 1
        end.seq = seq
        end.ts = self.begin.ts + dur_ns
        end.__class__ = self._frozen
        # Bus.emit's delivery, inlined.
        bus._ring.append(end)
        sink = bus._sink
        if sink is not None:
            sink(end)


# The generated step classes, by begin kind.
_step_classes: dict[type, type[Step]] = {}


def step_class(begin_cls: type[StepBegin]) -> type[Step]:
    """The :class:`Step` subclass for steps that begin with ``begin_cls``: its kinds' twins as
    class constants and a generated ``finish``."""
    known = _step_classes.get(begin_cls)
    if known is not None:
        return known
    end_cls = begin_cls.END
    shared = set(shared_fields(begin_cls))
    namespace: dict[str, Any] = {
        "_END": end_cls,
        "_END_BLANK": blank_class(end_cls),
        "_FROM_BEGIN": _FROM_BEGIN,
        "_KW_ONLY": _KW_ONLY,
    }
    params: list[str] = []
    defaults: list[str] = []  # a test that every parameter is at its default
    stores: list[str] = []
    for f in dataclasses.fields(end_cls):
        name = f.name
        if name.startswith("_"):  # the generated code's own names start with one
            raise TypeError(f"{end_cls.__name__}.{name}: a step end's fields start with a letter")
        if name in _IDS:
            stores.append(f"    _e.{name} = _b.{name}")
        elif name in _STAMPED_AT_EXIT:
            continue
        elif name == "instance":
            stores.append("    _e.instance = _s._bus._instance")
        elif name in ENVELOPE_FIELDS:
            namespace[f"_d_{name}"] = f.default
            stores.append(f"    _e.{name} = _d_{name}")
        elif name in shared:
            params.append(f"{name}=_FROM_BEGIN")
            defaults.append(f"{name} is _FROM_BEGIN")
            stores.append(f"    _e.{name} = _b.{name} if {name} is _FROM_BEGIN else {name}")
        else:
            namespace[f"_d_{name}"] = f.default
            params.append(f"{name}=_d_{name}")
            defaults.append(f"{name} is _d_{name}")
            stores.append(f"    _e.{name} = {name}")
    # Positional-or-keyword parameters (their defaults are filled from a tuple; see
    # events._frozen_class) behind a hidden positional one that refuses positional attributes.
    source = (
        f"def finish(_s, _end=None, _positional=_KW_ONLY, /, {', '.join(params)}):\n"
        "    if _positional is not _KW_ONLY:\n"
        "        raise TypeError('finish() takes an end event or keyword attributes')\n"
        "    if _end is not None:\n"
        f"        if not ({' and '.join(defaults) or 'True'}):\n"
        "            raise TypeError(\n"
        "                'finish() takes an end event or keyword attributes, not both')\n"
        "        _s._take_ready(_end)\n"
        "        return\n"
        "    _b = _s.begin\n"
        "    _e = _END_BLANK()\n"
        + "\n".join(stores)
        + "\n    _s._end = _e\n    _s._frozen = _END\n"
    )
    exec(source, namespace)  # generated from dataclass field names only
    finish = namespace["finish"]
    qualname = f"{begin_cls.__name__}Step.finish"
    finish.__qualname__ = qualname
    finish.__code__ = finish.__code__.replace(co_qualname=qualname)  # named in TypeErrors
    finish.__doc__ = Step.finish.__doc__
    cls = type(
        f"{begin_cls.__name__}Step",
        (Step,),
        {
            "__slots__": (),
            "__module__": __name__,
            "__doc__": f"A :class:`Step` that begins with {begin_cls.__name__}.",
            "_BEGIN_BLANK": blank_class(begin_cls),
            "_END": end_cls,
            "finish": finish,
        },
    )
    _step_classes[begin_cls] = cls
    return cls


class Bus:
    """The process's event bus. Invariants: ``_ring``, the log, holds consecutive entries in
    ``seq`` order up to the newest, whose seq is ``_seq`` (0 before the first emit): at least
    the last ``ring_size`` emitted (what ``recent()`` and a new subscription's backfill serve),
    and every one an open subscription without a filter still has to read (see
    :class:`Subscription`: they read the log, so its ``maxlen`` is the largest of their
    ``maxsize`` and ``ring_size``, and :meth:`_trim` drops what they have all read once it
    is longer than ``ring_size``). ``_pushes`` holds the ``_push`` of each filtered
    subscription; ``_parked`` the log readers waiting for the next entry; and ``_sink``, the
    one call that hands an entry to them, is None when there is nothing to do (no filtered
    subscription, no parked reader): the single filtered subscription's ``_push`` while no
    reader is parked, else :meth:`_fan_out`, which also wakes the parked readers. So
    delivering an entry is ``_ring.append(entry)``, then ``_sink(entry)`` unless it is None;
    the emitter does no work per subscription that reads the log.

    Two hot paths deliver as :meth:`deliver` does, inline, on these internals: :class:`Step`
    and the worker's reconcile step (``pycm.controller.worker.Controller.process``; its other
    ends call :meth:`deliver`). A change to how an event is delivered changes all three. The
    log is replaced (a new ``maxlen``) when a subscription opens or closes, so each delivery
    reads ``_ring`` afresh. (Appending through ``_ring.append`` is two specialized lookups and
    a direct call of the method descriptor; a bound ``append`` kept in the instance's dict, as
    it was, is a generic method lookup: ~340 instructions more a delivery, callgrind.)"""

    def __init__(
        self,
        *,
        instance: str = "",
        ring_size: int = DEFAULT_RING_SIZE,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if ring_size < 1:
            raise ValueError("the ring holds at least one event")
        self._instance = instance
        self.clock = clock
        self._ring_size = ring_size
        self._ring: deque[Event | Record] = deque(maxlen=ring_size)
        self._seq = 0
        self._subscribers: tuple[Subscription, ...] = ()
        self._readers: tuple[Subscription, ...] = ()  # the open ones that read the log
        self._pushes: tuple[Callable[[Event | Record], None], ...] = ()
        self._parked: list[Subscription] = []
        # The sink while no reader is parked (see the invariants), and the one in use.
        self._quiet_sink: Callable[[Event | Record], None] | None = None
        self._sink: Callable[[Event | Record], None] | None = None
        self._wall_ns = clock.wall_ns
        self._monotonic_ns = clock.monotonic_ns
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

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def ring_size(self) -> int:
        return self._ring_size

    def emit(self, event: Event) -> None:
        """Stamp the envelope (seq, ts, and instance if unset) and deliver. O(subscribers)."""
        self._seq = seq = self._seq + 1
        _set_seq(event, seq)
        _set_ts(event, self._wall_ns())
        if not event.instance:
            _set_instance(event, self._instance)
        self.deliver(event)

    def deliver(self, entry: Event | Record) -> None:
        """Put a stamped event or record (its seq ``_seq``, the caller's to advance) in the log,
        where the subscriptions without a filter read it, and call the sink if there is one
        (the filtered subscriptions, then the parked readers' wake-up). The per-reconcile
        paths (Step, Controller.process) inline this; everything else calls it."""
        self._ring.append(entry)
        sink = self._sink
        if sink is not None:
            sink(entry)

    def _fan_out(self, entry: Event | Record) -> None:
        """The sink when there is more than one filtered subscription, or a reader is parked:
        every filtered subscription's push, then the parked readers woken."""
        for push in self._pushes:
            push(entry)
        if self._parked:
            self._wake_parked()

    def _trim(self) -> None:
        """Drop the log's oldest entries beyond ``ring_size`` that every log reader has read
        (or lost: it keeps only its newest ``maxsize``). Called by the readers after a read, so
        the log stays about ``ring_size`` long while they keep up."""
        ring = self._ring
        excess = len(ring) - self._ring_size
        if excess <= 0:
            return
        needed = self._seq + 1
        for reader in self._readers:
            kept = reader._first_kept()
            if kept < needed:
                needed = kept
        drop = min(excess, needed - (self._seq - len(ring) + 1))
        if drop > 0:
            _consume(map(operator.call, repeat(ring.popleft, drop)))

    def _park(self, sub: Subscription) -> None:
        """``sub``'s reader waits for the next entry: the sink wakes it."""
        self._parked.append(sub)
        self._sink = self._fan_out

    def _unpark(self, sub: Subscription) -> None:
        if sub in self._parked:
            self._parked.remove(sub)
            if not self._parked:
                self._sink = self._quiet_sink

    def _wake_parked(self) -> None:
        parked, self._parked = self._parked, []
        self._sink = self._quiet_sink
        for sub in parked:
            sub._wake()

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
        return _materialize_all(self._recent_entries(since))

    def _recent_entries(self, since: int) -> list[Event | Record]:
        count = min(len(self._ring), self._ring_size, self._seq - since)
        if count <= 0:
            return []
        entries = list(islice(reversed(self._ring), count))  # the log holds consecutive seqs
        entries.reverse()
        return entries

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

    def _set_sinks(self) -> None:
        self._readers = readers = tuple(s for s in self._subscribers if s._buffer is None)
        pushes = tuple(s._push for s in self._subscribers if s._buffer is not None)
        self._pushes = pushes
        self._quiet_sink = pushes[0] if len(pushes) == 1 else None if not pushes else self._fan_out
        self._sink = self._fan_out if self._parked else self._quiet_sink
        # The log keeps what its readers may read: up to the largest maxsize.
        maxlen = max((self._ring_size, *(s.maxsize for s in readers)))
        if maxlen != self._ring.maxlen:
            self._ring = deque(self._ring, maxlen=maxlen)
            self._trim()

    def _unsubscribe(self, sub: Subscription) -> None:
        self._subscribers = tuple(s for s in self._subscribers if s is not sub)
        if sub in self._parked:
            self._parked.remove(sub)
        self._set_sinks()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


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
