"""The ReplicaSet controller's own metrics, KCM's names (pkg/controller/replicaset/metrics)."""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["ReplicaSetMetrics", "replicaset_metrics"]


class ReplicaSetMetrics:
    """``replicaset_controller_stale_sync_skips_total{group,resource}``: syncs skipped because
    the cache of ``resource`` had not caught up with the controller's own writes (the
    staleness guard, :mod:`pycm.controllers.consistency`).
    ``replicaset_controller_sorting_deletion_age_ratio``: for each Ready pod a scale-down chose,
    its age over the youngest Ready pod's (:func:`~pycm.controllers.replicaset.ranking.
    deletion_age_ratios`); KCM's buckets, 0.25 × 2ⁿ."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.stale_sync_skips_total = Counter(
            "replicaset_controller_stale_sync_skips_total",
            "Total number of ReplicaSet syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry,
        )
        self.sorting_deletion_age_ratio = Histogram(
            "replicaset_controller_sorting_deletion_age_ratio",
            "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the "
            "time). Should be <2. The intent of this metric is to measure the rough efficacy of "
            "the LogarithmicScaleDown feature gate's effect on the sorting (and deletion) of pods "
            "when a replicaset scales down. This only considers Ready pods when calculating and "
            "reporting.",
            buckets=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
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
