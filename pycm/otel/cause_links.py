"""The sink's side of the cause window: a sampled-out reconcile that wrote, held in case a kept
reconcile links to it, and exported (decision ``cause``) when one does, with that one's own
cause, a few links deep (:mod:`pycm.otel.causes` holds the window itself).

A kept reconcile's link then opens in Jaeger. The cost is on the paths that already handle such
a reconcile event by event (it has API calls waiting for its decision); a kept reconcile looks
up its trigger's trace id, one dict lookup.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from pycm.otel.causes import CauseWindow, Held
from pycm.otel.counts import SinkTally
from pycm.otel.decisions import DecisionMemory
from pycm.otel.sampling import Decision
from pycm.otel.spans import SpanRecord, event_attributes, step_span
from pycm.trace.causes import Trigger
from pycm.trace.events import Event, StepBegin
from pycm.trace.kinds import ApiRequestCompleted, ReconcileFinished, ReconcileStarted
from pycm.util.clock import Clock

__all__ = ["CauseLinks", "Child"]

# A child span waiting for its trace's decision: API requests stay the point they came from.
Child = SpanRecord | ApiRequestCompleted

_SAMPLED_OUT, _CAUSE = Decision.SAMPLED_OUT, Decision.CAUSE
# A reconcile is a cause only through a write: the cause table is filled from writes' responses
# (and writes in flight) only (pycm.trace.causes), so one that only read is never held.
_WRITES = frozenset(("create", "update", "patch", "delete", "deletecollection"))


class CauseLinks:
    """Holds, follows and exports causes for the sink that owns the state it is handed (its
    pending children, open steps and decisions); ``export`` hands one child span to the
    processor and counts it. Held traces dropped here are counted as the sampled-out traces
    they are."""

    def __init__(
        self,
        window: CauseWindow,
        *,
        memory: DecisionMemory,
        pending: MutableMapping[str, list[Child]],
        pending_gauge: Any,
        open_steps: dict[str, StepBegin],
        clock: Clock,
        export: Callable[[Child], None],
        tally: SinkTally,
    ) -> None:
        self.window = window
        self._memory = memory
        self._pending = pending
        self._pending_gauge = pending_gauge
        self._open_steps = open_steps
        self._clock = clock
        self._export = export
        self._tally = tally

    def hold(self, begin: StepBegin, end: ReconcileFinished, events: list[Event] | None) -> bool:
        """A root reconcile sampled out: kept if a kept reconcile wanted it as its cause while
        it ran, held if it wrote, else left to the caller to drop (False)."""
        if type(begin) is not ReconcileStarted:
            return False
        trace_id = end.trace_id
        causes = self.window
        depth = causes.wanted_at(trace_id) if causes.wanted else None
        pending = self._pending
        children = pending.get(trace_id)
        if depth is None:
            if not children:
                return False
            for child in children:  # (a loop: a generator costs more than the few it reads)
                if type(child) is ApiRequestCompleted and child.verb in _WRITES:
                    break
            else:
                return False
        if children is not None:
            del pending[trace_id]
            self._pending_gauge.set(len(pending))
        held = Held(self._clock.monotonic_ns(), begin, end, events, children or [])
        if depth is not None:
            begin = self._keep(held)
            if begin.trigger_trace_id:
                self.follow(begin.trigger_trace_id, begin.trigger_span_id, depth + 1)
        else:
            self._memory.remember(trace_id, _SAMPLED_OUT)  # late children: see the sink's _child
            pushed = causes.hold(trace_id, held)
            if pushed is not None:
                self._dropped(pushed)
                if causes.bytes > causes.max_bytes:
                    self.drop_held(causes.trim())
        return True

    def follow_trigger(self, trigger: Any) -> None:
        """:meth:`follow` a kept root reconcile's trigger as its begin record holds it (a
        pycm.trace.causes.Trigger, or any object with the five original fields)."""
        trace_id, span_id = (
            trigger.ids() if type(trigger) is Trigger else (trigger.trace_id, trigger.span_id)
        )
        if trace_id:
            self.follow(trace_id, span_id)

    def follow(self, trace_id: str, span_id: str, depth: int = 1) -> None:
        """A kept reconcile links (``depth`` links away) to the span ``span_id`` of trace
        ``trace_id``: export that trace if it is held, then follow its own link; if its root is
        still running, ask for it when it ends."""
        causes = self.window
        while depth <= causes.max_depth:
            held = causes.take(trace_id) if causes.held else None
            if held is None:
                if span_id in self._open_steps:
                    causes.want(trace_id, depth, self._clock.monotonic_ns())
                return
            begin = self._keep(held)
            trace_id, span_id = begin.trigger_trace_id, begin.trigger_span_id
            if not trace_id:
                return
            depth += 1

    def _keep(self, held: Held) -> ReconcileStarted:
        """Export a held (or wanted) trace as a kept reconcile's cause; returns its begin (a
        root reconcile's, whose own cause the caller follows)."""
        begin, end = held.begin, held.end
        record = step_span(begin, end)
        if held.events:
            record.events = [(e.KIND, e.ts, event_attributes(e)) for e in held.events]
        # Not remember: no new generation in the middle of the fast path's loops (their
        # locals hold the current one); handle_batch starts one when it is due.
        self._memory.decided[end.trace_id] = _CAUSE
        for child in held.children:
            self._export(child)
        self._export(record)
        self._tally.traces_exported(_CAUSE)
        return begin

    def drop_held(self, dropped: list[Held]) -> None:
        """Count held traces the window passed for (or that the bounds pushed out) as the
        sampled-out traces they are."""
        for held in dropped:
            self._dropped(held)

    def _dropped(self, held: Held) -> None:
        self._tally.traces_dropped(_SAMPLED_OUT)
        self._tally.spans_dropped(len(held.children) + 1, _SAMPLED_OUT)
