"""A new user's first session, with no extra flags: ``pycm sim``, then kubectl creates a
Deployment, ``pycm run`` rolls it out, ``kubectl rollout status`` succeeds and its pods are Ready.

kubectl is the project's own (Debian's kubernetes-client, unpacked by ``tests/system-deps.sh``),
run with only ``--kubeconfig`` the file ``pycm sim`` wrote and HOME in a temporary directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.sim.conftest import start_sim, stop_sim
from tests.sim.conftest_kubectl import kubectl
from tests.support.manager import start_manager, stop_manager

__all__ = ["kubectl"]

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]


def _kubectl_runner(kubectl: Path, kubeconfig: Path, tmp: Path) -> Any:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(home)

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = [str(kubectl), "--kubeconfig", str(kubeconfig), *args]
        return subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )

    return run


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@pytest.mark.asyncio
async def test_first_session_with_no_flags_rolls_out_a_kubectl_deployment(
    kubectl: Path, tmp_path: Path
) -> None:
    sim = start_sim([], tmp_path)  # no options at all: a new user's `pycm sim`
    manager = None
    try:
        assert sim.url.startswith("https://")
        run = _kubectl_runner(kubectl, sim.kubeconfig, tmp_path)
        created = await asyncio.to_thread(
            run, "create", "deployment", "web", "--image=nginx", "--replicas=2"
        )
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip() == "deployment.apps/web created"

        manager = start_manager(sim.kubeconfig, tmp_path)
        status = await asyncio.to_thread(
            run, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150
        )
        assert status.returncode == 0, f"{status.stderr}\n{manager.log.read_text()}"
        assert 'deployment "web" successfully rolled out' in status.stdout

        got = await asyncio.to_thread(run, "get", "deployment", "web", "-o", "json")
        assert got.returncode == 0, got.stderr
        deployment = json.loads(got.stdout)
        # Created without a strategy, it was defaulted as kube-apiserver does, and rolled so.
        assert deployment["spec"]["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        }
        assert deployment["status"]["readyReplicas"] == 2
        pods = await asyncio.to_thread(run, "get", "pods", "-l", "app=web", "-o", "json")
        assert pods.returncode == 0, pods.stderr
        items = json.loads(pods.stdout)["items"]
        assert len(items) == 2
        assert all(p["status"]["phase"] == "Running" and _ready(p) for p in items), items
        assert all(p["spec"].get("nodeName") for p in items)
    finally:
        if manager is not None:
            code = await stop_manager(manager)
            assert code == 0, manager.log.read_text()
        assert stop_sim(sim) == 0
