"""The manager's own metrics beside client-go's and controller-runtime's: the process, and
whether each informer has synced.

- ``process_*`` (prometheus_client's process collector: CPU seconds, resident and virtual
  memory, open file descriptors, start time), the names every Prometheus exporter uses.
- ``pycm_informer_synced{resource}``: 1 when the informer for ``resource`` (``pods``,
  ``deployments.apps``) has synced its cache, else 0. Read at scrape time from both informer
  factories of the running controllers (the leader's; a standby has none), so it is never stale;
  a resource with a full and a metadata-only informer is synced when both are.
  KCM has no such metric; its readiness check "informer-sync" says the same to a probe.
- ``informer_store_resource_version{name,group,version,resource}``: client-go's (1.36): the 15
  least significant digits of the resource version each informer's store has got to (what
  the staleness guard compares its writes with; compare with the API server's to see how far
  behind a cache is). ``name`` is ``shared`` or ``metadata`` (the factory). Read at scrape
  time, like the above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pycm.cache.factory import resource_name

__all__ = ["InformerStoreVersionCollector", "InformerSyncedCollector", "register_manager_metrics"]


class _Synced(Protocol):
    def has_synced(self) -> bool: ...


_RV_DIGITS = 15  # client-go keeps the 15 least significant digits (a float64 holds them exactly)


Informers = Callable[[], Iterable[tuple[Any, _Synced]]]
"""``informers()``: (resource, informer) pairs; a resource may come more than once."""


class InformerSyncedCollector(Collector):
    """``pycm_informer_synced`` from ``informers()``, at each scrape: one series per resource,
    1 when every informer of it has synced."""

    def __init__(self, informers: Informers) -> None:
        self._informers = informers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "pycm_informer_synced",
            "1 when the informer for the resource has synced its cache (only the leader runs "
            "informers), else 0.",
            labels=["resource"],
        )
        synced: dict[str, bool] = {}
        for resource, informer in self._informers():
            name = resource_name(resource)
            synced[name] = synced.get(name, True) and informer.has_synced()
        for name in sorted(synced):
            family.add_metric([name], 1.0 if synced[name] else 0.0)
        yield family


class InformerStoreVersionCollector(Collector):
    """``informer_store_resource_version`` from ``informers()``, at each scrape."""

    def __init__(self, informers: Informers) -> None:
        self._informers = informers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "informer_store_resource_version",
            "The 15 least significant digits of the resource version of the store.",
            labels=["name", "group", "version", "resource"],
        )
        for resource, informer in self._informers():
            rv = str(getattr(informer, "store_resource_version", "") or "")
            if not rv.isdigit():
                continue  # none yet, or a server's opaque version: nothing to plot
            name = "metadata" if getattr(informer, "metadata_only", False) else "shared"
            labels = [
                name,
                str(getattr(resource, "group", "")),
                str(getattr(resource, "version", "")),
                str(getattr(resource, "resource", resource)),
            ]
            family.add_metric(labels, float(int(rv[-_RV_DIGITS:])))
        yield family


def register_manager_metrics(registry: CollectorRegistry, informers: Informers) -> None:
    ProcessCollector(registry=registry)
    registry.register(InformerSyncedCollector(informers))
    registry.register(InformerStoreVersionCollector(informers))
