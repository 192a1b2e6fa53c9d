"""otel-collector.yaml: pipelines reference defined components, limits first, endpoints right."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

CONFIG = Path(__file__).resolve().parents[1] / "otel-collector.yaml"


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    loaded = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _pipelines(config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    pipelines = config["service"]["pipelines"]
    assert isinstance(pipelines, dict)
    assert pipelines
    return pipelines


@pytest.mark.parametrize("section", ["receivers", "processors", "exporters"])
def test_otel_config_pipelines_reference_only_defined_components(
    config: dict[str, Any], section: str
) -> None:
    defined = set(config.get(section) or {})
    for name, pipeline in _pipelines(config).items():
        used = pipeline.get(section, [])
        if section != "processors":
            assert used, f"pipeline {name} has no {section}"
        missing = set(used) - defined
        assert not missing, f"pipeline {name} uses undefined {section}: {sorted(missing)}"


def test_otel_config_extensions_in_service_are_defined(config: dict[str, Any]) -> None:
    assert set(config["service"].get("extensions", [])) <= set(config.get("extensions") or {})


def test_otel_config_memory_limiter_is_first_in_every_pipeline(config: dict[str, Any]) -> None:
    limiter = config["processors"]["memory_limiter"]
    assert {"check_interval", "limit_mib", "spike_limit_mib"} <= set(limiter)
    assert limiter["spike_limit_mib"] < limiter["limit_mib"]
    for name, pipeline in _pipelines(config).items():
        processors = pipeline.get("processors", [])
        if processors:
            assert processors[0] == "memory_limiter", f"pipeline {name}"


def test_otel_config_traces_flow_from_otlp_to_jaeger_and_debug(config: dict[str, Any]) -> None:
    traces = _pipelines(config)["traces"]
    assert traces["receivers"] == ["otlp"]
    assert traces["processors"] == ["memory_limiter"]
    assert traces["exporters"] == ["otlp_grpc/jaeger", "debug"]


def test_otel_config_receiver_endpoints(config: dict[str, Any]) -> None:
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"


def test_otel_config_jaeger_exporter_endpoint_tls_and_queue_batching(
    config: dict[str, Any],
) -> None:
    jaeger = config["exporters"]["otlp_grpc/jaeger"]
    assert jaeger["endpoint"] == "jaeger:4317"
    assert jaeger["tls"]["insecure"] is True
    queue = jaeger["sending_queue"]
    assert queue["enabled"] is True
    assert isinstance(queue["batch"], dict)
    assert queue["batch"]["min_size"] <= queue["batch"]["max_size"] <= queue["queue_size"]
    assert config["exporters"]["debug"]["verbosity"] == "basic"


def test_otel_config_has_no_batch_processor(config: dict[str, Any]) -> None:
    # Batching is the exporter queue's job; a batch processor too would batch twice.
    assert "batch" not in (config.get("processors") or {})
