"""``pycm demo`` end to end: the emulator and three replicas as real processes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pycm.demo.orchestrator import SHARDED_NAMESPACES
from tests.sim.conftest_kubectl import kubectl

__all__ = ["kubectl"]

ROOT = Path(__file__).resolve().parents[2]
REPLICA_LINE = re.compile(r"^(replica-[abc]): https://127\.0\.0\.1:(\d+) ", re.MULTILINE)
EMULATOR_LINE = re.compile(r"^emulator: \S+ \(kubeconfig: (?P<path>.+)\)$", re.MULTILINE)

pytestmark = pytest.mark.e2e


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    """``pycm demo ARGS`` to its end (its --duration), output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pycm", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )


def _port_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_demo_duration_exits_0_with_three_replicas_and_an_acquired_lease() -> None:
    # --duration counts from the lease (start-up took from 2 s to 20 s, idle to loaded CI);
    # 10 s covers the rollout that follows it.
    result = _demo("--duration", "10", "--no-tui")
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    replicas = REPLICA_LINE.findall(out)
    assert sorted(name for name, _ in replicas) == ["replica-a", "replica-b", "replica-c"]
    acquired = re.findall(r"^\S+ (replica-[abc]) +lease\.acquired ", out, re.MULTILINE)
    assert len(acquired) == 1, out
    assert f"pycm demo: ok: leader(s) elected: {acquired[0]}" in out
    assert "workload: created deployment default/demo-web" in out
    assert "workload: demo-web desired=3 updated=3 ready=3 available=3" in out, "rolled out"
    emulator = EMULATOR_LINE.search(out)
    assert emulator is not None
    assert not Path(emulator["path"]).parent.exists(), "the temp dir was removed"
    assert _pids_with(str(Path(emulator["path"]).parent)) == [], "no child outlived the demo"
    assert all(_port_closed(int(port)) for _, port in replicas), "every replica stopped"


def test_demo_sharded_rolls_out_one_deployment_a_namespace_and_exits_0() -> None:
    result = _demo("--sharded", "--duration", "10", "--no-tui")
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    assert "pycm demo: ok" in out
    for namespace in SHARDED_NAMESPACES:
        assert f"workload: created deployment {namespace}/demo-web" in out
        assert f"workload: {namespace}/demo-web desired=3 updated=3 ready=3 available=3" in out, (
            namespace,
            out,
        )
    emulator = EMULATOR_LINE.search(out)
    assert emulator is not None
    assert _pids_with(str(Path(emulator["path"]).parent)) == [], "no child outlived the demo"


def test_demo_ctrl_c_stops_every_child_and_exits_0(kubectl: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pycm", "demo", "--no-tui"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if " lease.acquired " in line:
                break
        # The kubeconfig the demo prints works for kubectl (which sends no bearer token over
        # plain HTTP: the emulator serves TLS).
        printed = EMULATOR_LINE.search("".join(lines))
        assert printed is not None, "".join(lines)
        got = subprocess.run(
            [str(kubectl), "--kubeconfig", printed["path"], "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert any(" lease.acquired " in line for line in lines), out
    assert got.returncode == 0 and "namespace/default" in got.stdout, got.stderr
    assert proc.returncode == 0, f"{out}\n{err}"
    ports = [int(port) for _, port in REPLICA_LINE.findall(out)]
    assert len(ports) == 3
    assert all(_port_closed(port) for port in ports)
    emulator = EMULATOR_LINE.search(out)
    assert emulator is not None and not Path(emulator["path"]).parent.exists()


def _pids_with(*needles: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if all(needle in cmdline for needle in needles):
            pids.append(int(entry.name))
    return pids


def test_demo_replica_crash_exits_1_with_the_reason() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pycm", "demo", "--duration", "60", "--no-tui"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        while len(REPLICA_LINE.findall("".join(lines))) < 3:
            line = proc.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        emulator = EMULATOR_LINE.search("".join(lines))
        assert emulator is not None
        temp_dir = str(Path(emulator["path"]).parent)
        victims = _pids_with(temp_dir, "--identity replica-b")
        assert len(victims) == 1
        os.kill(victims[0], signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, "".join(lines) + rest
    assert "pycm demo: failed: replica-b exited unexpectedly with status -9" in err
    assert not Path(temp_dir).exists()
    assert _pids_with(temp_dir) == [], "every child was stopped"
