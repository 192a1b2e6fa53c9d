"""The client against the embedded API emulator over HTTP (and HTTPS) on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    PODS,
    AlreadyExists,
    Client,
    Conflict,
    Expired,
    NotFound,
    PatchType,
    load_config,
)
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus
from tests.support.manifests import workload


def _cm(name: str, **data: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator(
        tls=False, kubelet=False, watch_window=20, bookmark_interval=0.2, nodes=1
    ) as e:
        yield e


@pytest_asyncio.fixture
async def kube(emu: Emulator) -> AsyncIterator[Client]:
    config = await load_config(str(emu.kubeconfig_path), qps=-1)
    client = await Client.connect(config, bus=Bus(), registry=CollectorRegistry())
    try:
        yield client
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_emulator_crud_round_trip(kube: Client) -> None:
    created = await kube.create(CONFIGMAPS, _cm("a", k="1"))
    assert created["metadata"]["uid"]
    with pytest.raises(AlreadyExists):
        await kube.create(CONFIGMAPS, _cm("a"))
    got = await kube.get(CONFIGMAPS, "a", namespace="default")
    assert got["data"] == {"k": "1"}
    got["data"]["k"] = "2"
    updated = await kube.update(CONFIGMAPS, got)
    assert updated["data"] == {"k": "2"}
    with pytest.raises(Conflict):
        await kube.update(CONFIGMAPS, got)  # stale resourceVersion
    patched = await kube.patch(
        CONFIGMAPS, "a", {"data": {"m": "3"}}, namespace="default", patch_type=PatchType.MERGE
    )
    assert patched["data"] == {"k": "2", "m": "3"}
    patched = await kube.patch(
        CONFIGMAPS,
        "a",
        [{"op": "remove", "path": "/data/k"}],
        namespace="default",
        patch_type=PatchType.JSON,
    )
    assert patched["data"] == {"m": "3"}
    with pytest.raises(Conflict):
        await kube.delete(CONFIGMAPS, "a", namespace="default", uid="not-the-uid")
    await kube.delete(CONFIGMAPS, "a", namespace="default", uid=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        await kube.get(CONFIGMAPS, "a", namespace="default")


@pytest.mark.asyncio
async def test_emulator_scale_and_status_subresources(kube: Client) -> None:
    await kube.create(DEPLOYMENTS, workload("Deployment", "web"))
    scale = await kube.get_scale(DEPLOYMENTS, "web", namespace="default")
    assert scale["spec"]["replicas"] == 1
    scale["spec"]["replicas"] = 4
    await kube.update_scale(DEPLOYMENTS, "web", scale, namespace="default")
    dep = await kube.get(DEPLOYMENTS, "web", namespace="default")
    assert dep["spec"]["replicas"] == 4
    dep["status"] = {"observedGeneration": dep["metadata"]["generation"], "replicas": 0}
    after = await kube.update_status(DEPLOYMENTS, dep)
    assert after["status"]["observedGeneration"] == dep["metadata"]["generation"]


@pytest.mark.asyncio
async def test_emulator_list_paging_and_selectors(kube: Client) -> None:
    for i in range(7):
        await kube.create(CONFIGMAPS, _cm(f"cm-{i}"))
    other = _cm("other")
    other["metadata"]["labels"] = {"app": "db"}
    await kube.create(CONFIGMAPS, other)
    page = await kube.list(CONFIGMAPS, namespace="default", limit=3, label_selector="app=web")
    assert len(page["items"]) == 3
    assert page["metadata"]["continue"]
    result = await kube.list_all(
        CONFIGMAPS, namespace="default", page_size=3, label_selector="app=web"
    )
    assert sorted(i["metadata"]["name"] for i in result.items) == [f"cm-{i}" for i in range(7)]
    assert result.pages == 3
    assert int(result.resource_version) > 0
    deleted = await kube.delete_collection(
        CONFIGMAPS, namespace="default", label_selector="app=web"
    )
    assert deleted
    left = await kube.list_all(CONFIGMAPS, namespace="default")
    assert [i["metadata"]["name"] for i in left.items if "cm-" in i["metadata"]["name"]] == []


@pytest.mark.asyncio
async def test_emulator_watch_sees_changes_and_bookmarks(kube: Client) -> None:
    start = await kube.list_all(CONFIGMAPS, namespace="default")
    seen: list[str] = []
    async with kube.watch(
        CONFIGMAPS, namespace="default", resource_version=start.resource_version, timeout_seconds=30
    ) as w:
        await kube.create(CONFIGMAPS, _cm("w"))
        await kube.delete(CONFIGMAPS, "w", namespace="default")
        async with asyncio.timeout(10):
            async for ev in w:
                seen.append(ev.type)
                if ev.type == "BOOKMARK":
                    assert ev.object["metadata"]["resourceVersion"]
                    break
    assert seen[:2] == ["ADDED", "DELETED"]
    assert seen[-1] == "BOOKMARK"


@pytest.mark.asyncio
async def test_emulator_watch_from_compacted_version_raises_expired(kube: Client) -> None:
    first = await kube.create(CONFIGMAPS, _cm("old"))
    for i in range(30):  # more changes than the watch window holds
        await kube.patch(CONFIGMAPS, "old", {"data": {"i": str(i)}}, namespace="default")
    with pytest.raises(Expired):
        async with kube.watch(
            CONFIGMAPS, namespace="default", resource_version=first["metadata"]["resourceVersion"]
        ) as w:
            async with asyncio.timeout(10):
                async for _ in w:
                    pass


@pytest.mark.asyncio
async def test_emulator_metadata_only_returns_partial_object_metadata(kube: Client) -> None:
    await kube.create(CONFIGMAPS, _cm("meta", secret="value"))
    page = await kube.list(CONFIGMAPS, namespace="default", metadata_only=True)
    assert page["kind"] == "PartialObjectMetadataList"
    assert all("data" not in item for item in page["items"])
    one = await kube.get(CONFIGMAPS, "meta", namespace="default", metadata_only=True)
    assert one["kind"] == "PartialObjectMetadata"
    assert one["metadata"]["name"] == "meta"
    assert "data" not in one


@pytest.mark.asyncio
async def test_emulator_over_tls_with_kubeconfig_ca() -> None:
    async with run_emulator(tls=True, kubelet=False) as emu:
        config = await load_config(str(emu.kubeconfig_path), qps=-1)
        assert config.server.startswith("https://127.0.0.1")
        assert config.insecure_skip_tls_verify is False
        async with await Client.connect(config, bus=Bus(), registry=CollectorRegistry()) as c:
            await c.create(PODS, _pod("tls"))
            assert (await c.get(PODS, "tls", namespace="default"))["metadata"]["name"] == "tls"


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
