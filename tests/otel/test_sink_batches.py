"""The sink decides a batch the same whichever way it is drained: whole, split anywhere, or an
event at a time (the inline paths for begin/end pairs against the event-by-event one)."""

from __future__ import annotations

import contextvars
import random
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from pycm.otel.metrics import SinkMetrics
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import OtelSink
from pycm.trace.bus import Bus
from pycm.trace.events import Event, Outcome
from pycm.trace.kinds import ReconcileResult, ReconcileStarted
from pycm.util.clock import FakeClock
from tests.otel.scripts import api_call, reconcile


class _Records:
    """A processor taking encoded spans (the sink's own pipeline), keeping them in order."""

    def __init__(self) -> None:
        self.spans: list[bytes] = []

    def on_span(self, span: bytes) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        pass


def _events() -> list[Event]:
    """A resync-shaped stream with everything that breaks its pattern somewhere in it."""
    clock = FakeClock()
    bus = Bus(instance="r", clock=clock)
    sub = bus.subscribe(name="t", maxsize=10_000)
    rng = random.Random(7)
    for i in range(300):
        roll = rng.random()
        name = f"d{i}"
        if roll < 0.04:
            reconcile(bus, clock, name=name, calls=0, fail="boom")
        elif roll < 0.08:
            reconcile(bus, clock, name=name, calls=0, seconds=2.0)  # slow
        elif roll < 0.12:
            reconcile(bus, clock, name=name, calls=1)  # a child between begin and end
        elif roll < 0.14:
            bus.point(ReconcileStarted(controller="x"))  # a stray point of a step's kind
        elif roll < 0.16:
            api_call(bus, clock)  # a request outside any step
        elif roll < 0.17:
            with bus.step(ReconcileStarted(controller="deployment", key=name)) as step:
                step.finish(result=ReconcileResult.SUCCESS, outcome=Outcome.CANCELLED)
        elif roll < 0.18:
            # A reconcile inside another: a child step, then the outer one's end.
            with bus.step(ReconcileStarted(controller="outer", key=name)):
                reconcile(bus, clock, name=name, calls=0)
        else:
            reconcile(bus, clock, name=name, calls=0, trigger=("ab" * 16, "cd" * 8))
    # A reconcile still open at the end of the stream (its own context).
    contextvars.copy_context().run(
        lambda: bus.step(ReconcileStarted(controller="deployment", key="default/open")).__enter__()
    )
    return sub.drain()


def _sink(processor: Any, registry: CollectorRegistry) -> OtelSink:
    return OtelSink(
        processor,
        resource=build_resource("r", {}, version="9.9.9"),
        sampler=TailSampler(0.5, 1.0),
        metrics=SinkMetrics(registry),
    )


def _outcome(batches: list[list[Event]], records: bool) -> tuple[Any, ...]:
    registry = CollectorRegistry()
    processor: Any = _Records() if records else SimpleSpanProcessor(InMemorySpanExporter())
    sink = _sink(processor, registry)
    for batch in batches:
        sink.handle_batch(batch)
    if records:
        exported: Any = processor.spans
    else:
        exported = [
            (
                s.name,
                s.context.trace_id,
                s.context.span_id,
                dict(s.attributes or {}),
                [
                    (ln.context.trace_id, ln.context.span_id, dict(ln.attributes or {}))
                    for ln in s.links
                ],
                s.status.status_code,
            )
            for s in processor.span_exporter.get_finished_spans()
            if s.context is not None
        ]
    samples = sorted(
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    )
    sink._memory.settle()  # the dropped ids into the decisions, as a lookup would
    return exported, samples, sink._memory.decided, list(sink._open), sink._tally.since_report


def _splits(events: list[Event], seed: int) -> list[list[Event]]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(events):
        n = rng.randint(1, 9)
        out.append(events[i : i + n])
        i += n
    return out


@pytest.mark.parametrize("records", [True, False], ids=["records", "sdk-spans"])
def test_sink_batches_are_decided_alike_however_they_are_drained(records: bool) -> None:
    events = _events()
    one_by_one = _outcome([[e] for e in events], records)
    exported, _, decided, still_open, _ = one_by_one
    assert len(exported) > 100 and decided and still_open  # the stream has what it should
    assert _outcome([events], records) == one_by_one
    assert _outcome([events[1:], events[:1]][::-1], records) == one_by_one  # misaligned
    for seed in range(3):
        assert _outcome(_splits(events, seed), records) == one_by_one
