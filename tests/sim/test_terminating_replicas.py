"""The emulator keeps ``status.terminatingReplicas`` of ReplicaSets and Deployments (a 1.36 API
server, gate DeploymentReplicaSetTerminatingReplicas on) and refuses a value of the wrong type
as kube's decoder does."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

RS = "/apis/apps/v1/namespaces/default/replicasets"


def _rs() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


@pytest.mark.asyncio
async def test_status_terminating_replicas_is_kept_and_typed(http: httpx.AsyncClient) -> None:
    r = await http.post(RS, json=_rs())
    assert r.status_code == 201, r.text
    rs = r.json()
    rs["status"] = {"replicas": 1, "terminatingReplicas": 2, "observedGeneration": 1}
    r = await http.put(f"{RS}/web/status", json=rs)
    assert r.status_code == 200, r.text
    assert (await http.get(f"{RS}/web")).json()["status"]["terminatingReplicas"] == 2
    rs = r.json()
    rs["status"]["terminatingReplicas"] = "two"
    r = await http.put(f"{RS}/web/status", json=rs)
    assert r.status_code == 400, r.text
    assert "terminatingReplicas" in r.json()["message"]
