"""The trace bus: synchronous O(1) ``emit``, a ring that backfills new subscribers, and bounded
per-subscriber queues that drop their oldest events and say how many they lost.

Nothing a subscriber does can slow the emitter: ``emit`` only appends to the ring and to each
subscriber's bounded deque and, if that subscriber is parked waiting, resolves its future. A
subscriber that stops reading loses its oldest events; when it reads again it first receives a
:class:`~pycm.trace.kinds.SubscriberLagged` event with the count.

One process has one default bus (:func:`default_bus`); components take a bus by injection and
tests make their own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from pycm.trace.context import Step, _bits, _current, new_trace_id
from pycm.trace.events import Event, StepBegin
from pycm.trace.kinds import SubscriberLagged
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["Bus", "Subscription", "default_bus", "set_default_bus"]

DEFAULT_RING_SIZE = 8192
DEFAULT_SUBSCRIBER_QUEUE = 4096

_set = object.__setattr__


class Subscription:
    """One consumer's view of the bus: a bounded FIFO, read by ``async for`` or :meth:`drain`.

    Invariant: ``len(_buffer) <= maxsize``; ``_lost`` counts events dropped from the front since
    the last lag event was handed out.
    """

    __slots__ = ("_buffer", "_bus", "_closed", "_kinds", "_lost", "_waiter", "maxsize", "name")

    def __init__(self, bus: Bus, name: str, maxsize: int, kinds: frozenset[str] | None) -> None:
        if maxsize < 1:
            raise ValueError("a subscriber's queue holds at least one event")
        self._bus = bus
        self.name = name
        self.maxsize = maxsize
        self._kinds = kinds
        self._buffer: deque[Event] = deque()
        self._lost = 0
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def _push(self, event: Event) -> None:
        kinds = self._kinds
        if kinds is not None and event.KIND not in kinds:
            return
        buffer = self._buffer
        if len(buffer) >= self.maxsize:
            buffer.popleft()
            self._lost += 1
        buffer.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    @property
    def pending(self) -> int:
        """Events waiting to be read (not counting a pending lag notice)."""
        return len(self._buffer)

    @property
    def closed(self) -> bool:
        return self._closed

    def _lag_event(self) -> SubscriberLagged:
        lost, self._lost = self._lost, 0
        bus = self._bus
        return SubscriberLagged(
            subscriber=self.name, lost=lost, ts=bus.clock.wall_ns(), instance=bus.instance
        )

    def get_nowait(self) -> Event | None:
        """The next event (a lag notice first, if any was lost), or None when empty."""
        if self._lost:
            return self._lag_event()
        if self._buffer:
            return self._buffer.popleft()
        return None

    def drain(self, limit: int | None = None) -> list[Event]:
        """Everything waiting (up to ``limit``), a lag notice first if events were lost."""
        out: list[Event] = []
        if self._lost:
            out.append(self._lag_event())
        buffer = self._buffer
        n = len(buffer) if limit is None else min(limit, len(buffer))
        popleft = buffer.popleft
        out.extend(popleft() for _ in range(n))
        return out

    async def wait(self) -> None:
        """Return once an event (or a lag notice) is waiting, or the subscription closed."""
        while not self._buffer and not self._lost and not self._closed:
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None

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
        """Stop receiving; a reader parked in ``async for`` ends after what is buffered."""
        if self._closed:
            return
        self._closed = True
        self._bus._unsubscribe(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Bus:
    """The process's event bus. Invariant: ``_ring`` holds the last ``ring_size`` events in
    ``seq`` order, and ``_seq`` is the seq of the newest one (0 before the first emit)."""

    def __init__(
        self,
        *,
        instance: str = "",
        ring_size: int = DEFAULT_RING_SIZE,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        if ring_size < 1:
            raise ValueError("the ring holds at least one event")
        self.instance = instance
        self.clock = clock
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._seq = 0
        self._subscribers: tuple[Subscription, ...] = ()
        self._wall_ns = clock.wall_ns
        self._monotonic_ns = clock.monotonic_ns

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def ring_size(self) -> int:
        maxlen = self._ring.maxlen
        assert maxlen is not None
        return maxlen

    def emit(self, event: Event) -> None:
        """Stamp the envelope (seq, ts, and instance if unset) and deliver. O(subscribers)."""
        self._seq = seq = self._seq + 1
        _set(event, "seq", seq)
        _set(event, "ts", self._wall_ns())
        if not event.instance:
            _set(event, "instance", self.instance)
        self._ring.append(event)
        for subscriber in self._subscribers:
            subscriber._push(event)

    def point(self, event: Event, *, dur_ns: int = 0) -> Event:
        """Emit a point event inside the current step: its trace, the step as parent, an id
        of its own (kept if the caller chose it up front: the API client puts it in the
        request's traceparent). Outside any step, a timed point (``dur_ns``) starts its own
        trace — it may become a span — and an untimed one carries no ids (it is in no trace),
        which keeps hot untraced points such as queue adds from informer handlers cheap."""
        parent = _current.get()
        if parent is not None:
            _set(event, "trace_id", parent[0])
            _set(event, "parent_id", parent[1])
            if not event.span_id:
                _set(event, "span_id", f"{_bits(64) or 1:016x}")
        elif dur_ns:
            trace_id = new_trace_id()
            _set(event, "trace_id", trace_id)
            _set(event, "span_id", trace_id[16:])
        if dur_ns:
            _set(event, "dur_ns", dur_ns)
        self.emit(event)
        return event

    def step(self, begin: StepBegin) -> Step:
        """A step context manager that emits ``begin`` now and its END when the block exits."""
        return Step(begin, self.emit, self._monotonic_ns, self.instance)

    def recent(self, since: int = 0) -> list[Event]:
        """Events still in the ring with ``seq > since``, oldest first."""
        ring = self._ring
        if not ring or since >= self._seq:
            return []
        first = ring[0].seq
        if since < first:
            return list(ring)
        return list(ring)[since - first + 1 :]

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
            backlog = self.recent(since)
            # Events after `since` that the ring no longer holds are lost to this subscriber.
            gone = backlog[0].seq - since - 1 if backlog else 0
            if gone > 0:
                sub._lost += gone
            for event in backlog:
                sub._push(event)
        self._subscribers = (*self._subscribers, sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        self._subscribers = tuple(s for s in self._subscribers if s is not sub)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)


_default = Bus()


def default_bus() -> Bus:
    """The process-wide bus that pycm's components use unless given another."""
    return _default


def set_default_bus(bus: Bus) -> Bus:
    """Replace the process-wide bus (the manager does this once, with its identity)."""
    global _default
    _default = bus
    return bus
