"""The wire transport against the emulator over TLS with token auth: the same events as
httpx's path, and a wrong token refused the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.kube import PODS, Client, Unauthorized, load_config
from pycm.kube.config import ClientConfig
from pycm.kube.transport import build_ssl_context
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator(tls=True, kubelet=False, watch_window=200, nodes=1) as e:
        yield e


def _pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def _events(client: Client, rv: str, count: int) -> list[tuple[str, str, str]]:
    got: list[tuple[str, str, str]] = []
    async with client.watch(PODS, namespace="default", resource_version=rv) as w:
        async for ev in w:
            if ev.type != "BOOKMARK":
                meta = ev.object["metadata"]
                got.append((ev.type, meta["name"], meta["resourceVersion"]))
            if len(got) == count:
                break
    return got


async def _httpx_client(config: ClientConfig) -> Client:
    """A client whose watches take httpx's path (a transport of its own is given)."""
    transport = httpx.AsyncHTTPTransport(verify=build_ssl_context(config))
    return Client(config, transport=transport, bus=Bus(), registry=CollectorRegistry())


@pytest.mark.asyncio
async def test_wire_watch_over_tls_gives_the_same_events_as_httpx(emu: Emulator) -> None:
    config = await load_config(str(emu.kubeconfig_path), qps=-1)
    assert config.server.startswith("https://") and config.token
    async with await Client.connect(config, bus=Bus(), registry=CollectorRegistry()) as wire:
        assert wire._watch_http is not None
        listed = await wire.list(PODS, namespace="default")
        rv = listed["metadata"]["resourceVersion"]
        for i in range(30):
            await wire.create(PODS, _pod(f"p{i}", n=str(i)))
        for i in range(0, 30, 3):
            pod = await wire.get(PODS, f"p{i}", namespace="default")
            pod["metadata"]["labels"]["changed"] = "yes"
            await wire.update(PODS, pod)
        await wire.delete(PODS, "p1", namespace="default")
        ours = await _events(wire, rv, 41)
        async with await _httpx_client(config) as old:
            theirs = await _events(old, rv, 41)
    assert ours == theirs
    assert [kind for kind, _, _ in ours].count("MODIFIED") == 10
    assert ours[-1][:2] == ("DELETED", "p1")


@pytest.mark.asyncio
async def test_wire_watch_with_a_wrong_token_is_unauthorized(emu: Emulator) -> None:
    config = await load_config(str(emu.kubeconfig_path), qps=-1)
    config = replace(config, token="not-the-token")
    async with await Client.connect(config, bus=Bus(), registry=CollectorRegistry()) as wire:
        assert wire._watch_http is not None
        with pytest.raises(Unauthorized):
            await _events(wire, "", 1)
