"""/statusz and /flagz on a real ``pycm run``'s secure port against the emulator, as a user
would try them with curl: an admin token reads both (text and structured), no token gets 403
(authorized as /configz: not always allowed, the SubjectAccessReview says no to anonymous),
secrets stay out of /flagz, and --feature-gates turns each off."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from tests.support.manager import poll, start_manager, stop_manager

pytestmark = pytest.mark.e2e

SECRET = "Zp4gesS3cret"
BETA = "application/json;g=config.k8s.io;v=v1beta1;as={}"


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False) as emu:
        yield emu


async def _served(manager: Any, http: httpx.AsyncClient, headers: dict[str, str]) -> None:
    async def up() -> bool:
        try:
            r = await http.get(f"{manager.url}/healthz", headers=headers)
        except httpx.TransportError:
            assert manager.proc.poll() is None, manager.log.read_text()
            return False
        return r.status_code == 200

    await poll(up, timeout=30)


@pytest.mark.asyncio
async def test_run_serves_statusz_and_flagz_to_an_admin_and_403_to_anonymous(
    cluster: Any, tmp_path: Path
) -> None:
    endpoint = f"http://user:{SECRET}@127.0.0.1:1"
    manager = start_manager(
        cluster.kubeconfig_path,
        tmp_path,
        "--kube-api-qps=7",
        "--otlp-endpoint",
        endpoint,
        "--feature-gates=WatchListClient=false",
    )
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    try:
        async with httpx.AsyncClient(verify=False, timeout=5) as http:
            await _served(manager, http, admin)
            statusz = await http.get(f"{manager.url}/statusz", headers=admin)
            statusz_json = await http.get(
                f"{manager.url}/statusz", headers={**admin, "Accept": BETA.format("Statusz")}
            )
            flagz = await http.get(f"{manager.url}/flagz", headers=admin)
            flagz_json = await http.get(
                f"{manager.url}/flagz", headers={**admin, "Accept": BETA.format("Flagz")}
            )
            anonymous = [await http.get(f"{manager.url}{path}") for path in ("/statusz", "/flagz")]
    finally:
        await stop_manager(manager)
    assert statusz.status_code == 200, statusz.text
    assert statusz.text.startswith("\npycm statusz\nWarning: This endpoint is not meant")
    assert "Binary version" in statusz.text
    body = statusz_json.json()
    assert (body["kind"], body["apiVersion"], body["metadata"]) == (
        "Statusz",
        "config.k8s.io/v1beta1",
        {"name": "pycm"},
    )
    assert {"/configz", "/flagz", "/healthz", "/livez", "/metrics", "/readyz"} <= set(body["paths"])
    assert body["uptimeSeconds"] >= 0
    assert flagz.status_code == 200
    assert SECRET not in flagz.text and SECRET not in flagz_json.text
    flags = flagz_json.json()["flags"]
    assert flags["kube-api-qps"] == "7"
    assert flags["leader-elect"] == "false"  # given by the test's helper
    assert flags["leader-elect-lease-duration"] == "15s"  # a default is listed too
    assert flags["otlp-endpoint"] == endpoint.replace(SECRET, "xxxxx")
    assert flags["feature-gates"] == "WatchListClient=false"
    for response in anonymous:
        assert response.status_code == 403
        assert response.json()["reason"] == "Forbidden"
        assert 'User "system:anonymous" cannot get path' in response.json()["message"]


@pytest.mark.asyncio
async def test_run_feature_gates_turn_the_zpages_off(cluster: Any, tmp_path: Path) -> None:
    manager = start_manager(
        cluster.kubeconfig_path,
        tmp_path,
        "--feature-gates=ComponentStatusz=false,ComponentFlagz=false",
    )
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    try:
        async with httpx.AsyncClient(verify=False, timeout=5) as http:
            await _served(manager, http, admin)
            codes = [
                (await http.get(f"{manager.url}{path}", headers=admin)).status_code
                for path in ("/statusz", "/flagz")
            ]
    finally:
        await stop_manager(manager)
    assert codes == [404, 404]
