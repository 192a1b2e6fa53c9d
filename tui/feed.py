"""The app's input: every source pushes here; the app drains in batches on its tick.

Sources push into a bounded buffer (a burst beyond :data:`MAX_BUFFER` drops the oldest and is
counted in ``dropped``: the UI must not grow without bound when a stream outruns it). The app
calls :meth:`Feed.drain` on its refresh tick, which folds up to ``limit`` events into the one
state (:class:`pycm.trace.state.State`) and into the ring of recent events the Events view
lists. Snapshots merge per instance (see :meth:`Feed.push_snapshot`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from pycm.trace import Event
from pycm.trace.state import State
from pycm.trace.stream import SourceState, SourceStatus

__all__ = ["MAX_BUFFER", "RECENT", "Feed", "status_text"]

MAX_BUFFER = 200_000  # ~10 s of a very busy manager; beyond, the UI is behind anyway
RECENT = 5_000  # events the Events view can list and filter
DRAIN_LIMIT = 50_000  # per tick: bounds a frame's work (at 10 ticks/s, 500k events/s)


def status_text(status: SourceStatus) -> str:
    """How the status line shows a source's status: a connected stream is "live", a replay its
    position, a broken one its state and why."""
    state, reason = status.state, status.reason
    if state in (SourceState.CONNECTED, SourceState.ENDED, SourceState.FAILED):
        return reason or ("live" if state is SourceState.CONNECTED else state.value)
    if state is SourceState.CONNECTING:
        return reason or state.value
    return f"{state.value} ({reason})" if reason else state.value


class Feed:
    """Invariants: ``len(buffer) <= MAX_BUFFER``; ``state`` has applied exactly the events that
    left the buffer through :meth:`drain` since the last :meth:`reset`."""

    def __init__(self, *, max_buffer: int = MAX_BUFFER, recent: int = RECENT) -> None:
        self.state = State()
        self.buffer: deque[Event] = deque()
        self.max_buffer = max_buffer
        self.recent: deque[Event] = deque(maxlen=recent)
        self.status: dict[str, SourceStatus] = {}  # source name -> its latest status
        self.dropped = 0
        self.snapshots = 0  # snapshots that contributed at least one instance
        self.generation = 0  # bumped by reset: views holding old rows start over
        self.dirty = False  # something changed since the last drain returned

    @property
    def statuses(self) -> dict[str, str]:
        """Each source's status as the status line shows it."""
        return {name: status_text(status) for name, status in self.status.items()}

    # --- the ReplaySink protocol (called by sources, with their names) --------------------------

    def push(self, source: str, events: Sequence[Event]) -> None:
        buffer = self.buffer
        buffer.extend(events)
        over = len(buffer) - self.max_buffer
        if over > 0:
            self.dropped += over
            for _ in range(over):
                buffer.popleft()

    def push_snapshot(self, source: str, snapshot: Mapping[str, Any]) -> None:
        """Adopt from a manager's state snapshot what this state does not know yet.

        Each manager's snapshot describes that manager (and the leases it saw); a viewer of
        three replicas gets three. Records of an instance (or lease) this state already has are
        kept: the events that follow keep them current, and replacing them would lose what the
        other sources contributed.
        """
        try:
            other = State.restore(dict(snapshot))
        except (TypeError, ValueError, KeyError, AttributeError):
            return
        # Events pushed before this snapshot are part of what it describes: apply them first,
        # so an instance they name counts as known and is not adopted (and counted) twice.
        self.drain(len(self.buffer))
        state = self.state
        known = set(state.instances)
        adopted = [name for name in other.instances if name not in known]
        for name in adopted:
            state.instances[name] = other.instances[name]
        for table in ("informers", "controllers", "queues"):
            mine, theirs = getattr(state, table), getattr(other, table)
            for key, rec in theirs.items():
                if key[0] not in known and key not in mine:
                    mine[key] = rec
        for name, api in other.api.items():
            if name not in known and name not in state.api:
                state.api[name] = api
        for name, lease in other.leases.items():
            if name not in state.leases:
                state.leases[name] = lease
        for error in other.errors:
            if error.get("instance") not in known:
                state.errors.append(error)
        state.now_ts = max(state.now_ts, other.now_ts)
        if adopted:
            self.snapshots += 1  # snapshots that contributed an instance
            self.dirty = True

    def set_status(self, source: str, status: SourceStatus) -> None:
        if self.status.get(source) != status:
            self.status[source] = status
            self.dirty = True

    def reset(self, source: str) -> None:
        self.state = State()
        self.buffer.clear()
        self.recent.clear()
        self.generation += 1
        self.dirty = True

    # --- the app's side -----------------------------------------------------------------------

    def drain(self, limit: int = DRAIN_LIMIT) -> int:
        """Apply up to ``limit`` buffered events; how many were applied."""
        buffer = self.buffer
        n = min(limit, len(buffer))
        if n:
            apply = self.state.apply
            recent = self.recent.append
            popleft = buffer.popleft
            for _ in range(n):
                event = popleft()
                apply(event)
                recent(event)
        return n

    def take_dirty(self) -> bool:
        dirty, self.dirty = self.dirty, False
        return dirty
