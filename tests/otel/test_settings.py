"""Export settings from the flags and the OTEL_* env (flags win); the resource; log lines."""

from __future__ import annotations

import io
import logging

import orjson
import pytest

from pycm.app.logs import configure_logging
from pycm.otel.resource import build_resource
from pycm.otel.settings import ExportSettings, resolve_settings
from pycm.trace.bus import Bus
from pycm.trace.kinds import ReconcileStarted


@pytest.mark.parametrize(
    ("endpoint", "protocol", "env", "want"),
    [
        pytest.param("", "grpc", {}, None, id="nothing-configured"),
        pytest.param(
            "http://127.0.0.1:4317",
            "grpc",
            {},
            ExportSettings("http://127.0.0.1:4317", "grpc", "flag"),
            id="flag-grpc",
        ),
        pytest.param(
            "127.0.0.1:4318",
            "http/protobuf",
            {},
            ExportSettings("http://127.0.0.1:4318/v1/traces", "http/protobuf", "flag"),
            id="flag-http-adds-signal-path",
        ),
        pytest.param(
            "http://127.0.0.1:4317",
            "grpc",
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://elsewhere:4317"},
            ExportSettings("http://127.0.0.1:4317", "grpc", "flag"),
            id="flag-wins",
        ),
        pytest.param(
            "",
            "grpc",
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            },
            ExportSettings(
                "http://c:4318/v1/traces", "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT"
            ),
            id="env-base-endpoint-and-protocol",
        ),
        pytest.param(
            "",
            "grpc",
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            },
            ExportSettings(
                "http://c:4318/custom", "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
            ),
            id="env-traces-endpoint-as-is",
        ),
        pytest.param(
            "http://c:4318",
            "http/protobuf",
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            ExportSettings("http://c:4318/v1/traces", "http/protobuf", "flag"),
            id="protocol-flag-wins",
        ),
    ],
)
def test_resolve_settings_table(
    endpoint: str, protocol: str, env: dict[str, str], want: ExportSettings | None
) -> None:
    assert resolve_settings(endpoint, protocol, env) == want


def test_resolve_settings_unknown_env_protocol_is_an_error() -> None:
    with pytest.raises(ValueError, match="http/json"):
        resolve_settings("http://c:4317", "grpc", {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"},
            "OTEL_EXPORTER_OTLP_ENDPOINT 'not a url': not a URL",
            id="spaces",
        ),
        pytest.param(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:"},
            "empty port",
            id="empty-port",
        ),
        pytest.param(
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://u:SECRET@c:21/v1/traces"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT 'ftp://u:xxxxx@c:21/v1/traces': scheme \"ftp\"",
            id="scheme-redacted",
        ),
    ],
)
def test_resolve_settings_malformed_env_endpoint_is_an_error(
    env: dict[str, str], message: str
) -> None:
    # As a malformed --otlp-endpoint is: at start-up, not as export errors ever after.
    with pytest.raises(ValueError) as caught:
        resolve_settings("", "grpc", env)
    assert message in str(caught.value) and "SECRET" not in str(caught.value)


def test_build_resource_defaults_and_downward_api() -> None:
    attrs = dict(build_resource("host_1234", {}, version="1.2.3").attributes)
    assert attrs["service.name"] == "pycm"
    assert attrs["service.version"] == "1.2.3"
    assert attrs["service.instance.id"] == "host_1234"
    assert "k8s.pod.name" not in attrs and "k8s.cluster.name" not in attrs
    env = {
        "POD_NAME": "p",
        "POD_NAMESPACE": "ns",
        "NODE_NAME": "n",
        "K8S_CLUSTER_NAME": "c",
        "OTEL_RESOURCE_ATTRIBUTES": "team=a%20b,service.instance.id=spoofed",
    }
    attrs = dict(build_resource("host_1234", env).attributes)
    assert (attrs["k8s.pod.name"], attrs["k8s.namespace.name"], attrs["k8s.node.name"]) == (
        "p",
        "ns",
        "n",
    )
    assert attrs["k8s.cluster.name"] == "c"
    assert attrs["team"] == "a b"
    assert attrs["service.instance.id"] == "host_1234"


def test_json_log_lines_carry_the_step_trace_context(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("json", 0)
        bus = Bus()
        log = logging.getLogger("pycm.test")
        log.info("outside")
        with bus.step(ReconcileStarted(controller="deployment", key="default/web")) as step:
            log.info("inside")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    outside, inside = (orjson.loads(line) for line in stream.getvalue().splitlines())
    assert "trace_id" not in outside
    assert (inside["trace_id"], inside["span_id"]) == (step.trace_id, step.span_id)
