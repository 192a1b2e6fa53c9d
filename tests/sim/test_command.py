"""``pycm sim`` as a process: its line, its kubeconfig, its exit statuses."""

from __future__ import annotations

import argparse
import base64
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from kubernetes import client, config

from pycm.sim import command
from pycm.sim.options import EmulatorOptions
from tests.sim.conftest import pod, start_sim, stop_sim, wait_for


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
    sim = start_sim(
        ["--tls=false", "--kubelet=off", "--kubeconfig-out", str(out), "--nodes", "3"], tmp_path
    )
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
    sim = start_sim(["--tls", "--kubelet=off"], tmp_path)
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
    sim = start_sim(["--tls=false", "--kubelet=off"], tmp_path, module="pycm sim")
    assert stop_sim(sim) == 0
    result = _run(["sim", "--watch-window", "0"], tmp_path, module="pycm")
    assert result.returncode == 2 and "must be at least 1" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--tls=false", "--kubelet=off"], id="plain-http"),
        pytest.param([], id="defaults-tls-and-kubelet"),
    ],
)
def test_command_sigterm_ends_open_watches_and_exits_zero(tmp_path: Path, args: list[str]) -> None:
    sim = start_sim(args, tmp_path)
    kubeconfig = yaml.safe_load(sim.kubeconfig.read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    verify: ssl.SSLContext | bool = True
    ca = kubeconfig["clusters"][0]["cluster"].get("certificate-authority-data")
    if ca is not None:
        verify = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    with (
        httpx.Client(base_url=sim.url, headers=headers, timeout=10, verify=verify) as c,
        c.stream("GET", "/api/v1/namespaces?watch=1") as response,
    ):
        lines = response.iter_lines()
        assert json.loads(next(lines))["type"] == "ADDED"
        sim.proc.send_signal(signal.SIGTERM)
        rest = [line for line in lines if line]  # the stream ends instead of hanging
    assert len(rest) <= 3  # at most the other three namespaces, then EOF
    sim.proc.communicate(timeout=15)
    assert sim.proc.returncode == 0


def _options(*argv: str) -> EmulatorOptions:
    parser = argparse.ArgumentParser(prog="pycm")
    command.add_subcommand(parser.add_subparsers(dest="command"))
    return command.options_from_args(parser.parse_args(["sim", *argv]))


@pytest.mark.parametrize(
    ("argv", "tls", "kubelet"),
    [
        pytest.param([], True, True, id="defaults-like-a-cluster"),
        pytest.param(["--tls=false"], False, True, id="tls-false"),
        pytest.param(["--tls", "false"], False, True, id="tls-false-separate"),
        pytest.param(["--insecure-http"], False, True, id="insecure-http"),
        pytest.param(["--tls"], True, True, id="bare-tls"),
        pytest.param(["--tls=true"], True, True, id="tls-true"),
        pytest.param(["--kubelet", "off"], True, False, id="kubelet-off"),
        pytest.param(["--kubelet=off"], True, False, id="kubelet-off-equals"),
        pytest.param(["--kubelet"], True, True, id="bare-kubelet"),
        pytest.param(["--insecure-http", "--kubelet=off"], False, False, id="test-setup"),
    ],
)
def test_command_options_default_to_tls_and_kubelet_unless_stated(
    argv: list[str], tls: bool, kubelet: bool
) -> None:
    options = _options(*argv)
    assert (options.tls, options.kubelet) == (tls, kubelet)


def test_command_defaults_are_the_emulator_options_defaults() -> None:
    # One place says what the defaults are: flags left out keep EmulatorOptions'.
    defaults = EmulatorOptions()
    assert (defaults.tls, defaults.kubelet) == (True, True)
    options = _options()
    assert (options.tls, options.kubelet) == (defaults.tls, defaults.kubelet)


def test_command_help_states_the_defaults(tmp_path: Path) -> None:
    result = _run(["--help"], tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--tls [true|false]" in text and "(default true:" in text
    assert "--insecure-http" in text and "the same as --tls=false" in text
    assert "--kubelet [on|off]" in text and "(default on; off leaves pods Pending" in text


def test_command_with_no_options_serves_tls_and_readies_pods(tmp_path: Path) -> None:
    sim = start_sim([], tmp_path)
    try:
        assert sim.url.startswith("https://127.0.0.1:")
        cluster = yaml.safe_load(sim.kubeconfig.read_text())["clusters"][0]["cluster"]
        assert cluster["server"] == sim.url
        assert "certificate-authority-data" in cluster
        api = config.new_client_from_config(config_file=str(sim.kubeconfig))
        try:
            core = client.CoreV1Api(api)
            core.create_namespaced_pod("default", pod("first"))

            def ready() -> bool:
                status = core.read_namespaced_pod("first", "default").status
                return status.phase == "Running" and any(
                    c.type == "Ready" and c.status == "True" for c in status.conditions or ()
                )

            wait_for(ready, timeout=30, what="the kubelet to make the pod Ready")
            coordination = client.CoordinationV1Api(api)
            leases = coordination.list_namespaced_lease("kube-node-lease").items
            assert [lease.metadata.name for lease in leases] == ["sim-node-0"]
        finally:
            api.close()
    finally:
        assert stop_sim(sim) == 0


def test_command_kubelet_off_leaves_pods_pending(tmp_path: Path) -> None:
    sim = start_sim(["--insecure-http", "--kubelet", "off", "--pod-ready-delay", "0"], tmp_path)
    try:
        assert sim.url.startswith("http://127.0.0.1:")
        api = config.new_client_from_config(config_file=str(sim.kubeconfig))
        try:
            core = client.CoreV1Api(api)
            core.create_namespaced_pod("default", pod("waits"))
            # With no delay a kubelet binds a pod within milliseconds; for a second, none does.
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                got = core.read_namespaced_pod("waits", "default")
                assert (got.status.phase, got.spec.node_name) == ("Pending", None)
                time.sleep(0.05)
            # Nor does any node heartbeat through its Lease.
            coordination = client.CoordinationV1Api(api)
            assert coordination.list_namespaced_lease("kube-node-lease").items == []
        finally:
            api.close()
    finally:
        assert stop_sim(sim) == 0


def test_command_watch_history_mib_bounds_the_history_in_bytes() -> None:
    from pycm.sim.server import Emulator

    assert _options().watch_history_bytes == EmulatorOptions().watch_history_bytes
    options = _options("--tls=false", "--kubelet=off", "--watch-history-mib", "1")
    assert options.watch_history_bytes == 1024 * 1024
    store = Emulator(options).store
    configmaps = store.resource("configmaps")
    store.create(configmaps, {"metadata": {"name": "first"}, "data": {"k": "x"}}, "default")
    first = store.compacted_resource_version
    for i in range(12):  # 12 x 100 KiB: past 1 MiB, far below the 10k-event window
        store.create(
            configmaps, {"metadata": {"name": f"big-{i}"}, "data": {"k": "x" * 102_400}}, "default"
        )
    assert store.compacted_resource_version > first
