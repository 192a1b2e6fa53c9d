"""The spans of the manager's own life: its start-up trace and its leader-election spans.

- start-up: the root ``pycm.startup`` step and everything that carries its trace id — flags
  parsed (emitted before the step, adopted into it), handler chain built, serving started,
  each controller's init step, each informer's list step and synced point, InformersStarted, the
  lease acquisition and the API requests made on the way. Start-up ends (the root step) before
  leader-only work does, so its trace is decided (kept) when it begins and late children are
  exported as they come, up to the sink's ``max_spans_per_trace``. After InformersStarted, API
  requests made directly under the start-up root (the elector's renew calls, watches) are no
  longer start-up's and are not exported.
- leader election: ``lease.acquire`` (a child of start-up when it happened during start-up, with
  the attempts as span events), and each renew (``lease.renew``: latency, outcome, reason),
  release and loss as a span of its own trace — trace id = 16 zeros + the point's span id,
  linked to the acquisition. (The renewer runs outside any step, so its lock calls are API
  requests outside any step: traces of their own, sampled by the sink as any such request.)

:class:`LifecycleSpans` builds these spans from their points and remembers what links them (the
start-up traces, the flags waiting for start-up, the acquisition's attempts and its span); the
sink routes what it returns (a child of a trace, or a root always kept).
"""

from __future__ import annotations

from pycm.otel.spans import SpanRecord, event_attributes, point_span
from pycm.trace.context import new_span_id, new_trace_id
from pycm.trace.events import Event
from pycm.trace.kinds import (
    FlagsParsed,
    HandlerChainBuilt,
    InformersStarted,
    InformerSynced,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseLost,
    LeaseReleased,
    LeaseRenewed,
    LeaseRenewFailed,
    ServingStarted,
    StartupBegan,
)

__all__ = [
    "LEASE_TERM_POINTS",
    "MAX_ACQUIRE_ATTEMPTS",
    "STARTUP_POINTS",
    "LifecycleSpans",
    "Startup",
]

MAX_ACQUIRE_ATTEMPTS = 16
# Points that are spans of the start-up trace when they carry its trace id.
STARTUP_POINTS = (HandlerChainBuilt, ServingStarted, InformerSynced, InformersStarted)
# Points of a lease term, each a span of its own trace, by the span's name.
LEASE_TERM_POINTS = {
    LeaseRenewed: "lease.renew",
    LeaseRenewFailed: "lease.renew",
    LeaseReleased: "lease.release",
    LeaseLost: "lease.lost",
}


class Startup:
    """One start-up trace: its root's span id, how many spans it has exported, and whether the
    informers have started (after which requests under its root are no longer its own)."""

    __slots__ = ("informers_started", "root_span_id", "spans")

    def __init__(self, root_span_id: str) -> None:
        self.root_span_id = root_span_id
        self.spans = 0
        self.informers_started = False


class LifecycleSpans:
    """``startup`` holds the start-up traces by trace id (their decision: always kept);
    ``_flags`` the FlagsParsed point waiting for start-up to begin; ``_attempts`` the
    acquisition attempts since the last acquisition (bounded); ``_term`` the ids of the
    current lease term's acquisition span, which its renewals, release and loss link to."""

    def __init__(self) -> None:
        self.startup: dict[str, Startup] = {}
        self._flags: FlagsParsed | None = None
        self._attempts: list[LeaseAcquireAttempted] = []
        self._term: tuple[str, str] | None = None

    def flags_parsed(self, event: FlagsParsed) -> None:
        if not event.trace_id:
            self._flags = event  # emitted before start-up began; adopted by it

    def startup_began(self, begin: StartupBegan) -> SpanRecord | None:
        """Start a start-up trace; returns the flags' span, a child of its root, if any."""
        self.startup[begin.trace_id] = Startup(begin.span_id)
        flags, self._flags = self._flags, None
        if flags is None:
            return None
        record = point_span(flags, name="flags.parsed")
        record.trace_id, record.parent_id = begin.trace_id, begin.span_id
        record.span_id = new_span_id()
        record.start_ns = record.end_ns = begin.ts
        return record

    def startup_point(self, point: Event) -> SpanRecord | None:
        """A start-up point's span (a child of start-up), or None outside a start-up trace."""
        startup = self.startup.get(point.trace_id)
        if startup is None:
            return None
        dur_ns = 0
        if type(point) is InformerSynced:
            dur_ns = int(point.duration_ms * 1e6)
        elif type(point) is InformersStarted:
            startup.informers_started = True
        return point_span(point, dur_ns=dur_ns)

    def attempted(self, event: LeaseAcquireAttempted) -> None:
        if len(self._attempts) < MAX_ACQUIRE_ATTEMPTS:
            self._attempts.append(event)

    def acquired(self, point: LeaseAcquired) -> SpanRecord:
        """The acquisition's span: a child of start-up if it has a parent, else a root."""
        record = point_span(point, name="lease.acquire", dur_ns=int(point.waited_ms * 1e6))
        if not record.trace_id:  # an untimed point outside any step carries no ids
            record.trace_id, record.span_id = new_trace_id(), new_span_id()
        for attempt in self._attempts:
            record.add_event(attempt.KIND, attempt.ts, event_attributes(attempt))
        self._attempts = []
        self._term = (record.trace_id, record.span_id)
        return record

    def lease_point(self, point: Event) -> SpanRecord:
        """A renewal's, release's or loss's span: the root of its own trace."""
        latency_ms = getattr(point, "latency_ms", 0.0)
        record = point_span(
            point, name=LEASE_TERM_POINTS[type(point)], dur_ns=int(latency_ms * 1e6)
        )
        # Its own trace (see the module docstring); the span id stays the point's (a point
        # outside any step has none: it gets one here).
        if not record.span_id:
            record.span_id = new_span_id()
        record.trace_id = "0" * 16 + record.span_id
        record.parent_id = ""
        record.attributes["pycm.lease.outcome"] = (
            "renewed" if type(point) is LeaseRenewed else point.KIND.rsplit(".", 1)[1]
        )
        record.add_event(point.KIND, point.ts, event_attributes(point))
        if type(point) is LeaseRenewFailed:
            record.error = point.error or point.reason.value
        elif type(point) is LeaseLost:
            record.error = point.reason or "lease lost"
        if self._term is not None:
            record.links.append((*self._term, {"pycm.link": "lease.acquire"}))
        if type(point) in (LeaseReleased, LeaseLost):
            self._term = None
        return record
