"""The manager's own metrics beside client-go's and controller-runtime's: the process, and
whether each informer has synced.

- ``process_*`` (prometheus_client's process collector: CPU seconds, resident and virtual
  memory, open file descriptors, start time), the names every Prometheus exporter uses.
- ``pycm_informer_synced{resource}``: 1 when the informer for ``resource`` (``pods``,
  ``deployments.apps``) has synced its cache, else 0. Read at scrape time from the informer
  factory of the running controllers (the leader's; a standby has none), so it is never stale.
  KCM has no such metric; its readiness check "informer-sync" says the same to a probe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pycm.cache.factory import resource_name

__all__ = ["InformerSyncedCollector", "register_manager_metrics"]


class _Synced(Protocol):
    def has_synced(self) -> bool: ...


class InformerSyncedCollector(Collector):
    """``pycm_informer_synced`` from ``informers()`` (resource → informer), at each scrape."""

    def __init__(self, informers: Callable[[], Mapping[Any, _Synced]]) -> None:
        self._informers = informers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "pycm_informer_synced",
            "1 when the informer for the resource has synced its cache (only the leader runs "
            "informers), else 0.",
            labels=["resource"],
        )
        for resource, informer in sorted(
            self._informers().items(), key=lambda item: resource_name(item[0])
        ):
            family.add_metric([resource_name(resource)], 1.0 if informer.has_synced() else 0.0)
        yield family


def register_manager_metrics(
    registry: CollectorRegistry, informers: Callable[[], Mapping[Any, _Synced]]
) -> None:
    ProcessCollector(registry=registry)
    registry.register(InformerSyncedCollector(informers))
