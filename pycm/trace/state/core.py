"""The state: ``state.apply(event)`` folds any event stream into one typed snapshot.

:class:`State` holds every domain's tables (their records, handlers and snapshot sections live
in the domain modules: :mod:`~pycm.trace.state.startup`, :mod:`~pycm.trace.state.leases`,
:mod:`~pycm.trace.state.informers`, :mod:`~pycm.trace.state.controllers`,
:mod:`~pycm.trace.state.queues`, :mod:`~pycm.trace.state.api`,
:mod:`~pycm.trace.state.steps`), the counters of the stream itself and the ring of recent
errors. :meth:`State.apply` is the single entry point: it stamps the instance record and calls
the one handler registered for the event's class.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from pycm.trace import codec
from pycm.trace.events import Event, StepBegin, StepEnd
from pycm.trace.kinds import SpansExported, SubscriberLagged
from pycm.trace.state import api, controllers, informers, leases, objects, queues, startup, steps
from pycm.trace.state.registry import Handler, dispatch_table, handles, not_folded
from pycm.trace.state.schema import SNAPSHOT_VERSION, CountersSnapshot, ErrorEntry, Snapshot
from pycm.trace.state.startup import InstanceRecord

if TYPE_CHECKING:
    from pycm.trace.objref import ObjectRef

__all__ = ["MAX_ERRORS", "MAX_UNKNOWN_KINDS", "RATE_WINDOW_S", "State"]

MAX_ERRORS = 200
MAX_UNKNOWN_KINDS = 64
RATE_WINDOW_S = 10  # the window of the rates in the snapshot


class State:
    """The folded state of an event stream. Feed with :meth:`apply`; read with :meth:`snapshot`.

    Invariants: every table is within its cap; ``open`` maps the span id of each begin whose end
    was not seen (at most :data:`~pycm.trace.state.steps.MAX_IN_FLIGHT`, oldest first) to that
    begin; ``ended_early`` holds span ids of ends seen without their begin (oldest first).
    """

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
        self.instances = startup.new_table()
        self.leases = leases.new_table()
        self.informers = informers.new_table()
        self.controllers = controllers.new_table()
        self.queues = queues.new_table()
        self.api = api.new_table()
        self.open: dict[str, StepBegin] = {}
        self.ended_early: dict[str, None] = {}
        self.errors: deque[ErrorEntry] = deque(maxlen=MAX_ERRORS)
        self.objects = objects.ObjectHistories()  # each object's history (not in snapshots)
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
        handler: Handler
        if issubclass(cls, codec.UnknownEvent):
            handler = _unknown
        elif issubclass(cls, StepBegin):
            handler = steps.generic_begin
        elif issubclass(cls, StepEnd):
            handler = steps.generic_end
        else:
            handler = _ignore
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
        return {
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
            "instances": startup.dump(self),
            "leases": leases.dump(self, now),
            "informers": informers.dump(self, now, RATE_WINDOW_S),
            "controllers": controllers.dump(self, now, RATE_WINDOW_S),
            "queues": queues.dump(self, now, RATE_WINDOW_S),
            "api": api.dump(self, now, RATE_WINDOW_S),
            "in_flight": steps.dump(self),
            "errors": [cast(ErrorEntry, dict(e)) for e in self.errors],
            "objects": _objects_dump(self, objects),
        }

    @classmethod
    def restore(cls, snapshot: Snapshot | dict[str, Any]) -> State:
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
        startup.load(state, data.get("instances"))
        leases.load(state, data.get("leases"))
        informers.load(state, data.get("informers"))
        controllers.load(state, data.get("controllers"))
        queues.load(state, data.get("queues"))
        api.load(state, data.get("api"))
        steps.load(state, data.get("in_flight", {}))
        state.errors.extend(cast(ErrorEntry, dict(e)) for e in data.get("errors", ()))
        objects.load(state, data.get("objects"))
        return state


_objects_dump = objects.dump  # (State.snapshot's parameter shadows the module)


# ---------------------------------------------------------------------------------------------
# The stream's own kinds
# ---------------------------------------------------------------------------------------------


def _ignore(state: State, ev: Event, inst: InstanceRecord) -> None:
    pass


def _unknown(state: State, ev: codec.UnknownEvent, inst: InstanceRecord) -> None:
    name = ev.kind
    unknown = state.unknown
    if name in unknown or len(unknown) < MAX_UNKNOWN_KINDS:
        unknown[name] = unknown.get(name, 0) + 1
    else:
        unknown["(other)"] = unknown.get("(other)", 0) + 1


@handles(SubscriberLagged)
def _lagged(state: State, ev: SubscriberLagged, inst: InstanceRecord) -> None:
    state.lag_events += 1
    state.lost += ev.lost


handles(codec.UnknownEvent)(_unknown)
not_folded(SpansExported, "the OpenTelemetry sink's counts are its own metrics")
