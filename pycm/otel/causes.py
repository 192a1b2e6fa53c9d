"""The cause window: sampled-out reconcile traces held a while, in case a kept one links to them.

A reconcile's span links to its cause: the earlier reconcile of this manager whose write
produced the watch event that enqueued its key (pycm.trace.causes). Tail sampling decides each
trace alone, so a kept reconcile (failed, slow, in the ratio) often links to a cause that was
sampled out, and the link opens nothing in Jaeger. So the sink does not drop such a cause at
once: a sampled-out root reconcile that wrote (the only kind that can be a cause) is *held*
here, as the records the sink already has (its begin and end events, its children as the API
request points they came from: nothing is built), for the window; a kept reconcile that links to
a held trace takes it out and the sink exports it (decision ``cause``), and that cause's own
cause too, up to ``max_depth`` links from the kept one. When the window passes, a held trace is
dropped and counted as sampled out, as it would have been at once.

A cause can still be running when the reconcile it caused ends (its write returned, the watch
event came and was reconciled, while it did more): the kept reconcile then leaves the trace id
here as *wanted*, and the cause is kept when it ends within the window, whatever the ratio says.

Bounded three ways: the window (time), ``max_traces`` held and ``max_bytes`` of records held (an
estimate: :data:`RECORD_BYTES` a record), the oldest dropped first when either is reached, so a
burst of writes shortens the window rather than growing memory; wanted ids by ``max_traces``.
Never an object body: the records are the trace events, flat scalars by contract.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from pycm.trace.events import Event
from pycm.trace.kinds import ReconcileFinished, ReconcileStarted

__all__ = [
    "CAUSE_WINDOW",
    "MAX_CAUSE_DEPTH",
    "MAX_HELD_BYTES",
    "MAX_HELD_TRACES",
    "RECORD_BYTES",
    "CauseWindow",
    "Held",
]

# Long enough for a kept reconcile to end after its cause did: the watch event (milliseconds),
# the queue's wait (rate limiting: up to seconds under load) and the kept reconcile itself, which
# may be a slow one (--trace-slow-threshold, 1 s by default) or a failed one after a timeout.
CAUSE_WINDOW = 5.0
# About a second of a busy manager's writing reconciles (a rollout of hundreds of deployments
# writes a few hundred times a second), most of them sampled out at the default ratio.
MAX_HELD_TRACES = 1024
MAX_HELD_BYTES = 4 << 20
# A held record's size, estimated: measured with its strings (sys.getsizeof, recursively) a
# ReplicaSet reconcile's begin is ~1.35 KB (its trigger fields), its end ~0.9 KB and a pod
# create's API request point ~1.0 KB; ids and instance strings shared between them are counted
# once per record, so this errs high.
RECORD_BYTES = 1024
# Links followed from a kept reconcile: deployment → its ReplicaSet → the pods' reconciles is 2;
# a chain of status writes, each triggering the next, stops here.
MAX_CAUSE_DEPTH = 4


class Held:
    """One held trace: its root reconcile's begin and end, the root's span events (or None),
    its children as they wait in the sink (API request points, records of child steps), when it
    was held (the sink's monotonic clock, ns) and its estimated size."""

    __slots__ = ("at_ns", "begin", "children", "cost", "end", "events")

    def __init__(
        self,
        at_ns: int,
        begin: ReconcileStarted,
        end: ReconcileFinished,
        events: list[Event] | None,
        children: list[Any],
    ) -> None:
        self.at_ns = at_ns
        self.begin = begin
        self.end = end
        self.events = events
        self.children = children
        self.cost = RECORD_BYTES * (2 + len(children) + (len(events) if events else 0))


class CauseWindow:
    """Invariants: a trace id is in ``held`` iff its root reconcile ended sampled out within the
    window, it wrote, and no kept reconcile has taken it yet; ``held`` is in the order the traces
    were held (oldest first), as are ``wanted``'s ids (trace id → (when wanted, the link depth
    at which it was wanted)); ``bytes`` is the sum of the held traces' ``cost``. A window of 0
    holds nothing (``active`` is False)."""

    def __init__(
        self,
        window_s: float = CAUSE_WINDOW,
        *,
        max_traces: int = MAX_HELD_TRACES,
        max_bytes: int = MAX_HELD_BYTES,
        max_depth: int = MAX_CAUSE_DEPTH,
    ) -> None:
        self.window_ns = int(window_s * 1e9)
        self.active = self.window_ns > 0 and max_traces > 0 and max_depth > 0
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.held: OrderedDict[str, Held] = OrderedDict()
        self.wanted: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self.bytes = 0

    def hold(self, trace_id: str, held: Held) -> Held | None:
        """Hold ``held``; returns the trace its room was taken from (the oldest), if any, for
        the sink to drop and count. (One at most, but for a trace bigger than the ones before
        it when the bytes are full: the rest go by :meth:`trim`.)"""
        traces = self.held
        traces[trace_id] = held
        self.bytes += held.cost
        if len(traces) > self.max_traces or self.bytes > self.max_bytes:
            _, oldest = traces.popitem(last=False)
            self.bytes -= oldest.cost
            return oldest
        return None

    def trim(self) -> list[Held]:
        """Take out the oldest held traces while the bytes are over their bound."""
        out: list[Held] = []
        while self.bytes > self.max_bytes and self.held:
            _, oldest = self.held.popitem(last=False)
            self.bytes -= oldest.cost
            out.append(oldest)
        return out

    def add_child(self, held: Held, child: Any) -> None:
        """A child of a held trace that ended after its root (the sink bounds their number)."""
        held.children.append(child)
        held.cost += RECORD_BYTES
        self.bytes += RECORD_BYTES

    def take(self, trace_id: str) -> Held | None:
        """The held trace a kept reconcile links to, taken out, or None."""
        held = self.held.pop(trace_id, None)
        if held is not None:
            self.bytes -= held.cost
        return held

    def want(self, trace_id: str, depth: int, now_ns: int) -> None:
        """A kept reconcile links (``depth`` links away) to this trace, whose root is running."""
        wanted = self.wanted
        earlier = wanted.pop(trace_id, None)  # (re-inserted: the order stays by time)
        if earlier is not None:
            depth = min(depth, earlier[1])
        wanted[trace_id] = (now_ns, depth)
        if len(wanted) > self.max_traces:
            wanted.popitem(last=False)

    def wanted_at(self, trace_id: str) -> int | None:
        """The link depth at which this ending trace was wanted (taken out), or None."""
        entry = self.wanted.pop(trace_id, None)
        return None if entry is None else entry[1]

    def expire(self, now_ns: int) -> list[Held]:
        """Take out what the window has passed for: the held traces (returned, oldest first,
        for the sink to drop and count) and the wanted ids."""
        limit = now_ns - self.window_ns
        out: list[Held] = []
        held = self.held
        while held:
            oldest = next(iter(held.values()))
            if oldest.at_ns > limit:
                break
            held.popitem(last=False)
            self.bytes -= oldest.cost
            out.append(oldest)
        wanted = self.wanted
        while wanted and next(iter(wanted.values()))[0] <= limit:
            wanted.popitem(last=False)
        return out

    def clear(self) -> list[Held]:
        """Take everything out (the sink is stopping): the held traces are returned."""
        out = list(self.held.values())
        self.held.clear()
        self.wanted.clear()
        self.bytes = 0
        return out
