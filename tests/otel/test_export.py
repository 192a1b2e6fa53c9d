"""The sink through the SDK's BatchSpanProcessor and OTLP exporters to real receivers."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry

from pycm.app.config import TracingConfig
from pycm.otel import MAX_QUEUE_SIZE, start_otel_sink
from pycm.otel.export import RecordBatchProcessor, build_record_exporter
from pycm.otel.health import ExportHealth
from pycm.otel.metrics import SinkMetrics
from pycm.otel.settings import EXPORT_TIMEOUT, ExportSettings
from pycm.otel.spans import SpanRecord
from pycm.otel.wire import RequestEncoder, encode_span
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from tests.otel.receivers import Receiver, otlp_grpc_receiver, otlp_http_receiver
from tests.otel.scripts import reconcile

RECEIVERS = [
    pytest.param(otlp_grpc_receiver, "grpc", id="grpc"),
    pytest.param(otlp_http_receiver, "http/protobuf", id="http"),
]
Peer = Callable[..., AbstractAsyncContextManager[Receiver]]


def test_start_otel_sink_without_an_endpoint_is_none() -> None:
    bus = Bus()
    assert start_otel_sink(bus, TracingConfig(), "me", CollectorRegistry(), env={}) is None
    assert bus.subscribers == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(("peer", "protocol"), RECEIVERS)
async def test_export_reaches_the_receiver_with_ids_and_resource(peer: Peer, protocol: str) -> None:
    clock = FakeClock()
    bus = Bus(instance="replica-1", clock=clock)
    async with peer() as receiver:
        config = TracingConfig(
            otlp_endpoint=receiver.endpoint, otlp_protocol=protocol, sample_ratio=0.0
        )
        env = {
            "POD_NAME": "pycm-0",
            "POD_NAMESPACE": "kube-system",
            "NODE_NAME": "node-a",
            "K8S_CLUSTER_NAME": "lab",
            # A flag endpoint wins over the env's.
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        }
        handle = start_otel_sink(bus, config, "replica-1", CollectorRegistry(), env=env)
        assert handle is not None
        task = asyncio.create_task(handle.run(), name="otel sink")
        trace_id, span_id = reconcile(bus, clock, fail="boom")
        reconcile(bus, clock)  # sampled out at ratio 0
        spans = await receiver.wait_for(lambda s: len(s) >= 3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(spans) == 3
    root = next(s for s in spans if not s.span.parent_span_id)
    assert (root.trace_id, root.span_id) == (trace_id, span_id)
    assert root.span.name == "reconcile deployment"
    assert {s.parent_id for s in spans if s is not root} == {span_id}
    assert root.resource["service.name"] == "pycm"
    assert root.resource["service.instance.id"] == "replica-1"
    assert root.resource["service.version"]
    assert root.resource["k8s.pod.name"] == "pycm-0"
    assert root.resource["k8s.namespace.name"] == "kube-system"
    assert root.resource["k8s.node.name"] == "node-a"
    assert root.resource["k8s.cluster.name"] == "lab"


@pytest.mark.asyncio
async def test_export_service_name_and_attributes_from_the_env() -> None:
    clock = FakeClock()
    bus = Bus(instance="r", clock=clock)
    async with otlp_http_receiver() as receiver:
        # The endpoint and protocol from the standard variables (no flags given).
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": "kcm-lab",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,service.name=ignored",
        }
        handle = start_otel_sink(bus, TracingConfig(), "r", CollectorRegistry(), env=env)
        assert handle is not None
        task = asyncio.create_task(handle.run(), name="otel sink")
        reconcile(bus, clock, fail="boom")
        spans = await receiver.wait_for(lambda s: len(s) >= 3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert spans[0].resource["service.name"] == "kcm-lab"
    assert spans[0].resource["deployment.environment"] == "test"


@pytest.mark.asyncio
@pytest.mark.parametrize(("peer", "protocol"), RECEIVERS)
async def test_export_to_a_stalled_receiver_never_blocks_the_loop(
    peer: Peer, protocol: str
) -> None:
    clock = FakeClock()
    bus = Bus(instance="r", clock=clock)
    registry = CollectorRegistry()
    async with peer(stall=True) as receiver:
        config = TracingConfig(
            otlp_endpoint=receiver.endpoint, otlp_protocol=protocol, sample_ratio=1.0
        )
        handle = start_otel_sink(bus, config, "r", registry)
        assert handle is not None
        processor: Any = handle.sink.processor
        real_on_span = processor.on_span
        slowest = 0.0
        handed = 0

        def timed_on_span(span: bytes) -> None:
            nonlocal slowest, handed
            start = time.perf_counter()
            real_on_span(span)
            slowest = max(slowest, time.perf_counter() - start)
            handed += 1

        processor.on_span = timed_on_span
        task = asyncio.create_task(handle.run(), name="otel sink")
        try:
            for _ in range(20):
                for _ in range(500):
                    reconcile(bus, clock, calls=1)
                await asyncio.sleep(0)
            while bus.subscribers and handle.subscription.pending:
                await asyncio.sleep(0)
            # Every kept span went to the processor's bounded queue (full: it drops the
            # oldest); the loop never waited on the network, where one export call waits up to
            # the 5 s export timeout.
            assert registry.get_sample_value("pycm_otel_spans_exported_total") == 20_000
            assert handed == 20_000  # each through the timed hand-off
            assert slowest < 0.25
            # ... and what became of them is on /metrics: the queue is full, what it dropped is
            # counted, and the rest is the batch the stalled export holds (if it gave up
            # meanwhile, a failed one).
            queued = registry.get_sample_value("pycm_otel_export_queue_spans")
            full = registry.get_sample_value(
                "pycm_otel_spans_dropped_total", {"reason": "queue_full"}
            )
            failed = registry.get_sample_value(
                "pycm_otel_spans_dropped_total", {"reason": "export_failed"}
            )
            assert queued == MAX_QUEUE_SIZE
            assert full is not None and full > 0
            assert failed is not None
            assert 0 <= 20_000 - queued - full - failed <= 512
        finally:
            task.cancel()
            before = time.perf_counter()
            with pytest.raises(asyncio.CancelledError):
                await task
        # Shutdown is bounded (SHUTDOWN_TIMEOUT = 3 s) even though the peer never answers.
        assert time.perf_counter() - before < 4.5
        assert receiver.spans() == []  # nothing got through while it stalled
        # ... and so is the exporter's worker: past the bound it drops what is queued and stops
        # (it used to go on retrying batch after batch, a minute in the background).
        worker = processor._batch_processor._worker_thread
        await asyncio.to_thread(worker.join, EXPORT_TIMEOUT + 2)
        assert not worker.is_alive()


class _Recording(SpanExporter):
    def __init__(self) -> None:
        self.batches: list[list[bytes]] = []

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        self.batches.append(list(spans))
        return SpanExportResult.SUCCESS


def test_record_processor_takes_several_spans_in_order() -> None:
    exporter = _Recording()
    processor = RecordBatchProcessor(exporter, schedule_delay_millis=60_000)
    processor.on_span(b"a")
    processor.on_spans([b"b", b"c"])
    processor.on_span(b"d")
    processor.force_flush()
    processor.shutdown()
    assert [span for batch in exporter.batches for span in batch] == [b"a", b"b", b"c", b"d"]


def test_record_processor_spans_past_a_full_queue_take_the_sdks_emit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK's own path (its warning and drop count for each span it drops)."""
    processor = RecordBatchProcessor(
        _Recording(), max_queue_size=2, max_export_batch_size=2, schedule_delay_millis=60_000
    )
    emitted: list[bytes] = []
    monkeypatch.setattr(processor._batch_processor, "emit", emitted.append)
    processor.on_spans([b"a", b"b", b"c"])
    assert emitted == [b"a", b"b", b"c"]
    processor.shutdown()


