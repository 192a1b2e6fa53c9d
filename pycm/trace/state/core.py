"""The state's engine: ``state.apply(event)`` folds any event stream into one typed snapshot.

:class:`StateCore` holds the counters of the stream itself and folds, snapshots and restores
through its domains: the :class:`~pycm.trace.state.domain.Domain` tuple its class names
(:data:`~pycm.trace.state.domains.DOMAINS`, on :class:`~pycm.trace.state.domains.State`), each of
which attaches its tables, dumps its snapshot section and loads it back. This module names no
domain. :meth:`StateCore.apply` is the single entry point: it stamps the instance record and
calls the one handler registered for the event's class.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

from pycm.trace import codec
from pycm.trace.events import Event
from pycm.trace.kinds import SpansExported, SubscriberLagged
from pycm.trace.state.domain import Domain, Moment
from pycm.trace.state.record import BoundedTable
from pycm.trace.state.registry import (
    Handler,
    dispatch_table,
    handler_of_rest,
    handles,
    not_folded,
)
from pycm.trace.state.schema import SNAPSHOT_VERSION, CountersSnapshot, ErrorEntry, Snapshot

if TYPE_CHECKING:
    from pycm.trace.objref import ObjectRef

__all__ = ["MAX_UNKNOWN_KINDS", "RATE_WINDOW_S", "StateCore"]

MAX_UNKNOWN_KINDS = 64
RATE_WINDOW_S = 10  # the window of the rates in the snapshot


class StateCore:
    """The folded state of an event stream. Feed with :meth:`apply`; read with :meth:`snapshot`.

    Invariants: every table is within its cap; ``open`` maps the span id of each begin whose end
    was not seen (at most :data:`~pycm.trace.state.steps.MAX_IN_FLIGHT`, oldest first) to that
    begin; ``ended_early`` holds span ids of ends seen without their begin (oldest first).
    """

    domains: ClassVar[tuple[Domain, ...]] = ()  # in snapshot order
    # Two domains' tables the engine itself uses: the instance records it stamps (startup's)
    # and the ring ``error`` appends to.
    instances: BoundedTable[str, Any]
    errors: deque[ErrorEntry]

    def __init__(self, *, histories: bool = True) -> None:
        """``histories=False``: no object histories are folded (``pycm run
        --object-histories=false``; the reducer as it was before them, for its benchmark)."""
        self.histories = histories
        self.applied = 0
        self.lost = 0
        self.lag_events = 0
        self.out_of_order = 0
        self.in_flight_evicted = 0
        self.malformed = 0
        self.unknown: dict[str, int] = {}
        self.now_ts = 0  # the newest event ts seen
        for domain in self.domains:
            domain.attach(self)
        self._dispatch: dict[type, Handler] = dispatch_table(histories=histories)

    # -----------------------------------------------------------------------------------------
    # Entry point
    # -----------------------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event in, in any order. Never raises: an event whose attributes have the
        wrong types (a decoded, hand-edited recording) is counted in ``counters.malformed``."""
        n = self.applied = self.applied + 1
        ts = event.ts
        # type(x) rather than x.__class__: the interpreter's fast path (3.11 specializes it)
        if type(ts) is not int or type(event.seq) is not int:
            self.malformed += 1
            return
        name = event.instance
        if type(name) is not str:
            self.malformed += 1
            return
        if ts > self.now_ts:
            self.now_ts = ts
        inst = self.instances.get(name)
        if inst is None:
            inst = self.instances.touch(name, n)
            inst.first_ts = ts
        else:
            inst.touched = n
        inst.events += 1
        if ts > inst.last_ts:
            inst.last_ts = ts
        seq = event.seq
        if seq:
            if seq > inst.last_seq:
                inst.last_seq = seq
            else:
                self.out_of_order += 1
        handler = self._dispatch.get(type(event))
        if handler is None:
            handler = self._resolve(type(event))
        try:
            handler(self, event, inst)
        except (TypeError, ValueError, AttributeError):
            # A decoded event whose attributes have the wrong types (the codec does not check
            # them): count it and go on; the fields updated before the bad one stay updated.
            self.malformed += 1

    def apply_all(self, events: Iterable[Event]) -> None:
        """Apply every event of an iterable, in order."""
        apply = self.apply
        for event in events:
            apply(event)

    def _resolve(self, cls: type) -> Handler:
        """The handler of a kind without its own (a kind added after this state's handlers,
        or declared not folded)."""
        handler: Handler | None
        if issubclass(cls, codec.UnknownEvent):
            handler = _unknown
        else:
            handler = handler_of_rest(cls) or _ignore
        self._dispatch[cls] = handler
        return handler

    def error(self, event: Event, text: str) -> None:
        """Add an entry to the ring of recent errors."""
        self.errors.append(
            {
                "ts": event.ts,
                "instance": event.instance,
                "kind": event.KIND,
                "text": text,
                "trace_id": event.trace_id,
            }
        )

    # -----------------------------------------------------------------------------------------
    # Snapshot and restore
    # -----------------------------------------------------------------------------------------

    def snapshot(self, objects: Iterable[ObjectRef] = ()) -> Snapshot:
        """The whole state as plain JSON-able data, with derived views (rates, in flight),
        and the histories of ``objects`` (the others are not carried: see
        :mod:`~pycm.trace.state.objects`)."""
        now = self.now_ts
        out: dict[str, Any] = {
            "v": SNAPSHOT_VERSION,
            "now_ts": now,
            "counters": {
                "applied": self.applied,
                "lost": self.lost,
                "lag_events": self.lag_events,
                "out_of_order": self.out_of_order,
                "in_flight_evicted": self.in_flight_evicted,
                "malformed": self.malformed,
                "unknown": dict(self.unknown),
            },
        }
        at = Moment(now, RATE_WINDOW_S, objects)
        for domain in self.domains:
            out[domain.SECTION] = domain.dump(self, at)
        return cast(Snapshot, out)

    @classmethod
    def restore(cls, snapshot: Snapshot | dict[str, Any]) -> Self:
        """A state that continues exactly where the one that took ``snapshot`` was.

        Reads any version-1 snapshot, including one from before ``v`` was declared: missing
        sections and fields keep their defaults."""
        data = cast(dict[str, Any], snapshot)
        state = cls()
        counters: CountersSnapshot | dict[str, Any] = data.get("counters", {})
        state.applied = int(counters.get("applied", 0))
        state.lost = int(counters.get("lost", 0))
        state.lag_events = int(counters.get("lag_events", 0))
        state.out_of_order = int(counters.get("out_of_order", 0))
        state.in_flight_evicted = int(counters.get("in_flight_evicted", 0))
        state.malformed = int(counters.get("malformed", 0))
        state.unknown = dict(counters.get("unknown", {}))
        state.now_ts = int(data.get("now_ts", 0))
        for domain in state.domains:
            domain.load(state, data.get(domain.SECTION))
        return state


# ---------------------------------------------------------------------------------------------
# The stream's own kinds
# ---------------------------------------------------------------------------------------------


def _ignore(state: StateCore, ev: Event, inst: object) -> None:
    pass


def _unknown(state: StateCore, ev: codec.UnknownEvent, inst: object) -> None:
    name = ev.kind
    unknown = state.unknown
    if name in unknown or len(unknown) < MAX_UNKNOWN_KINDS:
        unknown[name] = unknown.get(name, 0) + 1
    else:
        unknown["(other)"] = unknown.get("(other)", 0) + 1


@handles(SubscriberLagged)
def _lagged(state: StateCore, ev: SubscriberLagged, inst: object) -> None:
    state.lag_events += 1
    state.lost += ev.lost


handles(codec.UnknownEvent)(_unknown)
not_folded(SpansExported, "the OpenTelemetry sink's counts are its own metrics")
