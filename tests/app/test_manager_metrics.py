"""The manager's own metrics: process_* and pycm_informer_synced, read at scrape time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from pycm.app.manager_metrics import register_manager_metrics
from pycm.kube.resources import DEPLOYMENTS, PODS


@dataclass
class _Informer:
    synced: bool

    def has_synced(self) -> bool:
        return self.synced


def test_informer_synced_follows_the_informers_at_each_scrape() -> None:
    informers: dict[Any, _Informer] = {}
    registry = CollectorRegistry()
    register_manager_metrics(registry, lambda: informers.items())
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "pods"}) is None
    informers[PODS] = _Informer(False)
    informers[DEPLOYMENTS] = _Informer(True)
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "pods"}) == 0
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "deployments.apps"}) == 1
    informers[PODS].synced = True
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "pods"}) == 1


def test_informer_synced_resource_twice_one_series_synced_when_both_are() -> None:
    # A resource watched in full and metadata-only: one series, not a duplicate sample.
    full, metadata = _Informer(True), _Informer(False)
    registry = CollectorRegistry()
    register_manager_metrics(registry, lambda: [(PODS, full), (PODS, metadata)])
    text = generate_latest(registry).decode()
    assert text.count("pycm_informer_synced{") == 1
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "pods"}) == 0
    metadata.synced = True
    assert registry.get_sample_value("pycm_informer_synced", {"resource": "pods"}) == 1


def test_process_metrics_are_exported() -> None:
    registry = CollectorRegistry()
    register_manager_metrics(registry, list)
    text = generate_latest(registry).decode()
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes"):
        assert f"\n{name} " in text
    assert (registry.get_sample_value("process_resident_memory_bytes") or 0) > 0