def _closed_port_endpoint() -> str:
    """An endpoint on 127.0.0.1 where nothing listens (a port just given up)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _pipeline(
    endpoint: str, protocol: str, registry: CollectorRegistry, **processor: Any
) -> RecordBatchProcessor:
    """The sink's export pipeline as start_otel_sink builds it, with a 1 s export timeout."""
    metrics = SinkMetrics(registry)
    health = ExportHealth(
        endpoint, spans_sent=metrics.spans_sent, spans_dropped=metrics.spans_dropped
    )
    if protocol == "http/protobuf":
        endpoint += "/v1/traces"
    exporter = build_record_exporter(
        ExportSettings(endpoint, protocol, "flag"),
        RequestEncoder({"service.name": "pycm"}, "pycm.otel", "0"),
        timeout=1.0,
        health=health,
    )
    return RecordBatchProcessor(exporter, health=health, schedule_delay_millis=60_000, **processor)


def _span(i: int) -> bytes:
    return encode_span(
        SpanRecord(
            trace_id=f"{i + 1:032x}",
            span_id=f"{i + 1:016x}",
            parent_id="",
            name="reconcile deployment",
            kind=SpanKind.INTERNAL,
            start_ns=1_700_000_000_000_000_000,
            end_ns=1_700_000_000_010_000_000,
            attributes={"pycm.controller": "deployment"},
        )
    )


