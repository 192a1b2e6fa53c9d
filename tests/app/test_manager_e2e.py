"""``pycm run`` end to end: a real manager process against the emulator over HTTP.

Covers what a user sees: TLS serving with delegated authn/authz, health, metrics, the start-up
order in the recorded trace, controllers turning a Deployment into pods, and a clean SIGTERM.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.recorder import read_events
from tests.support.manager import (
    free_port,
    poll,
    record_traceparents,
    start_manager,
    stop_manager,
)

pytestmark = pytest.mark.e2e


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


@pytest.mark.asyncio
async def test_manager_serves_health_and_metrics_and_runs_controllers(
    cluster: Any, tmp_path: Path
) -> None:
    traceparents = record_traceparents(cluster)
    manager = start_manager(cluster.kubeconfig_path, tmp_path)
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

            await poll(healthy)
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

                await poll(two_pods)
                rss = (await api.get("/apis/apps/v1/namespaces/default/replicasets")).json()[
                    "items"
                ]
                assert len(rss) == 1
                assert rss[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    finally:
        code = await stop_manager(manager)
    assert code == 0, manager.log.read_text()
    events = list(read_events(manager.trace))
    kinds = [e.KIND for e in events]
    ends = [e for e in events if e.KIND == "reconcile.end"]
    assert any(e.api_calls > 0 for e in ends)  # type: ignore[attr-defined]
    # Without an exporter nothing is sampled: reconciles' calls carry their context, flag 00.
    assert traceparents and all(t.endswith("-00") for t in traceparents), traceparents[:3]
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
            str(free_port()),
            "--bind-address",
            "127.0.0.1",
            # KCM's 10 s wait for /healthz, on a clock running 10× (1 s real): the same
            # polls and the same give-up, without a worker idle for 10 s of the suite.
            "--debug-clock-rate=10",
        ],
        capture_output=True,
        text=True,
        timeout=40,
        env=env,
    )
    assert result.returncode == 1
    assert "failed to wait for apiserver being healthy" in result.stderr
    assert "Traceback" not in result.stderr
