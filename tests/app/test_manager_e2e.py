"""``pycm run`` end to end: a real manager process against the emulator over HTTP.

Covers what a user sees: TLS serving with delegated authn/authz, health, metrics, the start-up
order in the recorded trace, controllers turning a Deployment into pods, and a clean SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.recorder import read_events

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _poll(fn: Any, *, timeout: float = 20.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await fn()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


class Manager:
    def __init__(
        self, proc: subprocess.Popen[bytes], url: str, trace: Path, log: Path, out: Any
    ) -> None:
        self.proc, self.url, self.trace, self.log, self.out = proc, url, trace, log, out


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Any]:
    async with run_emulator(pod_ready_delay=0.0) as emu:
        yield emu


async def _start_manager(emu: Any, tmp_path: Path, *extra: str) -> Manager:
    port = _free_port()
    trace = tmp_path / "trace.jsonl"
    log = tmp_path / "manager.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycm",
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--leader-elect=false",
            "--secure-port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "--trace-file",
            str(trace),
            "--identity",
            "e2e-manager",
            *extra,
        ],
        stdout=(out := log.open("wb")),
        stderr=subprocess.STDOUT,
        env=env,
    )
    return Manager(proc, f"https://127.0.0.1:{port}", trace, log, out)


async def _stop(manager: Manager) -> int:
    manager.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    while manager.proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    if manager.proc.poll() is None:
        manager.proc.kill()
        manager.proc.wait()
        manager.out.close()
        raise AssertionError("pycm run did not stop within 20 s of SIGTERM")
    manager.out.close()
    return manager.proc.returncode


@pytest.mark.asyncio
async def test_manager_serves_health_and_metrics_and_runs_controllers(
    cluster: Any, tmp_path: Path
) -> None:
    manager = await _start_manager(cluster, tmp_path)
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    try:
        async with httpx.AsyncClient(verify=False, timeout=5) as http:

            async def healthy() -> bool:
                try:
                    r = await http.get(f"{manager.url}/healthz")
                except httpx.TransportError:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    return False
                return r.status_code == 200

            await _poll(healthy)
            verbose = await http.get(f"{manager.url}/readyz?verbose")
            assert "[+]informers-synced ok" in verbose.text
            # Anonymous callers pass authentication but not authorization (KCM's 403).
            assert (await http.get(f"{manager.url}/metrics")).status_code == 403
            bad = await http.get(f"{manager.url}/metrics", headers={"Authorization": "Bearer nope"})
            assert bad.status_code == 401
            metrics = await http.get(f"{manager.url}/metrics", headers=admin)
            assert metrics.status_code == 200
            assert "rest_client_requests_total" in metrics.text
            assert "workqueue_adds_total" in metrics.text or "controller_runtime" in metrics.text

            # A Deployment becomes a ReplicaSet and its pods.
            async with httpx.AsyncClient(base_url=cluster.url, headers=admin) as api:
                deployment = {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                        },
                    },
                }
                created = await api.post(
                    "/apis/apps/v1/namespaces/default/deployments", json=deployment
                )
                assert created.status_code == 201, created.text

                async def two_pods() -> bool:
                    pods = (await api.get("/api/v1/namespaces/default/pods")).json()["items"]
                    return len(pods) == 2

                await _poll(two_pods)
                rss = (await api.get("/apis/apps/v1/namespaces/default/replicasets")).json()[
                    "items"
                ]
                assert len(rss) == 1
                assert rss[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    finally:
        code = await _stop(manager)
    assert code == 0, manager.log.read_text()
    events = list(read_events(manager.trace))
    kinds = [e.KIND for e in events]
    ends = [e for e in events if e.KIND == "reconcile.end"]
    assert any(e.api_calls > 0 for e in ends)  # type: ignore[attr-defined]
    # KCM's start-up order: controllers initialised (registering informers), then the
    # factories started and InformersStarted, then caches synced and workers started.
    last_init = max(i for i, k in enumerate(kinds) if k == "controller.init.end")
    assert kinds.index("informers.started") > last_init
    assert kinds.index("informer.started") > last_init
    assert kinds.index("controller.started") > kinds.index("informers.started")
    assert kinds.index("flags.parsed") < kinds.index("startup.begin")
    assert kinds[-1] == "manager.stopped"


def test_manager_without_a_cluster_fails_cleanly(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:9'}\n"
        "users:\n- name: u\n  user: {token: t}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pycm",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--leader-elect=false",
            "--secure-port",
            str(_free_port()),
            "--bind-address",
            "127.0.0.1",
        ],
        capture_output=True,
        text=True,
        timeout=40,
        env=env,
    )
    assert result.returncode == 1
    assert "failed to wait for apiserver being healthy" in result.stderr
    assert "Traceback" not in result.stderr
