"""The ReplicaSet controller's own metrics, KCM's names (pkg/controller/replicaset/metrics)."""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter

__all__ = ["ReplicaSetMetrics", "replicaset_metrics"]


class ReplicaSetMetrics:
    """``replicaset_controller_stale_sync_skips_total{group,resource}``: syncs skipped because
    the cache of ``resource`` had not caught up with the controller's own writes (the
    staleness guard, :mod:`pycm.controllers.consistency`)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.stale_sync_skips_total = Counter(
            "replicaset_controller_stale_sync_skips_total",
            "Total number of ReplicaSet syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry,
        )


_ON: weakref.WeakKeyDictionary[CollectorRegistry, ReplicaSetMetrics] = weakref.WeakKeyDictionary()


def replicaset_metrics(registry: CollectorRegistry) -> ReplicaSetMetrics:
    """The families on ``registry``, registered the first time (a registry refuses a family
    twice, and one process may build the controller more than once on one registry)."""
    metrics = _ON.get(registry)
    if metrics is None:
        metrics = _ON[registry] = ReplicaSetMetrics(registry)
    return metrics
