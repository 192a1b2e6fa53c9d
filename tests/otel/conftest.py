"""Fixtures for the OpenTelemetry sink: a bus on a fake clock and a sink exporting to memory."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from pycm.otel.metrics import SinkMetrics
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import OtelSink
from pycm.trace.bus import Bus, Subscription
from pycm.util.clock import FakeClock


@dataclass
class Harness:
    bus: Bus
    clock: FakeClock
    sub: Subscription
    sink: OtelSink
    exporter: InMemorySpanExporter
    registry: CollectorRegistry

    def pump(self) -> None:
        """Hand everything emitted so far to the sink (what its task does per wake-up)."""
        self.sink.handle_batch(self.sub.drain())

    def spans(self) -> list[ReadableSpan]:
        self.pump()
        return list(self.exporter.get_finished_spans())

    def metric(self, name: str, **labels: str) -> float:
        value = self.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


def make_harness(ratio: float = 0.0, slow: float = 1.0, **limits: int) -> Harness:
    clock = FakeClock()
    bus = Bus(instance="test-replica", clock=clock)
    exporter = InMemorySpanExporter()
    registry = CollectorRegistry()
    sink = OtelSink(
        SimpleSpanProcessor(exporter),
        resource=build_resource("test-replica", {}, version="9.9.9"),
        sampler=TailSampler(ratio, slow),
        metrics=SinkMetrics(registry),
        bus=bus,
        **limits,  # type: ignore[arg-type]
    )
    sub = bus.subscribe(name="otel", maxsize=100_000, since=0)
    return Harness(bus, clock, sub, sink, exporter, registry)


@pytest.fixture
def harness() -> Harness:
    return make_harness()
