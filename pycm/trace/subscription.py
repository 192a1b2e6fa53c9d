"""The bus's log and the subscriptions that read it.

:class:`EventLog` is the part of :class:`~pycm.trace.bus.Bus` that holds what was emitted and
hands it to readers: the log (``_ring``), the seq of its newest entry, the subscriptions'
bookkeeping, and **the one delivery** (:meth:`EventLog.deliver`, and ``_put``, the call it
makes, which the per-reconcile paths call directly). :class:`Subscription` is one reader's view
of it. Nothing a subscriber does can slow the emitter, nor can their number: ``emit`` appends to
the log, which the subscriptions without a filter (all of pycm's own readers) read at their own
pace, each from its own position, and only if a reader is parked waiting, or a subscription
filters by kind, is there more to do (wake it; push to the filtered one's deque). A subscriber
that stops reading loses its oldest events; when it reads again it first receives a
:class:`~pycm.trace.kinds.SubscriberLagged` event with the count.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice, repeat
from typing import Any

from pycm.trace.events import Event
from pycm.trace.kinds import SubscriberLagged
from pycm.trace.records import Record, kind_of, materialize, materialize_all
from pycm.util.clock import Clock
from pycm.util.wakeup import Wakeup

__all__ = ["DEFAULT_RING_SIZE", "DEFAULT_SUBSCRIBER_QUEUE", "EventLog", "Subscription"]

_consume: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend
"""Runs an iterator to its end, in C, keeping nothing (``EventLog._trim``'s bulk popleft)."""

DEFAULT_RING_SIZE = 8192
DEFAULT_SUBSCRIBER_QUEUE = 4096


class EventLog:
    """The log and its delivery. Invariants: ``_ring``, the log, holds consecutive entries in
    ``seq`` order up to the newest, whose seq is ``_seq`` (0 before the first emit): at least
    the last ``ring_size`` emitted (what ``recent()`` and a new subscription's backfill serve),
    and every one an open subscription without a filter still has to read (see
    :class:`Subscription`: they read the log, so its ``maxlen`` is the largest of their
    ``maxsize`` and ``ring_size``, and :meth:`_trim` drops what they have all read once it
    is longer than ``ring_size``). ``_pushes`` holds the ``_push`` of each filtered
    subscription; ``_parked`` the log readers waiting for the next entry; and ``_sink``, the
    one call that hands an entry to them, is None when there is nothing to do (no filtered
    subscription, no parked reader): the single filtered subscription's ``_push`` while no
    reader is parked, else :meth:`_fan_out`, which also wakes the parked readers.

    Delivering an entry is ``_ring.append(entry)``, then ``_sink(entry)`` unless it is None,
    and it is written once: ``_put`` is the call that does it, chosen whenever the log or the
    sink changes (:meth:`_set_sink`): the log's own ``append`` while there is no sink, else
    :meth:`_append_and_sink`. Every emitter delivers by ``put = log._put; put(entry)`` (
    :meth:`deliver`; the per-reconcile paths, :class:`~pycm.trace.step.Step` and
    :class:`~pycm.trace.reconciles.ReconcileRecorder`, inline that one call), so the emitter
    does no work per subscription that reads the log, and a reconcile's delivery is one call
    of ``deque.append`` while nobody waits. ``_put`` is read afresh for each delivery: the log
    is replaced (a new ``maxlen``) when a subscription opens or closes. (A bound method kept
    in the instance's dict is read into a local before the call: called as ``log._put(e)`` it
    is a generic method lookup, ~340 instructions more a delivery, callgrind.)"""

    def __init__(self, *, instance: str, ring_size: int, clock: Clock) -> None:
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
        self._put: Callable[[Event | Record], None] = self._ring.append
        self._wall_ns = clock.wall_ns
        self._monotonic_ns = clock.monotonic_ns

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def ring_size(self) -> int:
        return self._ring_size

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def deliver(self, entry: Event | Record) -> None:
        """Put a stamped event or record (its seq ``_seq``, the caller's to advance) in the log,
        where the subscriptions without a filter read it, and call the sink if there is one
        (the filtered subscriptions, then the parked readers' wake-up)."""
        put = self._put
        put(entry)

    def _append_and_sink(self, entry: Event | Record) -> None:
        """``_put`` while there is a sink."""
        self._ring.append(entry)
        sink = self._sink
        if sink is not None:
            sink(entry)

    def _set_sink(self, sink: Callable[[Event | Record], None] | None) -> None:
        self._sink = sink
        self._put = self._ring.append if sink is None else self._append_and_sink

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
        self._set_sink(self._fan_out)

    def _unpark(self, sub: Subscription) -> None:
        if sub in self._parked:
            self._parked.remove(sub)
            if not self._parked:
                self._set_sink(self._quiet_sink)

    def _wake_parked(self) -> None:
        parked, self._parked = self._parked, []
        self._set_sink(self._quiet_sink)
        for sub in parked:
            sub._wake()

    def _recent_entries(self, since: int) -> list[Event | Record]:
        count = min(len(self._ring), self._ring_size, self._seq - since)
        if count <= 0:
            return []
        entries = list(islice(reversed(self._ring), count))  # the log holds consecutive seqs
        entries.reverse()
        return entries

    def _set_sinks(self) -> None:
        self._readers = readers = tuple(s for s in self._subscribers if s._buffer is None)
        pushes = tuple(s._push for s in self._subscribers if s._buffer is not None)
        self._pushes = pushes
        self._quiet_sink = pushes[0] if len(pushes) == 1 else None if not pushes else self._fan_out
        # The log keeps what its readers may read: up to the largest maxsize.
        maxlen = max((self._ring_size, *(s.maxsize for s in readers)))
        if maxlen != self._ring.maxlen:
            self._ring = deque(self._ring, maxlen=maxlen)
            self._trim()
        self._set_sink(self._fan_out if self._parked else self._quiet_sink)  # (the new log's)

    def _unsubscribe(self, sub: Subscription) -> None:
        self._subscribers = tuple(s for s in self._subscribers if s is not sub)
        if sub in self._parked:
            self._parked.remove(sub)
        self._set_sinks()


class Subscription:
    """One consumer's view of the bus: a bounded FIFO, read by ``async for`` or :meth:`drain`.

    A subscription that takes every kind (``_kinds is None``, as all of pycm's own readers do:
    the state model, the recorder, the OTel sink, the dashboard) has no buffer of its own while
    it is open: it reads the bus's log (``EventLog._ring``), which holds every entry in seq
    order, from ``_next_seq`` on. The emitter does nothing per such subscription (see
    :class:`EventLog`). Its queue is what the log holds after ``_next_seq``, of which it keeps
    the newest ``maxsize`` (a reader that falls further behind loses the oldest, as a
    drop-oldest queue would): the losses are read off the seqs, plus ``_lost`` for the ones
    its backfill could not get.
    A filtered subscription (``kinds``) has a buffer, a deque with ``maxlen=maxsize`` fed
    through :meth:`_push` (which counts what it drops in ``_lost``); so has a closed one (what
    it had not read yet, kept for the reader that ends after it). Either may hold compact
    reconcile records (see ``materialize``): every read hands out the event a record stands for.
    Invariants: ``len(_buffer) <= maxsize``; while ``_buffer`` is None, the log holds every seq
    from ``max(_next_seq, EventLog.last_seq - maxsize + 1)`` on (``EventLog._set_sinks``,
    ``EventLog._trim``).
    """

    __slots__ = (
        "_buffer",
        "_bus",
        "_closed",
        "_kinds",
        "_lost",
        "_next_seq",
        "_wakeup",
        "maxsize",
        "name",
    )

    def __init__(
        self, bus: EventLog, name: str, maxsize: int, kinds: frozenset[str] | None
    ) -> None:
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
        self._wakeup = Wakeup()  # the reader parked in wait()
        self._closed = False

    def _push(self, event: Event | Record) -> None:
        """Deliver one event (or reconcile record) through the filter (the bus's path for
        filtered subscriptions)."""
        kinds = self._kinds
        if kinds is not None and kind_of(event) not in kinds:
            return
        buffer = self._buffer
        assert buffer is not None
        if len(buffer) == self.maxsize:
            self._lost += 1  # the append below drops the oldest
        buffer.append(event)
        self._wake()

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup.waiter is not None:
            wakeup.wake()

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
            subscriber=self.name, lost=lost, ts=bus.clock.wall_ns(), instance=bus._instance
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
        return materialize_all(self.drain_entries(limit))

    def drain_entries(self, limit: int | None = None) -> list[Event | Record]:
        """As :meth:`drain`, but a reconcile's begin or end is handed out as its compact record
        (a tuple: layouts and ``materialize`` in pycm.trace.records) where the bus appended one,
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
            bus = self._bus
            if self._buffer is None:
                bus._park(self)  # (a log reader is woken by the log's sink, see EventLog)
            try:
                await self._wakeup.wait()
            finally:
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
