"""A priority queue's workqueue_depth{priority}, and what the inspector shows of its priorities."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.inspect import WaitingKey, inspect_queue
from pycm.workqueue.metrics import MAX_PRIORITY_LABELS, QueueMetrics
from pycm.workqueue.priority_queue import LOW_PRIORITY, PriorityQueue
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue


def _depth(registry: CollectorRegistry, priority: str, name: str = "pq") -> float | None:
    return registry.get_sample_value("workqueue_depth", {"name": name, "priority": priority})


def _depth_series(registry: CollectorRegistry, name: str = "pq") -> dict[str, float]:
    (family,) = [f for f in registry.collect() if f.name == "workqueue_depth"]
    return {s.labels["priority"]: s.value for s in family.samples if s.labels["name"] == name}


@pytest.mark.asyncio
async def test_priority_queue_depth_metric_is_labelled_by_priority(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    queue = PriorityQueue[str]("pq", clock=clock, bus=bus, metrics=metrics)
    assert _depth_series(registry) == {"0": 0.0}  # the default priority's, from the start
    for key in ("a", "b", "c"):
        queue.add(key, priority=LOW_PRIORITY)
    queue.add("d")
    assert _depth_series(registry) == {"-100": 3.0, "0": 1.0}
    queue.add("b")  # promoted: its count moves to priority 0
    assert _depth_series(registry) == {"-100": 2.0, "0": 2.0}
    assert registry.get_sample_value("workqueue_adds_total", {"name": "pq"}) == 4.0
    assert await queue.get() == "b"  # b keeps its place (added before d)
    assert await queue.get() == "d"
    assert _depth_series(registry) == {"-100": 2.0, "0": 0.0}
    queue.add("b")  # re-added while processing: waiting, counted (client-go's depth)
    assert _depth(registry, "0") == 1.0
    assert queue.len() == 2


@pytest.mark.asyncio
async def test_plain_queue_depth_has_empty_priority_label(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    queue = RateLimitingQueue[str]("plain", clock=clock, bus=bus, metrics=metrics)
    queue.add("a")
    assert _depth_series(registry, "plain") == {"": 1.0}


@pytest.mark.asyncio
async def test_unbind_depth_drops_plain_series(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    RateLimitingQueue[str]("swapped", clock=clock, bus=bus, metrics=metrics)
    metrics.unbind_depth("swapped")
    queue = PriorityQueue[str]("swapped", clock=clock, bus=bus, metrics=metrics)
    queue.add("a")
    assert _depth_series(registry, "swapped") == {"0": 1.0}


@pytest.mark.asyncio
async def test_priority_queue_depth_labels_are_capped(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    queue = PriorityQueue[str]("pq", clock=clock, bus=bus, metrics=metrics)
    for p in range(MAX_PRIORITY_LABELS + 5):
        queue.add(f"k{p}", priority=p)
    series = _depth_series(registry)
    assert len(series) == MAX_PRIORITY_LABELS + 1
    assert series["other"] == 5.0
    assert sum(series.values()) == MAX_PRIORITY_LABELS + 5


@pytest.mark.asyncio
async def test_inspect_priority_queue_shows_priorities_in_hand_out_order(
    clock: FakeClock, bus: Bus
) -> None:
    async with PriorityQueue[str]("pq", clock=clock, bus=bus) as queue:
        queue.add("ns/old", priority=LOW_PRIORITY)
        clock.advance(1.0)
        queue.add("ns/fresh")
        queue.add_after("ns/later", 5.0, priority=LOW_PRIORITY)
        contents = inspect_queue(queue)
    assert contents.waiting == [WaitingKey("ns/fresh", 0.0, 0), WaitingKey("ns/old", 1.0, -100)]
    assert contents.depth_by_priority == {"0": 1, "-100": 1}
    out = contents.to_dict()
    assert out["waiting"][0] == {"key": "ns/fresh", "age_s": 0.0, "priority": 0}
    assert out["backing_off"][0]["priority"] == -100
    assert out["depth_by_priority"] == {"0": 1, "-100": 1}


@pytest.mark.asyncio
async def test_inspect_plain_queue_has_no_priority_fields(clock: FakeClock, bus: Bus) -> None:
    async with RateLimitingQueue[str]("plain", clock=clock, bus=bus) as queue:
        queue.add("ns/a")
        queue.add_after("ns/b", 5.0)
        out = inspect_queue(queue).to_dict()
    assert out["waiting"] == [{"key": "ns/a", "age_s": 0.0}]
    assert "priority" not in out["backing_off"][0]
    assert "depth_by_priority" not in out
