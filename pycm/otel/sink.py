"""The sink: a bus subscriber that turns finished steps into OpenTelemetry spans.

A step's begin is held until its end arrives; then the span is built with the step's own trace
and span ids. API requests (points carrying their latency) become CLIENT children of the step
they ran in. Traces are sampled at the tail: a reconcile trace's children wait in a bounded
buffer until the reconcile ends, and then the whole trace is exported or dropped together
(:mod:`pycm.otel.sampling`). Traces that are not reconciles (start-up, lease spans, informer
lists outside start-up) are always exported.

How each trace is shaped:

- start-up and leader election: :mod:`pycm.otel.lifecycle`.
- an API request outside any step: a trace of its own, sampled like a reconcile.
- reconcile: the root of its own trace (workers start with no current span), ``reconcile
  <controller>`` with its API calls as CLIENT children and a link to the event that enqueued
  the key (the informer's context: start-up's span when the informers started in it).
- other points inside an open step become span events of that step.

Links to causes: a reconcile sampled out that wrote is held for the cause window instead of
dropped at once, and exported after all (decision ``cause``) when a kept reconcile links to it
(:mod:`pycm.otel.cause_links`).

Where the work is: the common case, a fast ok root reconcile, is decided before anything is
built for it (:mod:`pycm.otel.fastpath`); decisions are remembered for late children in
:mod:`pycm.otel.decisions`; spans are built by :mod:`pycm.otel.spans` and encoded by
:mod:`pycm.otel.wire`; the processor is stopped by :mod:`pycm.otel.shutdown`.

Buffers are bounded (open steps, pending traces, spans per trace, the decided-trace memory, the
held causes); what they shed is counted (:mod:`pycm.otel.counts`) in
:class:`~pycm.otel.metrics.SinkMetrics` and reported on the bus as
:class:`~pycm.trace.kinds.SpansExported` at most every ``report_interval`` seconds.

Nothing here blocks the event loop: handing a kept span to the processor only appends it to the
batch processor's bounded queue (dropping the oldest when full); encoding and sending run in the
processor's worker thread — the one thread pycm tolerates, because it is the SDK's and lives
only here. Nothing is built for a dropped trace: a sampled-out reconcile is decided from its
end event before any span data exists, and its API requests wait as the points they are.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Protocol

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from pycm.otel.cause_links import CauseLinks, Child
from pycm.otel.causes import (
    CAUSE_WINDOW,
    MAX_CAUSE_DEPTH,
    MAX_HELD_BYTES,
    MAX_HELD_TRACES,
    CauseWindow,
)
from pycm.otel.counts import SinkTally
from pycm.otel.decisions import DecisionMemory
from pycm.otel.export import RecordProcessor
from pycm.otel.fastpath import FastPath
from pycm.otel.lifecycle import LEASE_TERM_POINTS, STARTUP_POINTS, LifecycleSpans
from pycm.otel.metrics import SinkMetrics
from pycm.otel.sampling import Decision, TailSampler
from pycm.otel.shutdown import SHUTDOWN_TIMEOUT, stop_processor
from pycm.otel.spans import (
    SpanRecord,
    api_span,
    event_attributes,
    reconcile_failed,
    step_span,
    to_readable,
)
from pycm.otel.wire import encode_span
from pycm.trace.bus import Bus, Record, Subscription
from pycm.trace.events import Event, StepBegin, StepEnd
from pycm.trace.kinds import (
    ApiRequestCompleted,
    FlagsParsed,
    LeaseAcquireAttempted,
    LeaseAcquired,
    ReconcileFinished,
    ReconcileStarted,
    SpansExported,
    StartupBegan,
    SubscriberLagged,
)
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["SCOPE_NAME", "OtelSink", "SpanProcessorLike"]

log = logging.getLogger("pycm.otel")

SCOPE_NAME = "pycm.otel"  # the instrumentation scope of every span
MAX_OPEN_STEPS = 8192
MAX_PENDING_TRACES = 2048
MAX_SPANS_PER_TRACE = 256
MAX_SPAN_EVENTS = 32
REPORT_INTERVAL = 10.0
# After a wake-up the sink lets the event loop run up to this many more turns before it drains,
# while fewer than LINGER_ENTRIES entries (at most an eighth of its queue) wait: a busy loop's
# reconciles then reach it in batches of hundreds, not of what one turn made (each batch has a
# fixed cost; measured in docs/operations.md, "OpenTelemetry export"). An idle loop's turns are
# microseconds, so a lone event still reaches the processor at once (whose batches wait up to
# a second anyway).
LINGER_TURNS = 8
LINGER_ENTRIES = 2048

_ALWAYS, _SAMPLED, _SAMPLED_OUT = Decision.ALWAYS, Decision.SAMPLED, Decision.SAMPLED_OUT


class SpanProcessorLike(Protocol):
    """The subset of the SDK's SpanProcessor the sink uses."""

    def on_end(self, span: ReadableSpan) -> None: ...

    def shutdown(self) -> None: ...