def _dropped(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("pycm_otel_spans_dropped_total", {"reason": reason})
    return value or 0.0


@pytest.mark.parametrize(
    "protocol", [pytest.param("grpc", id="grpc"), pytest.param("http/protobuf", id="http")]
)
def test_export_to_an_absent_collector_is_counted_and_said_once(
    protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK logged every retry and every batch it gave up, and nothing on /metrics told a
    lost span from a delivered one."""
    caplog.set_level(logging.DEBUG)
    registry = CollectorRegistry()
    processor = _pipeline(_closed_port_endpoint(), protocol, registry)
    try:
        for round_ in range(3):
            processor.on_spans([_span(round_ * 10 + i) for i in range(4)])
            processor.force_flush()
    finally:
        processor.shutdown()
    assert _dropped(registry, "export_failed") == 12
    assert registry.get_sample_value("pycm_otel_spans_sent_total") == 0
    ours = [r for r in caplog.records if r.name == "pycm.otel"]
    assert [r.levelno for r in ours] == [logging.WARNING]
    assert "failing: " in ours[0].getMessage()
    assert "(4 so far;" in ours[0].getMessage()
    sdk_lines = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("opentelemetry.") and r.levelno >= logging.WARNING
    ]
    assert sdk_lines == []


@pytest.mark.asyncio
@pytest.mark.parametrize(("peer", "protocol"), RECEIVERS)
async def test_export_spans_the_collector_accepted_are_counted_as_sent(
    peer: Peer, protocol: str
) -> None:
    registry = CollectorRegistry()
    async with peer() as receiver:
        processor = _pipeline(receiver.endpoint, protocol, registry)
        processor.on_spans([_span(i) for i in range(5)])
        await asyncio.to_thread(processor.force_flush)
        await asyncio.to_thread(processor.shutdown)
        assert len(receiver.spans()) == 5
    assert registry.get_sample_value("pycm_otel_spans_sent_total") == 5
    assert _dropped(registry, "export_failed") == 0


def test_record_processor_counts_the_spans_its_full_queue_drops() -> None:
    registry = CollectorRegistry()
    processor = _pipeline(
        _closed_port_endpoint(), "grpc", registry, max_queue_size=4, max_export_batch_size=4
    )
    awaken = processor._batch_processor._worker_awaken
    awaken.set = lambda: None  # type: ignore[method-assign]  # the worker sleeps through it all
    try:
        processor.on_spans([_span(i) for i in range(3)])
        processor.on_spans([_span(i) for i in range(3, 10)])
        assert processor.queue_length() == 4
        assert _dropped(registry, "queue_full") == 6
    finally:
        processor.shutdown_within(0.2)
        del awaken.set  # (the worker wakes, finds it shut down, and ends)
        awaken.set()
    # What was still queued when it stopped is the shutdown's loss.
    assert _dropped(registry, "shutdown") == 4
    assert _dropped(registry, "queue_full") == 6
    assert _dropped(registry, "export_failed") == 0
