"""Per-handler delivery: bounded buffers and one task per handler (client-go ``processorListener``).

Each handler registered on an informer gets a :class:`Registration`: its own buffer of
notifications and its own task that calls the handler. The informer only appends to buffers, so
a slow handler can never stall the informer or the other handlers.

Handlers are synchronous callables (:class:`ResourceEventHandler`): they compute keys and
enqueue them, nothing more; the work happens in the controller's sync. A handler's task calls it
for as many notifications as fit in a time slice (``quantum``, 2 ms), then yields to the loop,
so a handler that is slow per call gets fewer calls per turn instead of delaying the others.

**Bounded buffers** (client-go's are unbounded): at most ``buffer_size`` notifications wait
(10 000 by default). On overflow the oldest is dropped, and the handler is later brought back to
the cache's current state — we chose a precise replay of the dropped keys over a full resync of
the handler (cheaper, and it also repairs missed deletes, which a resync cannot): for each key
whose notification was dropped we keep the first state the handler had known (or that it knew
none), which is bounded by the number of distinct keys. Before delivering anything newer, the
handler's task replays these keys against the current cache: known and still cached →
``on_update(known, cached)``; unknown and cached → ``on_add(cached, False)``; known and gone →
``on_delete(DeletedFinalStateUnknown(key, known))``. A :class:`~pycm.trace.kinds.HandlerLagged`
event reports the count lost. Since the newest notification for a key is never the one dropped,
the handler ends up having seen each key's latest state.

A registration sees its informer only through what it is handed (as client-go hands its
``processorListener`` one ``hasSynced`` function): the informer's resource name and bus, whether
the informer has synced, a read of the cache by key (the replay's), and a function to call after
each round of deliveries (the informer's "has everyone synced?" check). It never holds the
informer itself.

Handler exceptions are logged and counted (``errors``), and delivery goes on — except a
:class:`~pycm.cache.mutation.CacheMutationError`, which crashes the informer, loudly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from pycm.cache.mutation import CacheMutationError
from pycm.cache.store import DeletedFinalStateUnknown, meta_namespace_key
from pycm.trace.bus import Bus
from pycm.trace.kinds import HandlerLagged
from pycm.util.wakeup import Wakeup

__all__ = [
    "DEFAULT_BUFFER_SIZE",
    "HandlerFuncs",
    "Notification",
    "Registration",
    "ResourceEventHandler",
]

_log = logging.getLogger(__name__)

DEFAULT_BUFFER_SIZE = 10_000
DEFAULT_QUANTUM = 0.002
_clock = time.perf_counter  # the delivery's time slices (a module global: tests replace it)
_CLOCK_EVERY = 16
"""At most this many notifications are delivered between two readings of the clock."""

ADD, UPDATE, DELETE = 0, 1, 2
Notification = tuple[int, Any, Any, bool]
"""(kind, obj-or-old, new, is_in_initial_list): ADD (obj), UPDATE (old, new), DELETE (obj)."""


class ResourceEventHandler(Protocol):
    """What an informer calls. Synchronous: compute keys and enqueue them, nothing more."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None:
        """``obj`` is the object, or a DeletedFinalStateUnknown tombstone."""
        ...


class HandlerFuncs:
    """A handler from optional functions (client-go ``ResourceEventHandlerFuncs``)."""

    def __init__(
        self,
        on_add: Callable[[Any, bool], None] | None = None,
        on_update: Callable[[Any, Any], None] | None = None,
        on_delete: Callable[[Any], None] | None = None,
    ) -> None:
        self._add, self._update, self._delete = on_add, on_update, on_delete

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self._add is not None:
            self._add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if self._update is not None:
            self._update(old, new)

    def on_delete(self, obj: Any) -> None:
        if self._delete is not None:
            self._delete(obj)


