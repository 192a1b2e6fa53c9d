"""The file and URL checks of ``pycm run``'s options: --otlp-endpoint, --trace-file, the
kubeconfig flags (the CLI tests run the real command; these pin the messages and what is
accepted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pycm.app.options import ControllerManagerOptions
from pycm.app.options.checks import kubeconfig_file, otlp_endpoint, writable_file


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("http://localhost:4317", id="http"),
        pytest.param("https://collector.example:443/v1/traces", id="https-path"),
        pytest.param("localhost:4317", id="host-port"),
        pytest.param("http://user:pw@127.0.0.1:4317", id="userinfo"),
        pytest.param("http://[::1]:4317", id="ipv6"),
        pytest.param("https://collector.example/v1/traces", id="no-port"),
    ],
)
def test_otlp_endpoint_accepted(value: str) -> None:
    assert otlp_endpoint("otlp-endpoint", value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("not a url", "not a URL: want http(s)://host:port", id="spaces"),
        pytest.param("ftp://h:21", 'scheme "ftp" is not supported', id="scheme"),
        pytest.param("http://h:99999", "not a URL: Port out of range", id="port-range"),
        pytest.param("http://h:port", "not a URL", id="port-text"),
        pytest.param("http://", "not a URL", id="no-host"),
        # A colon with no port after it: the exporter would dial the scheme's default (443 for
        # gRPC) and fail at every export, not at start-up.
        pytest.param("http://127.0.0.1:", "not a URL: empty port", id="empty-port"),
        pytest.param("collector:", "not a URL: empty port", id="host-colon"),
        pytest.param("http://[::1]:/v1/traces", "not a URL: empty port", id="ipv6-empty-port"),
    ],
)
def test_otlp_endpoint_rejected_with_reason(value: str, message: str) -> None:
    error = otlp_endpoint("otlp-endpoint", value)
    assert error is not None and error.startswith("--otlp-endpoint ") and message in error


def test_otlp_endpoint_error_never_shows_the_password() -> None:
    options = ControllerManagerOptions()
    assert options.parse(["--otlp-endpoint", "ftp://u:SECRET@h:1"]) == []
    errors = options.validate()
    assert errors == [
        '--otlp-endpoint "ftp://u:xxxxx@h:1": scheme "ftp" is not supported: want http or https'
    ]


def test_writable_file_cases(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert writable_file("trace-file", str(tmp_path / "new" / "deeper" / "t.jsonl")) is None
    assert not (tmp_path / "new").exists()  # directories are the writer's to make
    assert writable_file("trace-file", str(tmp_path / "t.jsonl")) is None
    assert (
        writable_file("trace-file", str(tmp_path)) == f'--trace-file "{tmp_path}": is a directory'
    )
    parent_file = writable_file("trace-file", str(tmp_path / "f" / "t.jsonl"))
    assert parent_file == (
        f'--trace-file "{tmp_path}/f/t.jsonl": "{tmp_path}/f" is not a directory'
    )


def test_kubeconfig_file_wrong_shape_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("contexts: {a: 1}\n")
    error = kubeconfig_file("kubeconfig", str(path))
    assert error == (
        f'--kubeconfig "{path}": invalid kubeconfig {path}: contexts must be a list of named '
        "entries"
    )
