"""``pycm run --use-service-account-credentials`` end to end: each controller writes as its own
service account (kube-system/<name>-controller), its tokens never reach a trace or a log, and a
cluster that cannot issue tokens stops the manager with a clear message."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from pycm.sim.server import run_emulator
from tests.e2e_controllers.conftest import (
    DEPLOY_PATH,
    Cluster,
    poll,
    start_manager,
    stop_manager,
)

SA = "system:serviceaccount:kube-system"


@pytest.fixture
def manager_args() -> list[str]:
    return ["--use-service-account-credentials"]


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "v1"}]},
            },
        },
    }


def _kind_of(path: str) -> str:
    """ "/apis/apps/v1/namespaces/default/replicasets/x/status" → "replicasets/status"."""
    parts = path.strip("/").split("/")
    rest = parts[parts.index("namespaces") + 2 :] if "namespaces" in parts else parts[-1:]
    return rest[0] + ("/" + rest[2] if len(rest) > 2 else "")


@pytest.mark.asyncio
async def test_each_controller_writes_as_its_own_service_account(cluster: Cluster) -> None:
    writers: dict[str, set[str]] = {}
    tokens: set[str] = set()

    async def record(request: Request) -> Response | None:
        if request.method == "GET":
            return None
        header = request.headers.get("authorization", "")
        token = header.partition(" ")[2]
        user = cluster.emu.authenticator.authenticate(token)
        if user is not None and user.name.startswith(SA):
            tokens.add(token)
        who = user.name if user is not None else "anonymous"
        writers.setdefault(_kind_of(request.url.path), set()).add(who)
        return None

    cluster.emu.before_request.insert(0, record)
    accounts = await cluster.items("/api/v1/namespaces/kube-system/serviceaccounts")
    assert {a["metadata"]["name"] for a in accounts} >= {
        "deployment-controller",
        "replicaset-controller",
    }
    await cluster.create(DEPLOY_PATH, _deployment("web", 3))

    async def available() -> bool:
        d = await cluster.get(f"{DEPLOY_PATH}/web")
        return (d.get("status") or {}).get("availableReplicas") == 3

    await poll(available)
    deployment, replicaset = f"{SA}:deployment-controller", f"{SA}:replicaset-controller"
    assert writers["replicasets"] == {deployment}
    assert writers["deployments/status"] == {deployment}
    assert writers["pods"] == {replicaset}
    assert writers["replicasets/status"] == {replicaset}
    assert writers["events"] <= {deployment, replicaset} and writers["events"]
    # The tests' own writes went as the tester; nothing else wrote as the manager's root user.
    assert all("admin" not in who for who in writers.values())
    cluster.alive()
    await asyncio.sleep(0.3)  # let the trace recorder flush
    recorded = cluster.trace.read_text() + cluster.log.read_text()
    assert '"controller.token_requested"' in recorded
    assert tokens and not any(t in recorded for t in tokens)


@pytest.mark.asyncio
async def test_a_cluster_that_cannot_issue_tokens_stops_the_manager(tmp_path: Path) -> None:
    async with run_emulator(tls=False, kubelet=False) as emu:
        emu.faults.add(kind="error", status=500, duration=60, resource="serviceaccounts/token")
        manager = start_manager(emu, tmp_path, ["--use-service-account-credentials"])
        for _ in range(400):  # the four attempts back off 0.5 + 1 + 2 s
            if manager.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        code = await stop_manager(manager)
        text = manager.log.read_text()
        assert code != 0, text
        assert "--use-service-account-credentials: failed to get a token for kube-system/" in text
        assert "Traceback" not in text
