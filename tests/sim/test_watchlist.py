"""Streaming lists (WatchList) over real HTTP: the emulator's answers (kube-apiserver 1.34+,
and with its gate off), the official client's and pycm's informer syncing through it — and
through list and watch when the emulator's WatchList is switched off."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest
from kubernetes import client

from pycm.cache.factory import SharedInformerFactory
from pycm.kube import Client, load_config
from pycm.kube.resources import CONFIGMAPS
from pycm.sim import Emulator, run_emulator
from pycm.sim.command import _feature_gates
from pycm.trace.bus import Bus
from pycm.trace.kinds import InformerListBegan, InformerWatchListFellBack, WatchOpened

CMS = "/api/v1/namespaces/default/configmaps"
END = "k8s.io/initial-events-end"
STREAM = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


async def _lines(http: Any, url: str, count: int, *, until: str = "") -> list[dict[str, Any]]:
    """The first ``count`` events of the watch at ``url`` (or, with ``until``, its events up to
    the one about the object so named)."""
    out: list[dict[str, Any]] = []
    async with http.stream("GET", url) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.strip():
                out.append(orjson.loads(line))
            if until and out and out[-1]["object"]["metadata"].get("name") == until:
                break
            if not until and len(out) == count:
                break
    return out


@pytest.mark.asyncio
async def test_sim_watch_list_streams_state_then_annotated_bookmark_then_live(
    emu: Emulator, http: Any
) -> None:
    for name in ("a", "b"):
        assert (await http.post(CMS, json=_cm(name))).status_code == 201
    listed = (await http.get(CMS)).json()
    seen: list[dict[str, Any]] = []

    async def watch() -> None:
        url = f"{CMS}?{STREAM}&allowWatchBookmarks=true"
        seen.extend(await _lines(http, url, 0, until="c"))

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.3)
    assert (await http.post(CMS, json=_cm("c"))).status_code == 201
    await asyncio.wait_for(task, 5)
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in seen]
    assert kinds[:3] == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None)]
    assert kinds[-1] == ("ADDED", "c")
    # Between them only the periodic bookmarks (every 0.2 s here), never annotated.
    assert {k for k in kinds[3:-1]} <= {("BOOKMARK", None)}
    assert all("annotations" not in e["object"]["metadata"] for e in seen[3:-1])
    mark = seen[2]["object"]
    assert mark["metadata"]["annotations"] == {END: "true"}
    assert mark["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]
    assert (mark["kind"], mark["apiVersion"]) == ("ConfigMap", "v1")


@pytest.mark.asyncio
async def test_sim_watch_list_without_bookmarks_sends_no_bookmark(emu: Emulator, http: Any) -> None:
    assert (await http.post(CMS, json=_cm("a"))).status_code == 201
    seen: list[dict[str, Any]] = []

    async def watch() -> None:
        seen.extend(await _lines(http, f"{CMS}?{STREAM}", 2))

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.5)  # the emulator's bookmark interval is 0.2 s
    assert (await http.post(CMS, json=_cm("b"))).status_code == 201
    await asyncio.wait_for(task, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


@pytest.mark.asyncio
async def test_sim_watch_list_too_large_version_is_kube_504(emu: Emulator, http: Any) -> None:
    response = await http.get(f"{CMS}?{STREAM}&resourceVersion=999999")
    assert response.status_code == 504
    body = response.json()
    assert body["reason"] == "Timeout"
    assert body["message"].startswith("Timeout: Too large resource version: 999999, current: ")
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


@pytest.mark.asyncio
async def test_sim_send_initial_events_false_starts_at_now(emu: Emulator, http: Any) -> None:
    assert (await http.post(CMS, json=_cm("old"))).status_code == 201
    seen: list[dict[str, Any]] = []
    url = f"{CMS}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"

    async def watch() -> None:
        seen.extend(await _lines(http, url, 1))

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.3)
    assert (await http.post(CMS, json=_cm("new"))).status_code == 201
    await asyncio.wait_for(task, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("ADDED", "new")]


@pytest.mark.asyncio
async def test_sim_watch_list_gate_off_refuses_as_kube() -> None:
    async with run_emulator(tls=False, kubelet=False, watch_list=False) as emu:
        headers = {"Authorization": f"Bearer {emu.admin_token}"}
        async with httpx.AsyncClient(base_url=emu.url, headers=headers) as http:
            response = await http.get(f"{CMS}?{STREAM}")
    assert response.status_code == 422
    body = response.json()
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    )


def test_sim_feature_gates_flag_reads_kube_syntax_and_refuses_unknown_gates() -> None:
    import argparse

    assert _feature_gates("WatchList=false") == {"WatchList": False}
    assert _feature_gates("WatchList=true,") == {"WatchList": True}
    with pytest.raises(argparse.ArgumentTypeError, match="unrecognized feature gate: Nope"):
        _feature_gates("Nope=true")
    with pytest.raises(argparse.ArgumentTypeError, match="missing bool value for WatchList"):
        _feature_gates("WatchList")


def test_sim_watch_list_through_the_official_client(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    for name in ("x", "y"):
        core.create_namespaced_config_map(namespace, _cm(name))
    response = core.list_namespaced_config_map(
        namespace,
        watch=True,
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=2,
        _preload_content=False,
    )
    events = []
    for line in response:
        for part in line.splitlines():
            if part.strip():
                events.append(orjson.loads(part))
        if any(e["type"] == "BOOKMARK" for e in events):
            break
    response.release_conn()
    names = [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"]
    assert sorted(names) == ["x", "y"]
    assert events[-1]["type"] == "BOOKMARK"
    assert events[-1]["object"]["metadata"]["annotations"] == {END: "true"}


# ---------------------------------------------------------------------------------------------
# pycm's informer through both paths
# ---------------------------------------------------------------------------------------------


async def _informer_run(emu: Emulator) -> tuple[dict[str, Any], list[Any], Any]:
    """Sync a configmap informer (WatchList wanted) against ``emu``; its cache, the trace and
    the reflector after a live change has arrived."""
    bus = Bus()
    sub = bus.subscribe(maxsize=100_000)
    kube = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
    async with kube:
        factory = SharedInformerFactory(kube, namespace="default", bus=bus, watch_list=True)
        informer = factory.informer_for(CONFIGMAPS)
        factory.start()
        try:
            synced = await factory.wait_for_cache_sync(timeout=10)
            assert all(synced.values())
            await kube.create(CONFIGMAPS, _cm("live"), namespace="default")
            for _ in range(200):
                if informer.lister.get("default", "live") is not None:
                    break
                await asyncio.sleep(0.02)
            cache = {o["metadata"]["name"]: o for o in informer.lister.list("default")}
        finally:
            await factory.shutdown(timeout=5)
    return cache, sub.drain(), informer.reflector


@pytest.mark.asyncio
@pytest.mark.parametrize("server_watch_list", [True, False], ids=["streamed", "fell-back"])
async def test_informer_syncs_through_watch_list_or_falls_back_to_list(
    server_watch_list: bool,
) -> None:
    async with run_emulator(tls=False, kubelet=False, watch_list=server_watch_list) as emu:
        for i in range(30):
            emu.store.create(emu.store.resource("configmaps"), _cm(f"cm-{i}"), "default")
        cache, events, reflector = await _informer_run(emu)
        items, _ = emu.store.list(emu.store.resource("configmaps"), "default")
        expected = {o["metadata"]["name"] for o in items}
    assert set(cache) == expected and "live" in cache
    begins = [e for e in events if isinstance(e, InformerListBegan)]
    fell = [e for e in events if isinstance(e, InformerWatchListFellBack)]
    assert [e for e in events if isinstance(e, WatchOpened)]
    if server_watch_list:
        assert [b.watch_list for b in begins] == [True]
        assert fell == [] and reflector.watch_list_fallbacks == 0
    else:
        assert [b.watch_list for b in begins] == [True, False]
        [why] = fell
        assert why.permanent is True
        assert "WatchList feature gate" in why.reason
        assert reflector.watch_list_supported is False
