"""Prometheus metrics of work queues, with client-go's names and its label ``name``.

:class:`QueueMetrics` registers the ``workqueue_*`` families once on a registry; each queue given
it binds a :class:`QueueRecorder` for its own name. The in-flight gauges
(``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds``) are
computed when scraped, from the queue's processing start times and its clock — no periodic task
(client-go updates them every 500 ms instead).

``workqueue_depth`` keeps client-go's meaning: the items waiting to be handed out, including one
re-added while it is being processed (it is waiting for that processing to end). That can exceed
``Queue.len()``, which counts only items a worker could take now.

``workqueue_depth`` also has controller-runtime's ``priority`` label (since 0.20): a priority
queue (pycm.workqueue.priority_queue) has one series per priority its items waited with, read at
scrape time from the queue's counts (:class:`PriorityQueueRecorder`); a plain queue's one series
has ``priority=""``, which Prometheus stores as no label at all, so a plain queue's series is
client-go's (and KCM's). A queue shows at most :data:`MAX_PRIORITY_LABELS` priorities; the
depth of any further ones is summed under ``priority="other"`` (controller-runtime caps the
label the same way, kubernetes-sigs/controller-runtime#3419).

Two queues with the same name on one registry share their counters; the in-flight gauges follow
the queue bound last.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pycm.util.clock import Clock

__all__ = [
    "MAX_PRIORITY_LABELS",
    "PriorityQueueRecorder",
    "QueueMetrics",
    "QueueRecorder",
    "default_queue_metrics",
]

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10) — 10 ns up to 10 s.
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(10))

# Distinct priorities one queue labels its depth with; more would grow the series without bound
# (a controller that uses ever-growing priorities), so the rest share one series.
MAX_PRIORITY_LABELS = 25
OTHER_PRIORITIES = "other"


class QueueMetrics:
    """The ``workqueue_*`` metric families on one registry (``prometheus_client.REGISTRY`` by
    default; use :func:`default_queue_metrics` for that one, as a registry refuses a family
    twice)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        labels = ["name"]
        self.registry = registry
        self.depth = Gauge(
            "workqueue_depth",
            "Current depth of workqueue",
            ["name", "priority"],
            registry=registry,
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

    def bind_prioritized(
        self,
        name: str,
        processing: Mapping[Any, int],
        clock: Clock,
        depths: Mapping[int, int],
    ) -> PriorityQueueRecorder:
        """The recorder for priority queue ``name``: as :meth:`bind`, and its depth by
        priority read at scrape time from ``depths`` (priority → items waiting with it)."""
        return PriorityQueueRecorder(self, name, processing, clock, depths)

    def unbind_depth(self, name: str) -> None:
        """Drop the ``priority=""`` depth series of queue ``name`` (a plain queue replaced by a
        priority queue before it ran: its series would stay at 0 for ever)."""
        try:
            self.depth.remove(name, "")
        except KeyError:
            pass


class QueueRecorder:
    """One queue's labelled children; the queue calls it on each state change."""

    __slots__ = ("_adds", "_depth", "_latency", "_retries", "_work")

    _depth: Any  # the plain queue's one depth series (None for a priority queue)

    def __init__(
        self,
        metrics: QueueMetrics,
        name: str,
        processing: Mapping[Any, int],
        clock: Clock,
    ) -> None:
        self._depth = self._plain_depth(metrics, name)
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

    def _plain_depth(self, metrics: QueueMetrics, name: str) -> Any:
        depth = metrics.depth.labels(name=name, priority="")
        depth.set(0)
        return depth

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


class PriorityQueueRecorder(QueueRecorder):
    """A priority queue's recorder: its depth is one series per priority, each read at scrape
    time from the queue's counts (so adds and gets set no gauge); :meth:`priority_seen`
    creates a priority's series the first time the queue holds an item with it."""

    __slots__ = ("_depths", "_labelled", "_metrics", "_name", "_other")

    def __init__(
        self,
        metrics: QueueMetrics,
        name: str,
        processing: Mapping[Any, int],
        clock: Clock,
        depths: Mapping[int, int],
    ) -> None:
        self._metrics, self._name, self._depths = metrics, name, depths
        # Priorities with a series of their own (at most MAX_PRIORITY_LABELS), and whether the
        # series of the others exists.
        self._labelled: set[int] = set()
        self._other = False
        super().__init__(metrics, name, processing, clock)

    def _plain_depth(self, metrics: QueueMetrics, name: str) -> Any:
        return None

    def priority_seen(self, priority: int) -> None:
        """The queue holds an item of ``priority``: make sure a series shows it."""
        if priority in self._labelled:
            return
        depths = self._depths
        if len(self._labelled) < MAX_PRIORITY_LABELS:
            self._labelled.add(priority)
            self._metrics.depth.labels(name=self._name, priority=str(priority)).set_function(
                lambda: depths.get(priority, 0)
            )
        elif not self._other:
            self._other = True
            labelled = self._labelled
            self._metrics.depth.labels(name=self._name, priority=OTHER_PRIORITIES).set_function(
                lambda: sum(n for p, n in list(depths.items()) if p not in labelled)
            )

    def added(self, depth: int) -> None:
        self._adds.inc()

    def taken(self, waited_s: float, depth: int) -> None:
        self._latency.observe(waited_s)


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
