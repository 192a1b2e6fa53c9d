"""The sink's Prometheus metrics, on an injectable registry (the manager's /metrics one)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

__all__ = ["SinkMetrics"]


class SinkMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.spans_exported = Counter(
            "pycm_otel_spans_exported_total",
            "Spans handed to the OTLP exporter's batch queue.",
            registry=registry,
        )
        self.spans_sent = Counter(
            "pycm_otel_spans_sent_total",
            "Spans the collector accepted (in an export call that succeeded).",
            registry=registry,
        )
        self.traces_exported = Counter(
            "pycm_otel_traces_exported_total",
            "Traces whose root was exported, by why it was kept (error, slow, sampled, always; "
            "cause: sampled out, then linked to by a kept reconcile within the cause window).",
            ["reason"],
            registry=registry,
        )
        self.traces_dropped = Counter(
            "pycm_otel_traces_dropped_total",
            "Traces not exported: sampled_out by tail sampling (a reconcile that wrote: when "
            "the cause window passed with no kept reconcile linking to it), or evicted from "
            "the bounded buffer before their root ended.",
            ["reason"],
            registry=registry,
        )
        self.spans_dropped = Counter(
            "pycm_otel_spans_dropped_total",
            "Spans not exported, by reason: not kept (sampled_out, evicted, trace_full, "
            "unmatched, outside_step), or kept and lost on the way (export_failed: the "
            "exporter gave up; queue_full: the batch queue dropped its oldest; shutdown: "
            "still queued at stop).",
            ["reason"],
            registry=registry,
        )
        self.events_lost = Counter(
            "pycm_otel_bus_events_lost_total",
            "Trace events the sink's bus subscription lost because it fell behind.",
            registry=registry,
        )
        self.export_queue = Gauge(
            "pycm_otel_export_queue_spans",
            "Kept spans waiting in the batch queue for an export.",
            registry=registry,
        )
        self.pending_traces = Gauge(
            "pycm_otel_pending_traces",
            "Traces buffered until their root span ends.",
            registry=registry,
        )
        self.held_traces = Gauge(
            "pycm_otel_held_traces",
            "Sampled-out reconcile traces held for the cause window, in case a kept reconcile "
            "links to them.",
            registry=registry,
        )
