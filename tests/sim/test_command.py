"""``pycm sim`` as a process: its line, its kubeconfig, its exit statuses."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from kubernetes import client, config

from tests.sim.conftest import start_sim, stop_sim


def _run(args: list[str], tmp: Path, module: str = "pycm.sim") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *module.split(), *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp,
        env={"KUBECONFIG": str(tmp / "none"), "PATH": "/usr/bin:/bin"},
    )


def test_command_serves_and_exits_zero_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "kc" / "config"
    sim = start_sim(["--kubeconfig-out", str(out), "--nodes", "3"], tmp_path)
    assert sim.kubeconfig == out
    assert sim.url.startswith("http://127.0.0.1:")
    kubeconfig = yaml.safe_load(out.read_text())
    assert kubeconfig["contexts"][0]["context"]["namespace"] == "default"
    api = config.new_client_from_config(config_file=str(out))
    try:
        nodes = client.CoreV1Api(api).list_node().items
        assert len(nodes) == 3
    finally:
        api.close()
    assert stop_sim(sim) == 0
    assert sim.proc.stdout is not None


def test_command_exits_zero_on_sigint_with_tls(tmp_path: Path) -> None:
    sim = start_sim(["--tls"], tmp_path)
    assert sim.url.startswith("https://")
    api = config.new_client_from_config(config_file=str(sim.kubeconfig))
    try:
        assert client.CoreV1Api(api).read_namespace("default").status.phase == "Active"
    finally:
        api.close()
    sim.proc.send_signal(signal.SIGINT)
    sim.proc.communicate(timeout=15)
    assert sim.proc.returncode == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["--pod-ready-delay", "5x"], "invalid duration", id="bad-duration"),
        pytest.param(["--nodes", "-1"], "must be at least 0", id="negative-nodes"),
        pytest.param(["--port", "70000"], "invalid port", id="bad-port"),
        pytest.param(["--no-such-flag"], "unrecognized arguments", id="unknown-flag"),
    ],
)
def test_command_bad_flag_exits_two_with_a_message(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    result = _run(args, tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_command_port_in_use_exits_one_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run(["--port", str(port)], tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"pycm sim: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_command_unreadable_token_file_exits_one(tmp_path: Path) -> None:
    result = _run(["--token-auth-file", str(tmp_path / "missing.csv")], tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "cannot read token file" in lines[0]


def test_command_is_a_pycm_subcommand(tmp_path: Path) -> None:
    # The `pycm` CLI imports every subcommand; until the trace command lands it cannot load.
    pytest.importorskip("pycm.trace.command", reason="pycm.trace.command has not landed yet")
    sim = start_sim([], tmp_path, module="pycm sim")
    assert stop_sim(sim) == 0
    result = _run(["sim", "--watch-window", "0"], tmp_path, module="pycm")
    assert result.returncode == 2 and "must be at least 1" in result.stderr


def test_command_sigterm_ends_open_watches_and_exits_zero(tmp_path: Path) -> None:
    sim = start_sim([], tmp_path)
    token = yaml.safe_load(sim.kubeconfig.read_text())["users"][0]["user"]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=sim.url, headers=headers, timeout=10) as c,
        c.stream("GET", "/api/v1/namespaces?watch=1") as response,
    ):
        lines = response.iter_lines()
        assert json.loads(next(lines))["type"] == "ADDED"
        sim.proc.send_signal(signal.SIGTERM)
        rest = [line for line in lines if line]  # the stream ends instead of hanging
    assert len(rest) <= 3  # at most the other three namespaces, then EOF
    sim.proc.communicate(timeout=15)
    assert sim.proc.returncode == 0
