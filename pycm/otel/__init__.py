"""OpenTelemetry for pycm: a sink on the trace bus, not the source of the trace.

:func:`start_otel_sink` returns None when no endpoint is configured (no exporter, no task, no
cost beyond the bus); otherwise an :class:`OtelHandle` whose :meth:`~OtelHandle.run` is the sink
task: it consumes the bus, turns finished steps into spans with the same ids
(:mod:`pycm.otel.sink`, :mod:`pycm.otel.spans`; the common reconcile decided before anything
is built: :mod:`pycm.otel.fastpath`), tail-samples reconcile traces
(:mod:`pycm.otel.sampling`; a kept one's causes with it: :mod:`pycm.otel.causes`) and hands
kept spans, as its own records, to the SDK's batch processor and OTLP exporters with the request
encoded by :mod:`pycm.otel.wire` (:mod:`pycm.otel.export`; where to: :mod:`pycm.otel.settings`).
Cancelling the task flushes and shuts the exporter down, bounded by
:data:`~pycm.otel.shutdown.SHUTDOWN_TIMEOUT`.

Threads: the BatchSpanProcessor encodes and sends from its own worker thread, and the bounded
shutdown runs in a daemon thread. These are the only threads in pycm; they live here because
they are the SDK's. The event loop never waits on the network: a slow or absent collector fills
the processor's bounded queue, which then drops the oldest spans.

``traceparent``: pycm.kube's client sends ``00-<trace>-<span>-<flags>`` inside every step. The
export decision is made at the tail, after the requests were sent, so the flag can only carry
the part known up front: 01 on the traces the ratio keeps (:mod:`pycm.util.sampling`, the same
rule the tail sampler applies), 00 otherwise and always when nothing is exported. A parent-based
apiserver then records the requests of every ratio-kept reconcile and no orphans of dropped
ones; a failed or slow reconcile kept at the tail outside the ratio is exported without the
apiserver's own spans (its CLIENT request spans, made here, are always in it).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry

from pycm.otel.settings import ExportSettings, resolve_settings
from pycm.trace.bus import Bus, Subscription
from pycm.util.redact import redact_url

if TYPE_CHECKING:
    from pycm.otel.export import RecordProcessor
    from pycm.otel.sink import OtelSink, SpanProcessorLike

__all__ = ["OtelHandle", "TracingSettings", "start_otel_sink"]

log = logging.getLogger("pycm.otel")

# The batch processor's queue (spans): with the collector down it fills and drops the oldest.
MAX_QUEUE_SIZE = 8192
SCHEDULE_DELAY_MS = 1000


class TracingSettings(Protocol):
    """What the sink needs of pycm.app's TracingConfig."""

    @property
    def otlp_endpoint(self) -> str: ...
    @property
    def otlp_protocol(self) -> str: ...
    @property
    def sample_ratio(self) -> float: ...
    @property
    def slow_threshold(self) -> float: ...
    @property
    def cause_window(self) -> float: ...


class OtelHandle:
    """The running sink: ``run()`` is the task (spawn it); cancel it to flush and stop."""

    def __init__(self, sink: OtelSink, subscription: Subscription, settings: ExportSettings):
        self.sink = sink
        self.subscription = subscription
        self.settings = settings

    async def run(self) -> None:
        await self.sink.run(self.subscription)


def start_otel_sink(
    bus: Bus,
    tracing: TracingSettings,
    identity: str,
    registry: CollectorRegistry,
    *,
    env: Mapping[str, str] | None = None,
    processor: SpanProcessorLike | RecordProcessor | None = None,
) -> OtelHandle | None:
    """Subscribe the sink to ``bus`` (from the start of its ring) if export is configured.

    Without an endpoint this returns None before the SDK is even imported."""
    environ = os.environ if env is None else env
    settings = resolve_settings(tracing.otlp_endpoint, tracing.otlp_protocol, environ)
    if settings is None:
        return None
    from pycm.otel.metrics import SinkMetrics
    from pycm.otel.resource import build_resource
    from pycm.otel.sampling import TailSampler
    from pycm.otel.sink import OtelSink

    resource = build_resource(identity, environ)
    metrics = SinkMetrics(registry)
    if processor is None:
        from pycm.otel.export import RecordBatchProcessor, build_record_exporter
        from pycm.otel.health import ExportHealth
        from pycm.otel.sink import SCOPE_NAME
        from pycm.otel.wire import RequestEncoder

        # "Queue full, dropping" would be logged once per span while the collector is away;
        # the drops are counted (pycm_otel_spans_dropped_total) and summed up in the health's
        # few lines instead.
        logging.getLogger("opentelemetry.sdk._shared_internal").setLevel(logging.ERROR)
        encoder = RequestEncoder(
            resource.attributes,
            SCOPE_NAME,
            str(resource.attributes.get("service.version", "")),
        )
        health = ExportHealth(
            redact_url(settings.endpoint),
            spans_sent=metrics.spans_sent,
            spans_dropped=metrics.spans_dropped,
        )
        batch = RecordBatchProcessor(
            build_record_exporter(settings, encoder, health=health),
            health=health,
            max_queue_size=MAX_QUEUE_SIZE,
            schedule_delay_millis=SCHEDULE_DELAY_MS,
        )
        metrics.export_queue.set_function(batch.queue_length)
        processor = batch
    sink = OtelSink(
        processor,
        resource=resource,
        sampler=TailSampler(tracing.sample_ratio, tracing.slow_threshold),
        metrics=metrics,
        bus=bus,
        cause_window=tracing.cause_window,
    )
    sub = bus.subscribe(name="otel", maxsize=16384, since=0)
    log.info("exporting spans to %s (%s)", redact_url(settings.endpoint), settings.protocol)
    return OtelHandle(sink, sub, settings)
