"""Client.apply: server-side apply is a PATCH of the whole manifest with the apply content
type, the field manager and force as query parameters, apiVersion and kind filled in."""

from __future__ import annotations

import pytest

from pycm.kube.client import Client
from pycm.kube.resources import CONFIGMAPS, DEPLOYMENTS
from tests.kube.conftest import Recorder


@pytest.mark.asyncio
async def test_apply_patches_with_apply_content_type_manager_and_force(
    client: Client, recorder: Recorder
) -> None:
    manifest = {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 2}}
    await client.apply(DEPLOYMENTS, manifest, field_manager="website-operator", force=True)
    request = recorder.last
    assert request.method == "PATCH"
    assert request.url.path == "/apis/apps/v1/namespaces/shop/deployments/web"
    assert request.headers["content-type"] == "application/apply-patch+yaml"
    assert dict(request.url.params) == {"fieldManager": "website-operator", "force": "true"}
    assert recorder.body() == {"apiVersion": "apps/v1", "kind": "Deployment", **manifest}


@pytest.mark.asyncio
async def test_apply_without_force_says_false_and_keeps_given_kind(
    client: Client, recorder: Recorder
) -> None:
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    await client.apply(CONFIGMAPS, manifest, field_manager="m", namespace="default")
    assert recorder.last.url.path == "/api/v1/namespaces/default/configmaps/c"
    assert dict(recorder.last.url.params) == {"fieldManager": "m", "force": "false"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("manifest", "manager", "message"),
    [
        pytest.param({"metadata": {"name": "c"}}, "", "needs a field_manager", id="no-manager"),
        pytest.param({"metadata": {}}, "m", "needs metadata.name", id="no-name"),
    ],
)
async def test_apply_refuses_before_sending(
    client: Client, recorder: Recorder, manifest: dict[str, object], manager: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await client.apply(CONFIGMAPS, manifest, field_manager=manager)
    assert recorder.requests == []


@pytest.mark.asyncio
async def test_apply_against_the_emulator_creates_updates_and_conflicts() -> None:
    from pycm.kube.config import load_config
    from pycm.kube.errors import Conflict
    from pycm.sim.server import run_emulator
    from pycm.trace.bus import Bus

    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        async with await Client.connect(config, bus=Bus()) as client:
            manifest = {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}
            created = await client.apply(CONFIGMAPS, manifest, field_manager="op")
            assert created["data"] == {"a": "1"}
            again = await client.apply(CONFIGMAPS, manifest, field_manager="op")
            assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            other = {**manifest, "data": {"a": "2"}}
            with pytest.raises(Conflict):  # another manager owns data.a
                await client.apply(CONFIGMAPS, other, field_manager="someone-else")
            taken = await client.apply(CONFIGMAPS, other, field_manager="someone-else", force=True)
            assert taken["data"] == {"a": "2"}
            managers = {e["manager"] for e in taken["metadata"]["managedFields"]}
            assert "someone-else" in managers
