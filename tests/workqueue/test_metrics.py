"""Metrics: exact workqueue_* values on a private registry, driven by a fake clock."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.metrics import QueueMetrics
from pycm.workqueue.queue import Queue
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue
from tests.workqueue.conftest import settle

L = {"name": "m"}


def _v(registry: CollectorRegistry, name: str, **extra: str) -> float | None:
    return registry.get_sample_value(name, {**L, **extra})


@pytest.mark.asyncio
async def test_metrics_count_adds_depth_and_durations(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    queue = Queue[str]("m", clock=clock, bus=bus, metrics=metrics)
    assert _v(registry, "workqueue_depth", priority="") == 0.0
    queue.add("a")
    queue.add("a")  # de-duplicated: not counted
    queue.add("b")
    assert _v(registry, "workqueue_adds_total") == 2.0
    assert _v(registry, "workqueue_depth", priority="") == 2.0
    clock.advance(0.5)
    assert await queue.get() == "a"
    assert _v(registry, "workqueue_depth", priority="") == 1.0
    assert _v(registry, "workqueue_queue_duration_seconds_count") == 1.0
    assert _v(registry, "workqueue_queue_duration_seconds_sum") == 0.5
    assert _v(registry, "workqueue_queue_duration_seconds_bucket", le="0.1") == 0.0
    assert _v(registry, "workqueue_queue_duration_seconds_bucket", le="1.0") == 1.0
    clock.advance(2.0)
    assert _v(registry, "workqueue_unfinished_work_seconds") == 2.0
    assert _v(registry, "workqueue_longest_running_processor_seconds") == 2.0
    assert await queue.get() == "b"
    clock.advance(1.0)
    assert _v(registry, "workqueue_unfinished_work_seconds") == 4.0  # 3 s + 1 s
    assert _v(registry, "workqueue_longest_running_processor_seconds") == 3.0
    queue.add("a")  # while processing: counted, and waiting (client-go depth)
    assert _v(registry, "workqueue_depth", priority="") == 1.0
    assert queue.len() == 0
    queue.done("a")
    queue.done("b")
    assert _v(registry, "workqueue_work_duration_seconds_count") == 2.0
    assert _v(registry, "workqueue_work_duration_seconds_sum") == 4.0
    assert _v(registry, "workqueue_unfinished_work_seconds") == 0.0
    assert _v(registry, "workqueue_longest_running_processor_seconds") == 0.0
    assert _v(registry, "workqueue_adds_total") == 3.0


@pytest.mark.asyncio
async def test_metrics_retries_count_every_add_after(
    clock: FakeClock, bus: Bus, registry: CollectorRegistry, metrics: QueueMetrics
) -> None:
    async with RateLimitingQueue[str]("m", clock=clock, bus=bus, metrics=metrics) as queue:
        queue.add_after("a", 0.0)
        queue.add_after("b", 1.0)
        queue.add_rate_limited("c")
        assert _v(registry, "workqueue_retries_total") == 3.0
        assert _v(registry, "workqueue_adds_total") == 1.0
        clock.advance(1.0)
        await settle()
        assert _v(registry, "workqueue_adds_total") == 3.0


def test_metrics_families_registered_once_per_registry(registry: CollectorRegistry) -> None:
    QueueMetrics(registry)
    with pytest.raises(ValueError):
        QueueMetrics(registry)
