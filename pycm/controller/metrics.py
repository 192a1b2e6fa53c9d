"""controller-runtime's reconcile metrics, so existing dashboards work unchanged.

:class:`ControllerMetrics` also carries the ``workqueue_*`` families of the same registry
(``queue``): a controller given these metrics builds its queue with them, so a manager's
``/metrics`` shows each controller's queue under the controller's name.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pycm.workqueue.metrics import QueueMetrics, default_queue_metrics

__all__ = ["ControllerMetrics"]

# controller-runtime's buckets for reconcile time (seconds).
_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        # A registry refuses a family twice: the default one shares its queue families.
        self.queue: QueueMetrics = (
            default_queue_metrics() if registry is REGISTRY else QueueMetrics(registry)
        )
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.reconcile_errors_total = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.terminal_errors_total = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        # pycm's own: controller-runtime never gives a key up, KCM's controllers do (after 15
        # retries); a dropped key waits for its object to change, so it is worth an alert.
        self.dropped_keys_total = Counter(
            "pycm_controller_dropped_keys_total",
            "Keys given up on per controller, by reason (max retries, terminal error)",
            ["controller", "reason"],
            registry=registry,
        )
        self.reconcile_time_seconds = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=registry,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=registry,
        )
