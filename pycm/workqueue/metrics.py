"""Prometheus metrics of work queues, with client-go's names and its one label, ``name``.

:class:`QueueMetrics` registers the ``workqueue_*`` families once on a registry; each queue given
it binds a :class:`QueueRecorder` for its own name. The in-flight gauges
(``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds``) are
computed when scraped, from the queue's processing start times and its clock — no periodic task
(client-go updates them every 500 ms instead).

``workqueue_depth`` keeps client-go's meaning: the items waiting to be handed out, including one
re-added while it is being processed (it is waiting for that processing to end). That can exceed
``Queue.len()``, which counts only items a worker could take now.

Two queues with the same name on one registry share their counters; the in-flight gauges follow
the queue bound last.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pycm.util.clock import Clock

__all__ = ["QueueMetrics", "QueueRecorder", "default_queue_metrics"]

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10) — 10 ns up to 10 s.
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(10))


class QueueMetrics:
    """The ``workqueue_*`` metric families on one registry (``prometheus_client.REGISTRY`` by
    default; use :func:`default_queue_metrics` for that one, as a registry refuses a family
    twice)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        labels = ["name"]
        self.registry = registry
        self.depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", labels, registry=registry
        )
        self.adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            labels,
            registry=registry,
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of "
            "stuck threads by observing the rate at which this increases.",
            labels,
            registry=registry,
        )
        self.longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            registry=registry,
        )
        self.retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            labels,
            registry=registry,
        )

    def bind(self, name: str, processing: Mapping[Any, int], clock: Clock) -> QueueRecorder:
        """The recorder for queue ``name``. ``processing`` maps each in-flight item to the
        ``clock.monotonic_ns()`` at which it was taken; it is read at scrape time."""
        return QueueRecorder(self, name, processing, clock)


class QueueRecorder:
    """One queue's labelled children; the queue calls it on each state change."""

    __slots__ = ("_adds", "_depth", "_latency", "_retries", "_work")

    def __init__(
        self,
        metrics: QueueMetrics,
        name: str,
        processing: Mapping[Any, int],
        clock: Clock,
    ) -> None:
        self._depth = metrics.depth.labels(name=name)
        self._adds = metrics.adds.labels(name=name)
        self._latency = metrics.queue_latency.labels(name=name)
        self._work = metrics.work_duration.labels(name=name)
        self._retries = metrics.retries.labels(name=name)
        metrics.unfinished_work.labels(name=name).set_function(
            functools.partial(_unfinished_seconds, processing, clock)
        )
        metrics.longest_running.labels(name=name).set_function(
            functools.partial(_longest_seconds, processing, clock)
        )
        self._depth.set(0)

    def added(self, depth: int) -> None:
        """An add that was not de-duplicated; ``depth`` is the new waiting count."""
        self._adds.inc()
        self._depth.set(depth)

    def taken(self, waited_s: float, depth: int) -> None:
        self._latency.observe(waited_s)
        self._depth.set(depth)

    def done(self, worked_s: float) -> None:
        self._work.observe(worked_s)

    def retried(self) -> None:
        self._retries.inc()


def _unfinished_seconds(processing: Mapping[Any, int], clock: Clock) -> float:
    if not processing:
        return 0.0
    now = clock.monotonic_ns()
    return sum(now - started for started in processing.values()) / 1e9


def _longest_seconds(processing: Mapping[Any, int], clock: Clock) -> float:
    if not processing:
        return 0.0
    return (clock.monotonic_ns() - min(processing.values())) / 1e9


@functools.cache
def default_queue_metrics() -> QueueMetrics:
    """The process's ``workqueue_*`` families on ``prometheus_client.REGISTRY`` (made once)."""
    return QueueMetrics(REGISTRY)