class OtelSink:
    """Invariants: a span id is in ``_open`` iff its begin was seen and its end was not (bounded
    by ``max_open``); a trace id is in ``_pending`` only while its root has not ended and no
    decision is known for it; ``_memory`` (:class:`~pycm.otel.decisions.DecisionMemory`) and
    ``_startup`` hold the decisions of ended roots. ``_pending`` holds a child as the API
    request point it came from until its trace is kept: nothing is built for a trace that is
    dropped. A sampled-out root reconcile that wrote leaves ``_pending`` for ``_causes``
    (:class:`~pycm.otel.causes.CauseWindow`, through ``_cause_links``), remembered as sampled
    out, until a kept reconcile takes it (then remembered as ``cause``) or the window passes."""

    def __init__(
        self,
        processor: SpanProcessorLike | RecordProcessor,
        *,
        resource: Resource,
        sampler: TailSampler,
        metrics: SinkMetrics,
        bus: Bus | None = None,
        max_open: int = MAX_OPEN_STEPS,
        max_traces: int = MAX_PENDING_TRACES,
        max_spans_per_trace: int = MAX_SPANS_PER_TRACE,
        report_interval: float = REPORT_INTERVAL,
        linger_turns: int = LINGER_TURNS,
        cause_window: float = CAUSE_WINDOW,
        max_held: int = MAX_HELD_TRACES,
        max_held_bytes: int = MAX_HELD_BYTES,
        max_cause_depth: int = MAX_CAUSE_DEPTH,
        clock: Clock | None = None,
    ) -> None:
        self.processor = processor
        self.resource = resource
        self.sampler = sampler
        self.metrics = metrics
        self.bus = bus
        self.max_open = max_open
        self.max_traces = max_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.report_interval = report_interval
        self.linger_turns = linger_turns
        self._scope = InstrumentationScope(
            SCOPE_NAME, str(resource.attributes.get("service.version", ""))
        )
        self._open: dict[str, StepBegin] = {}
        self._open_events: dict[str, list[Event]] = {}
        self._pending: OrderedDict[str, list[Child]] = OrderedDict()
        # Decisions of ended roots, for children that end after them.
        self._memory = memory = DecisionMemory()
        # Kept spans go to the processor encoded when it takes them so (our OTLP pipeline),
        # otherwise as the SDK's ReadableSpan (any SDK span processor; the tests' in-memory one).
        # (Its on_span and on_end are looked up as each span is handed over.)
        records: RecordProcessor | None = None
        if isinstance(processor, RecordProcessor):
            records = processor
            self._emit: Callable[[SpanRecord], None] = lambda record: records.on_span(
                encode_span(record)
            )
        else:
            sdk, scope = processor, self._scope
            self._emit = lambda record: sdk.on_end(to_readable(record, resource, scope))
        # Several encoded spans at once, where the processor takes them so.
        on_spans = getattr(processor, "on_spans", None)
        if on_spans is None and records is not None:
            one = records.on_span

            def on_spans(spans: list[bytes]) -> None:
                for span in spans:
                    one(span)

        # The start-up traces (always kept) and the lease term's spans.
        self._lifecycle = lifecycle = LifecycleSpans()
        self._startup = lifecycle.startup
        # Sampled-out reconciles that wrote, held in case a kept one links to them; ``_links``:
        # whether any are (a window of 0 turns the lookups off too).
        self._causes = causes = CauseWindow(
            cause_window,
            max_traces=max_held,
            max_bytes=max_held_bytes,
            max_depth=max_cause_depth,
        )
        self._links = causes.active
        self._clock: Clock = clock or (bus.clock if bus is not None else REAL_CLOCK)
        self._tally = tally = SinkTally(metrics)
        self._last_report_ns = 0
        self._cause_links = links = CauseLinks(
            causes,
            memory=memory,
            pending=self._pending,
            pending_gauge=metrics.pending_traces,
            open_steps=self._open,
            clock=self._clock,
            export=self._export,
            tally=tally,
        )
        self._fast = FastPath(
            sampler=sampler,
            memory=memory,
            open_steps=self._open,
            open_events=self._open_events,
            pending=self._pending,
            causes=causes,
            records=records,
            on_spans=on_spans or (lambda spans: None),
            emit=self._emit,
            follow=links.follow,
            follow_trigger=links.follow_trigger,
            handle=self.handle,
        )
        metrics.held_traces.set_function(lambda: len(causes.held))

    # -- events ---------------------------------------------------------------------------

    def handle_batch(self, events: Iterable[Event | Record]) -> None:
        """Fold in what one wake-up drained (events, or a subscription's entries: a reconcile's
        compact records, see ``Subscription.drain_entries``), then bring the metrics up to date.

        The common case is decided inline (:class:`~pycm.otel.fastpath.FastPath`): at its end, a
        fast, successful reconcile root with nothing buffered is decided on the spot (the
        decision :meth:`TailSampler.decide` makes): outside the ratio it is dropped before
        anything is built for it, inside it its span goes straight to the processor. Every
        other event takes :meth:`handle`."""
        batch = events if type(events) is list else list(events)
        causes = self._causes
        if causes.held or causes.wanted:
            # Before the batch: a cause the window has passed for is not kept by it.
            self._cause_links.drop_held(causes.expire(self._clock.monotonic_ns()))
        dropped, kept = self._fast.pairs(batch)
        self._memory.rotate_if_full()
        open_steps = self._open
        while len(open_steps) > self.max_open:
            oldest = next(iter(open_steps))
            del open_steps[oldest]
            self._open_events.pop(oldest, None)
            self._tally.spans_dropped(1, "unmatched")
        tally = self._tally
        if dropped:
            tally.traces_dropped(_SAMPLED_OUT, dropped)
            tally.spans_dropped(dropped, _SAMPLED_OUT)
        if kept:
            tally.traces_exported(_SAMPLED, kept)
            tally.spans_exported(kept)
        tally.flush()

    def flush_metrics(self) -> None:
        """Add the counts gathered since the last call to the Prometheus counters."""
        self._tally.flush()

    def handle(self, event: Event) -> None:
        """Fold one trace event in (synchronous and cheap; the subscriber loop calls it through
        ``handle_batch``, which brings the Prometheus counters up to date)."""
        if isinstance(event, StepBegin):
            self._begin(event)
        elif isinstance(event, StepEnd):
            self._end(event)
        elif type(event) is ApiRequestCompleted:
            self._api(event)
        elif isinstance(event, STARTUP_POINTS):
            record = self._lifecycle.startup_point(event)
            if record is not None:
                self._child(record)
        elif type(event) is FlagsParsed:
            self._lifecycle.flags_parsed(event)
        elif type(event) is LeaseAcquireAttempted:
            self._lifecycle.attempted(event)
        elif type(event) is LeaseAcquired:
            record = self._lifecycle.acquired(event)
            if record.parent_id:
                self._child(record)
            else:
                self._finish(record, _ALWAYS)
        elif type(event) in LEASE_TERM_POINTS:
            self._finish(self._lifecycle.lease_point(event), _ALWAYS)
        elif type(event) is SubscriberLagged:
            self.metrics.events_lost.inc(event.lost)
        elif type(event) is SpansExported:
            return
        else:
            parent = event.parent_id
            if parent and parent in self._open:
                events = self._open_events
                bucket = events.get(parent)
                if bucket is None:
                    bucket = events[parent] = []
                if len(bucket) < MAX_SPAN_EVENTS:
                    bucket.append(event)  # attributes are built only if the span is exported

    def _begin(self, begin: StepBegin) -> None:
        open_steps = self._open
        if len(open_steps) >= self.max_open:
            oldest = next(iter(open_steps))
            del open_steps[oldest]
            self._open_events.pop(oldest, None)
            self._tally.spans_dropped(1, "unmatched")
        open_steps[begin.span_id] = begin
        if type(begin) is StartupBegan:
            flags = self._lifecycle.startup_began(begin)
            if flags is not None:
                self._child(flags)

    def _end(self, end: StepEnd) -> None:
        begin = self._open.pop(end.span_id, None)
        if begin is None:
            self._tally.spans_dropped(1, "unmatched")
            return
        self._ended(begin, end)

    def _ended(self, begin: StepBegin, end: StepEnd) -> None:
        events = self._open_events.pop(end.span_id, None) if self._open_events else None
        decision = _ALWAYS
        if not end.parent_id and type(end) is ReconcileFinished:
            failed = reconcile_failed(end)
            decision = self.sampler.decide(end.trace_id, failed=failed, dur_ns=end.dur_ns)
            if decision is _SAMPLED_OUT:
                # The common case: decided before any span data is built (and, if it wrote,
                # held in case a kept reconcile links to it).
                if not (self._links and self._cause_links.hold(begin, end, events)):
                    self._drop_trace(end.trace_id, decision)
                return
        record = step_span(begin, end)
        if events:
            record.events = [(e.KIND, e.ts, event_attributes(e)) for e in events]
        if record.parent_id:
            self._child(record)
        else:
            self._finish(record, decision)
            if (
                decision is not _ALWAYS
                and self._links
                and type(begin) is ReconcileStarted
                and begin.trigger_trace_id
            ):
                # A reconcile kept at the tail (failed, slow): its cause with it.
                self._cause_links.follow(begin.trigger_trace_id, begin.trigger_span_id)

    def _api(self, point: ApiRequestCompleted) -> None:
        if not point.parent_id:
            # A request outside any step is a trace of its own: sampled like a reconcile (a
            # failed one kept), except that a watch's length says nothing about slowness.
            failed = bool(point.error) or point.code >= 500
            dur_ns = 0 if point.verb == "watch" else point.dur_ns
            decision = self.sampler.decide(point.trace_id, failed=failed, dur_ns=dur_ns)
            if decision.keep:
                self._finish(api_span(point), decision)
            else:
                self._drop_trace(point.trace_id, decision)
            return
        startup = self._startup.get(point.trace_id)
        if (
            startup is not None
            and startup.informers_started
            and point.parent_id == startup.root_span_id
        ):
            self._tally.spans_dropped(1, "outside_step")
            return
        self._child(point)  # built only if its trace is kept

    # -- traces ---------------------------------------------------------------------------

    def _decision(self, trace_id: str) -> Decision | None:
        if trace_id in self._startup:
            return Decision.ALWAYS
        return self._memory.get(trace_id)

    def _child(self, record: Child) -> None:
        trace_id = record.trace_id
        decision = self._decision(trace_id)
        if decision is not None:
            startup = self._startup.get(trace_id)
            if startup is not None:
                if startup.spans >= self.max_spans_per_trace:
                    self._tally.spans_dropped(1, "trace_full")
                    return
                startup.spans += 1
            if decision.keep:
                self._export(record)
            elif (
                self._causes.held
                and (held := self._causes.held.get(trace_id)) is not None
                and len(held.children) < self.max_spans_per_trace
            ):
                self._causes.add_child(held, record)  # exported with it, if it is kept
                self._cause_links.drop_held(self._causes.trim())
            else:
                self._tally.spans_dropped(1, decision.value)
            return
        pending = self._pending
        buffer = pending.get(trace_id)
        if buffer is None:
            if len(pending) >= self.max_traces:
                _, evicted = pending.popitem(last=False)
                self._tally.evicted(len(evicted))
            buffer = pending[trace_id] = []
            self.metrics.pending_traces.set(len(pending))
        if len(buffer) >= self.max_spans_per_trace:
            self._tally.spans_dropped(1, "trace_full")
            return
        buffer.append(record)

    def _finish(self, root: SpanRecord, decision: Decision) -> None:
        trace_id = root.trace_id
        children = self._pending.pop(trace_id, None) or []
        if children:
            self.metrics.pending_traces.set(len(self._pending))
        if trace_id not in self._startup:
            self._memory.remember(trace_id, decision)
        if decision.keep:
            for child in children:
                self._export(child)
            self._export(root)
            self._tally.traces_exported(decision)
        else:
            self._drop_trace(trace_id, decision, children)

    def _drop_trace(
        self, trace_id: str, decision: Decision, children: list[Child] | None = None
    ) -> None:
        """Drop a trace whose root ended (``children``: already taken from ``_pending``)."""
        if children is None:
            children = self._pending.pop(trace_id, None) or []
            if children:
                self.metrics.pending_traces.set(len(self._pending))
            self._memory.remember(trace_id, decision)
        self._tally.traces_dropped(decision)
        self._tally.spans_dropped(len(children) + 1, decision)

    def _export(self, child: Child) -> None:
        self._emit(api_span(child) if isinstance(child, ApiRequestCompleted) else child)
        self._tally.spans_exported()

    # -- reporting and the subscriber loop --------------------------------------------------

    def report(self, *, force: bool = False) -> SpansExported | None:
        """Emit the counts since the last report on the bus (every ``report_interval`` at most,
        and only when something happened)."""
        bus = self.bus
        if bus is None:
            return None
        now = bus.clock.monotonic_ns()
        if not force and now - self._last_report_ns < self.report_interval * 1e9:
            return None
        event = self._tally.report(len(self._pending))
        if event is None:
            return None
        self._last_report_ns = now
        bus.point(event)
        return event

    async def run(self, sub: Subscription) -> None:
        """Consume ``sub`` until cancelled (or closed); then take in what is left, report, and
        shut the processor down (bounded, off the event loop)."""
        try:
            while not sub.closed:
                await sub.wait()
                await self._linger(sub)
                # Entries: a reconcile's records are never built into events unless kept.
                self.handle_batch(sub.drain_entries())
                self.report()
        finally:
            self.handle_batch(sub.drain_entries())
            sub.close()
            self._cause_links.drop_held(
                self._causes.clear()
            )  # no kept reconcile will come for them now
            self._tally.flush()
            self.report(force=True)
            await asyncio.shield(stop_processor(self.processor, limit_s=SHUTDOWN_TIMEOUT))

    async def _linger(self, sub: Subscription) -> None:
        """Let the loop take up to ``linger_turns`` turns while fewer than LINGER_ENTRIES
        entries (or an eighth of ``sub``'s queue) wait, so that they are taken as one batch."""
        enough = min(LINGER_ENTRIES, sub.maxsize // 8)
        for _ in range(self.linger_turns):
            if sub.pending >= enough or sub.closed:
                return
            await asyncio.sleep(0)
