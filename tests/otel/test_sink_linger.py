"""The sink's task lingers a few loop turns after a wake-up, so that a busy loop's events reach
it in batches (pycm.otel.sink.LINGER_TURNS): fewer, larger batches, nothing lost, a lone event
still handled within the linger, a burst taken at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from pycm.otel.metrics import SinkMetrics
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import LINGER_ENTRIES, LINGER_TURNS, OtelSink
from pycm.trace.bus import Bus, Record, Subscription
from pycm.trace.events import Event
from pycm.trace.kinds import SubscriberLagged
from pycm.util.clock import FakeClock
from tests.otel.scripts import reconcile

_QUEUE = 16_384  # the manager's subscription size (pycm.otel.start_otel_sink)


class _Batches(OtelSink):
    """The sink, keeping the size of every batch its task handed it (and any lag notice)."""

    def __init__(self, exporter: InMemorySpanExporter, registry: CollectorRegistry) -> None:
        super().__init__(
            SimpleSpanProcessor(exporter),
            resource=build_resource("t", {}),
            sampler=TailSampler(1.0, 1.0),  # every trace kept: every reconcile is a span
            metrics=SinkMetrics(registry),
        )
        self.sizes: list[int] = []
        self.lagged = 0

    def handle_batch(self, events: Iterable[Event | Record]) -> None:
        batch = list(events)
        if batch:
            self.sizes.append(len(batch))
        self.lagged += sum(type(e) is SubscriberLagged for e in batch)
        super().handle_batch(batch)


def _sink() -> tuple[Bus, FakeClock, Subscription, _Batches, InMemorySpanExporter]:
    clock = FakeClock()
    bus = Bus(instance="t", clock=clock)
    exporter = InMemorySpanExporter()
    sink = _Batches(exporter, CollectorRegistry())
    return bus, clock, bus.subscribe(name="otel", maxsize=_QUEUE), sink, exporter


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_a_busy_loops_reconciles_reach_the_sink_in_batches_of_several_turns() -> None:
    bus, clock, sub, sink, exporter = _sink()
    task = asyncio.create_task(sink.run(sub), name="otel sink")
    turns = 400
    for i in range(turns):  # a loop busy with one reconcile a turn
        reconcile(bus, clock, name=f"d{i}", calls=0)
        await asyncio.sleep(0)
    while sub.pending:
        await asyncio.sleep(0)
    await _stop(task)
    assert sum(sink.sizes) == 2 * turns and sink.lagged == 0
    assert len(exporter.get_finished_spans()) == turns
    # A batch a turn without the linger (400); with it, one per LINGER_TURNS + 1 turns.
    assert len(sink.sizes) <= turns // LINGER_TURNS + 2
    assert sorted(sink.sizes)[len(sink.sizes) // 2] >= 2 * LINGER_TURNS


@pytest.mark.asyncio
async def test_a_lone_reconcile_is_handled_within_the_linger() -> None:
    bus, clock, sub, sink, exporter = _sink()
    task = asyncio.create_task(sink.run(sub), name="otel sink")
    await asyncio.sleep(0)  # the sink parks
    reconcile(bus, clock, name="lone", calls=0)
    turns = 0
    while not exporter.get_finished_spans():
        turns += 1
        assert turns <= LINGER_TURNS + 2, "the lone reconcile waited past the linger"
        await asyncio.sleep(0)
    assert turns >= LINGER_TURNS  # it did linger (an idle loop's turns cost microseconds)
    await _stop(task)


@pytest.mark.asyncio
async def test_a_burst_is_taken_at_once_and_none_of_it_is_lost() -> None:
    bus, clock, sub, sink, exporter = _sink()
    task = asyncio.create_task(sink.run(sub), name="otel sink")
    await asyncio.sleep(0)
    # Turns that each fill more than LINGER_ENTRIES: lingering the full turns would overrun
    # the queue (6 turns x 3000 entries > 16384); the sink drains as soon as enough wait.
    per_turn = 1_500  # reconciles: 3000 entries
    assert 2 * per_turn > LINGER_ENTRIES and 6 * 2 * per_turn > _QUEUE
    for t in range(6):
        for i in range(per_turn):
            reconcile(bus, clock, name=f"d{t}-{i}", calls=0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    while sub.pending:
        await asyncio.sleep(0)
    await _stop(task)
    assert sink.lagged == 0 and sum(sink.sizes) == 6 * 2 * per_turn
    assert len(exporter.get_finished_spans()) == 6 * per_turn
    assert len(sink.sizes) >= 6  # one batch a burst, not one for all of them


@pytest.mark.asyncio
async def test_cancelling_the_sink_mid_linger_takes_in_what_waits() -> None:
    bus, clock, sub, sink, exporter = _sink()
    task = asyncio.create_task(sink.run(sub), name="otel sink")
    await asyncio.sleep(0)
    for i in range(3):
        reconcile(bus, clock, name=f"d{i}", calls=0)
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # woken, lingering
    assert not exporter.get_finished_spans()
    await _stop(task)
    assert len(exporter.get_finished_spans()) == 3
