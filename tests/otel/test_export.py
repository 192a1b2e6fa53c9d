"""The sink through the SDK's BatchSpanProcessor and OTLP exporters to real receivers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry

from pycm.app.config import TracingConfig
from pycm.otel import start_otel_sink
from pycm.otel.export import RecordBatchProcessor
from pycm.otel.settings import EXPORT_TIMEOUT
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
