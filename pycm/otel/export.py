"""Kept spans to the collector: the SDK's batching, transports and retries; our own encoding.

:class:`RecordBatchProcessor` is the SDK's BatchSpanProcessor (its bounded queue that drops
the oldest, its worker thread, flush and bounded shutdown) fed each kept span already encoded
(:func:`pycm.otel.wire.encode_span`, bytes) through :meth:`~RecordBatchProcessor.on_span`: no
SDK span object is built, and what waits in the queue is one bytes object a span, which the
garbage collector does not track (a queue of span records, each a handful of dicts, lists and
tuples living up to a second, made the collector's older generations grow and their collections
cost more than building the records). Its exporters are the SDK's OTLP exporters for gRPC and
HTTP with one change each — the request is the queued spans joined under the resource and the
scope (:class:`~pycm.otel.wire.RequestEncoder`), not encoded message by message by the SDK — so
the channel, credentials, headers, compression, timeouts, retries and reconnects stay the SDK's.

Given an :class:`~pycm.otel.health.ExportHealth`, the exporters report the outcome of every
export call to it (their SDK log lines held back) and the processor every span it drops.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as _SdkGrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as _SdkHttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from pycm.otel.health import QUEUE_FULL, SHUTDOWN, ExportHealth
from pycm.otel.settings import EXPORT_TIMEOUT, ExportSettings
from pycm.otel.wire import RequestEncoder
from pycm.util.redact import without_userinfo

__all__ = ["RecordBatchProcessor", "RecordProcessor", "build_record_exporter"]

_EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@runtime_checkable
class RecordProcessor(Protocol):
    """A processor that takes spans encoded by :func:`~pycm.otel.wire.encode_span` (the sink
    prefers it to an SDK processor)."""

    def on_span(self, span: bytes) -> None: ...

    def shutdown(self) -> None: ...


class _DropCounts:
    """The SDK batch processor's metrics hook (its ``ProcessorMetricsT``), reporting the spans
    it drops to an :class:`ExportHealth` (the SDK's own hook records to an OTel meter, which
    pycm does not export: its metrics are Prometheus')."""

    def __init__(self, health: ExportHealth) -> None:
        self._health = health

    def register_queue_size(self, get_queue_size: Callable[[], int]) -> None:
        pass  # (the queue's length is read by the processor's own gauge)

    def drop_items(self, count: int, error_type: str = QUEUE_FULL) -> None:
        self._health.dropped(count, error_type)

    def finish_items(self, count: int) -> None:
        pass


class RecordBatchProcessor(BatchSpanProcessor):
    """The SDK's batch processor, queueing encoded spans for an exporter that sends them;
    given ``health``, the spans it drops are reported to it."""

    def __init__(
        self, exporter: SpanExporter, *, health: ExportHealth | None = None, **kwargs: Any
    ) -> None:
        super().__init__(exporter, **kwargs)
        self._health = health
        if health is not None:
            self._batch_processor._metrics = _DropCounts(health)

    def queue_length(self) -> int:
        """Spans waiting in the queue for an export."""
        return len(self._batch_processor._queue)

    def on_span(self, span: bytes) -> None:
        # Every span the sink hands over is of a kept trace: no sampled flag to check.
        self._batch_processor.emit(span)  # type: ignore[arg-type]

    def shutdown_within(self, limit_s: float) -> None:
        """Flush and shut down, giving up after ``limit_s`` seconds: the SDK's own bound (its
        ``shutdown()`` waits 30 s for the worker, and a worker still draining a full queue to a
        stalled collector goes on retrying batch after batch, up to the export timeout each,
        long after the caller gave up). Past the bound the SDK stops the worker exporting and
        shuts the exporter down, which cuts its retry wait and its channel: the worker ends
        within one export call, and what was still queued is dropped (counted as a shutdown's
        loss, as is a batch that fails from then on)."""
        if self._health is not None:
            self._health.closing()
        self._batch_processor.shutdown(timeout_millis=round(limit_s * 1000))
        left = self.queue_length()
        if left and self._health is not None:
            self._health.dropped(left, SHUTDOWN)

    def on_spans(self, spans: list[bytes]) -> None:
        """``on_span`` of each, in order, queued at once: the SDK's ``emit`` checks shutdown,
        the process id (a system call) and a full queue for every span, and takes no list.
        Whenever one of those checks would act (shut down, forked, the queue too full to
        take them all), each span takes ``emit``, so its logging and drop counts are the
        SDK's."""
        processor: Any = self._batch_processor
        queue = processor._queue
        if (
            processor._shutdown
            or processor._pid != os.getpid()
            or len(queue) + len(spans) > processor._max_queue_size
        ):
            for span in spans:
                processor.emit(span)
            return
        queue.extendleft(spans)  # newest at the left, as emit's appendleft leaves them
        awaken = processor._worker_awaken
        if len(queue) >= processor._max_export_batch_size and not awaken.is_set():
            awaken.set()


class _BytesStub:
    """TraceService's stub for requests already encoded (no serializer: bytes go as they are)."""

    def __init__(self, channel: Any) -> None:
        self.Export = channel.unary_unary(
            _EXPORT_METHOD,
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )


class GrpcRecordExporter(_SdkGrpcExporter):
    """The SDK's OTLP/gRPC exporter, sending :mod:`pycm.otel.wire`'s bytes."""

    def __init__(
        self, encoder: RequestEncoder, *, health: ExportHealth | None = None, **kwargs: Any
    ) -> None:
        self._encoder = encoder
        self._health = health
        super().__init__(**kwargs)

    def export(self, spans: Sequence[bytes]) -> SpanExportResult:  # type: ignore[override]
        send = partial(super().export, spans)  # type: ignore[arg-type]
        return send() if self._health is None else self._health.run_export(len(spans), send)

    def _initialize_channel_and_stub(self) -> None:
        # Also the SDK's reconnect path (after UNAVAILABLE): the stub is ours each time.
        self._stub = _BytesStub
        super()._initialize_channel_and_stub()  # type: ignore[no-untyped-call]

    def _translate_data(self, data: Sequence[bytes]) -> bytes:  # type: ignore[override]
        return self._encoder.request(data)


class HttpRecordExporter(_SdkHttpExporter):
    """The SDK's OTLP/HTTP exporter (its client: compression, retries, timeout), sending
    :mod:`pycm.otel.wire`'s bytes."""

    def __init__(
        self, encoder: RequestEncoder, *, health: ExportHealth | None = None, **kwargs: Any
    ) -> None:
        self._encoder = encoder
        self._health = health
        super().__init__(**kwargs)

    def export(self, spans: Sequence[bytes]) -> SpanExportResult:  # type: ignore[override]
        send = partial(self._send, spans)
        return send() if self._health is None else self._health.run_export(len(spans), send)

    def _send(self, spans: Sequence[bytes]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        result = self._client.export(self._encoder.request(spans))
        return SpanExportResult.SUCCESS if result.success else SpanExportResult.FAILURE


def build_record_exporter(
    settings: ExportSettings,
    encoder: RequestEncoder,
    *,
    timeout: float = EXPORT_TIMEOUT,
    health: ExportHealth | None = None,
) -> SpanExporter:
    """The OTLP exporter for ``settings`` (plain text for http://, TLS for https://),
    reporting to ``health`` if given."""
    if settings.protocol == "grpc":
        insecure = urlsplit(settings.endpoint).scheme != "https"
        # gRPC takes no credentials from a URL, and the SDK logs its target on every failed
        # export: userinfo is dropped here, never sent or logged (headers carry credentials).
        endpoint = without_userinfo(settings.endpoint)
        return GrpcRecordExporter(
            encoder, health=health, endpoint=endpoint, insecure=insecure, timeout=timeout
        )
    return HttpRecordExporter(encoder, health=health, endpoint=settings.endpoint, timeout=timeout)
