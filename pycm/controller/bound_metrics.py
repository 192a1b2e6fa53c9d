"""One controller's children of the :class:`~pycm.controller.metrics.ControllerMetrics`
families, looked up once: a ``labels()`` call is a lock and a dict lookup per metric, and every
reconcile touches three of them (the worker, pycm.controller.worker; the outcome handling,
pycm.controller.outcomes)."""

from __future__ import annotations

from typing import Any

from pycm.controller.metrics import ControllerMetrics
from pycm.trace.kinds import ReconcileResult

__all__ = ["BoundMetrics"]


class BoundMetrics:
    """The children of controller ``name``; those by outcome and by drop reason on first use."""

    __slots__ = (
        "_by_outcome",
        "_dropped",
        "_families",
        "_name",
        "active_workers",
        "reconcile_errors_total",
        "reconcile_time_seconds",
        "terminal_errors_total",
    )

    def __init__(self, metrics: ControllerMetrics, name: str) -> None:
        self._families, self._name = metrics, name
        self.active_workers = metrics.active_workers.labels(name)
        self.reconcile_time_seconds = metrics.reconcile_time_seconds.labels(name)
        self.reconcile_errors_total = metrics.reconcile_errors_total.labels(name)
        self.terminal_errors_total = metrics.terminal_errors_total.labels(name)
        self._by_outcome: dict[ReconcileResult, Any] = {}
        self._dropped: dict[str, Any] = {}

    def dropped(self, reason: str) -> Any:
        child = self._dropped.get(reason)
        if child is None:
            child = self._dropped[reason] = self._families.dropped_keys_total.labels(
                self._name, reason
            )
        return child

    def reconcile_total(self, outcome: ReconcileResult) -> Any:
        child = self._by_outcome.get(outcome)
        if child is None:
            child = self._by_outcome[outcome] = self._families.reconcile_total.labels(
                self._name, outcome.value
            )
        return child