class Registration:
    """One handler on one informer: its buffer, its task, its sync state and resync schedule.

    Invariants: ``len(_buffer) <= buffer_size``; ``_initial_left`` counts notifications marked
    initial that are queued and neither delivered nor dropped; a key is in ``_dropped`` iff a
    notification for it was dropped and not replayed yet.
    """

    def __init__(
        self,
        handler: ResourceEventHandler,
        *,
        name: str,
        resource: str,
        bus: Bus,
        informer_synced: Callable[[], bool],
        cached: Callable[[str], Any],
        after_delivery: Callable[[], None],
        now: float,
        resync_period: float,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        quantum: float = DEFAULT_QUANTUM,
    ) -> None:
        """``informer_synced``: whether the informer's initial list is stored; ``cached``: the
        cache's object under a key (None: none); ``after_delivery``: called after each round of
        deliveries; ``now``: the informer clock's monotonic time (the first resync is one
        period after it)."""
        if buffer_size < 1:
            raise ValueError("a handler buffer holds at least one notification")
        self.handler = handler
        self.name = name
        self.resource = resource
        self._bus = bus
        self._informer_synced = informer_synced
        self._cached = cached
        self._after_delivery = after_delivery
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self.buffer_size = buffer_size
        self.quantum = quantum
        self._buffer: deque[Notification] = deque()
        self._dropped: dict[str, Any] = {}
        self._lost = 0
        self._initial_left = 0
        self._wakeup = Wakeup()  # the handler's task, parked for notifications
        self._run_size = 1  # notifications per clock reading (adapted by _deliver_for)
        self._task: asyncio.Task[None] | None = None
        self._removed = False
        self.delivered = 0
        self.errors = 0
        self.lost_total = 0

    # -- state --------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """The informer synced and this handler got (or replayed) all its initial adds."""
        return self._informer_synced() and self._initial_left == 0 and not self._dropped

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def _should_resync(self, now: float) -> bool:
        if self.resync_period <= 0 or now < self.next_resync:
            return False
        self.next_resync = now + self.resync_period
        return True

    # -- producer side (the informer) ---------------------------------------------------------

    def push(self, note: Notification) -> None:
        buffer = self._buffer
        if len(buffer) >= self.buffer_size:
            self._drop(buffer.popleft())
        buffer.append(note)
        if note[3]:
            self._initial_left += 1
        self._wakeup.wake()

    def push_many(self, notes: list[Notification], initial: int) -> None:
        """Append ``notes`` in order, of which ``initial`` are marked initial: the same as
        pushing them one by one (the oldest beyond the bound dropped first), in one call per
        batch of the informer instead of one per event."""
        buffer = self._buffer
        buffer.extend(notes)
        self._initial_left += initial
        over = len(buffer) - self.buffer_size
        if over > 0:
            drop, popleft = self._drop, buffer.popleft
            for _ in range(over):
                drop(popleft())
        self._wakeup.wake()

    def _drop(self, note: Notification) -> None:
        kind, a, _, initial = note
        self._lost += 1
        self.lost_total += 1
        if initial:
            self._initial_left -= 1
        key = meta_namespace_key(a)
        if key not in self._dropped:
            # The state the handler knew before the dropped run: none before an add.
            known = None if kind == ADD else a
            if isinstance(known, DeletedFinalStateUnknown):
                known = known.obj
            self._dropped[key] = known

    # -- the handler's task -------------------------------------------------------------------

    def start(self, tg: asyncio.TaskGroup) -> None:
        if self._task is None:
            self._task = tg.create_task(
                self._run(), name=f"informer:{self.resource}:handler:{self.name}"
            )

    def stop(self) -> None:
        self._removed = True
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        buffer = self._buffer
        wait = self._wakeup.wait
        after_delivery = self._after_delivery
        while True:
            while not buffer and not self._dropped:
                await wait()
            self._deliver_for(self.quantum)
            after_delivery()
            await asyncio.sleep(0)

    def _deliver_for(self, quantum: float) -> None:
        """Deliver buffered notifications for about ``quantum`` seconds (replaying dropped keys
        first). The clock is read after runs of notifications, not after each (reading it
        cost as much as a cheap handler call). A run doubles, up to ``_CLOCK_EVERY``, while
        runs stay short, and falls back to one notification as soon as a run takes more than
        an eighth of the quantum, so a slow handler still yields after about one quantum."""
        buffer = self._buffer
        clock = _clock
        run = self._run_size
        before = clock()
        deadline = before + quantum
        short = quantum / 8
        while True:
            if self._dropped:
                self._replay()
            if not buffer:
                break
            self._deliver_run(run)
            now = clock()
            if now - before > short:
                run = 1
            elif run < _CLOCK_EVERY:
                run *= 2
            before = now
            if now >= deadline:
                break
        self._run_size = run

    def _callbacks(
        self,
    ) -> tuple[
        Callable[[Any, bool], None] | None,
        Callable[[Any, Any], None] | None,
        Callable[[Any], None] | None,
    ]:
        """The handler's three methods, resolved once per run of deliveries; for a
        :class:`HandlerFuncs` its functions themselves (None: nothing to call)."""
        handler = self.handler
        if type(handler) is HandlerFuncs:
            return handler._add, handler._update, handler._delete
        return handler.on_add, handler.on_update, handler.on_delete

    def _deliver_run(self, limit: int) -> None:
        """Deliver up to ``limit`` notifications from the buffer, in order. A handler's
        exception is logged and counted and delivery goes on with the next notification."""
        buffer = self._buffer
        on_add, on_update, on_delete = self._callbacks()
        left = min(limit, len(buffer))
        while left > 0:
            initial = False
            try:
                while left > 0:
                    left -= 1
                    kind, a, b, initial = buffer.popleft()
                    if kind == UPDATE:
                        if on_update is not None:
                            on_update(a, b)
                    elif kind == ADD:
                        if on_add is not None:
                            on_add(a, initial)
                    elif on_delete is not None:
                        on_delete(a)
                    # Counted once the handler returned: has_synced() holds only after the
                    # last initial add was handled.
                    if initial:
                        self._initial_left -= 1
                    self.delivered += 1
            except CacheMutationError:
                raise
            except Exception:
                self.errors += 1
                if initial:
                    self._initial_left -= 1
                self.delivered += 1
                _log.exception("informer %s: handler %s failed", self.resource, self.name)

    def _deliver(self, note: Notification) -> None:
        """Deliver one notification (the replay's path)."""
        self._buffer.appendleft(note)
        self._deliver_run(1)

    def _replay(self) -> None:
        dropped, self._dropped = self._dropped, {}
        lost, self._lost = self._lost, 0
        self._bus.point(HandlerLagged(resource=self.resource, handler=self.name, lost=lost))
        get = self._cached
        for key, known in dropped.items():
            cached = get(key)
            if cached is not None:
                note: Notification = (
                    (ADD, cached, None, False) if known is None else (UPDATE, known, cached, False)
                )
            elif known is not None:
                note = (DELETE, DeletedFinalStateUnknown(key, known), None, False)
            else:
                continue
            self._deliver(note)
