"""The informer against the in-process emulator over HTTP: it stays equal to a fresh list
through random creates/updates/deletes, dropped watches and compaction."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.cache.listwatch import ClientListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import meta_namespace_key
from pycm.kube import Client, load_config
from pycm.kube.errors import Conflict, NotFound
from pycm.kube.resources import PODS
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import InformerRelisted, WatchClosed
from pycm.util.backoff import ExponentialBackoffManager
from tests.cache.test_shared_informer import Recorder

QUIESCE_S = 15.0


def _pod(name: str, color: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "prop", "color": color}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }


@pytest_asyncio.fixture
async def emulator() -> AsyncIterator[Any]:
    async with run_emulator(
        tls=False, kubelet=False, nodes=1, watch_window=20, bookmark_interval=0.2
    ) as emu:
        yield emu


async def _client(emu: Any) -> Client:
    return await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))


async def _fresh(client: Client) -> dict[str, str]:
    raw = await client.list(PODS, namespace="default")
    return {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in raw["items"]}


def _cached(informer: SharedIndexInformer) -> dict[str, str]:
    return {
        meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in informer.indexer.list()
    }


async def _converged(client: Client, informer: SharedIndexInformer, h: Recorder) -> bool:
    deadline = time.monotonic() + QUIESCE_S
    while time.monotonic() < deadline:
        fresh = await _fresh(client)
        view = {k: o["metadata"]["resourceVersion"] for k, o in h.view.items()}
        if _cached(informer) == fresh and view == fresh:
            return True
        await asyncio.sleep(0.05)
    return False


def _informer(client: Client, bus: Bus, **kwargs: Any) -> SharedIndexInformer:
    informer = SharedIndexInformer(
        ClientListWatch(client, PODS, namespace="default", **kwargs),
        "pods",
        bus=bus,
        mutation_detector=True,
        metadata_only=bool(kwargs.get("metadata_only")),
    )
    # Fast retries keep the test short; the policy itself is tested with a fake clock.
    informer.reflector.backoff = ExponentialBackoffManager(initial=0.01, max=0.1)
    return informer


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", [pytest.param(1, id="seed-1"), pytest.param(2, id="seed-2")])
async def test_informer_emulator_random_ops_with_faults_equals_fresh_list(
    emulator: Any, seed: int
) -> None:
    rng = random.Random(seed)
    client = await _client(emulator)
    bus = Bus()
    sub = bus.subscribe(maxsize=100_000)
    informer = _informer(client, bus)
    h = Recorder()
    informer.add_event_handler(h)
    task = asyncio.create_task(informer.run(), name="test-informer-emulator")
    try:
        for i in range(10):
            await client.create(PODS, _pod(f"p{i}", "red"), namespace="default")
        await asyncio.wait_for(informer.wait_synced(), 10)
        alive = {f"p{i}" for i in range(10)}
        counter = 10
        for step in range(120):
            op = rng.random()
            try:
                if op < 0.4 or not alive:
                    name = f"p{counter}"
                    counter += 1
                    await client.create(PODS, _pod(name, "red"), namespace="default")
                    alive.add(name)
                elif op < 0.75:
                    name = rng.choice(sorted(alive))
                    obj = await client.get(PODS, name, namespace="default")
                    obj["metadata"]["labels"]["color"] = rng.choice(["red", "blue", "green"])
                    await client.update(PODS, obj, namespace="default")
                else:
                    name = rng.choice(sorted(alive))
                    await client.delete(PODS, name, namespace="default")
                    alive.discard(name)
            except (NotFound, Conflict):  # races with the simulated kubelet
                pass
            if step % 30 == 10:
                emulator.store.drop_watches()
            if step % 30 == 20:
                # Synchronously, with no await: the watch is down while three writes happen and
                # the history is compacted, so re-watching from the last RV gets 410 → relist.
                store = emulator.store
                store.drop_watches()
                for _ in range(3):
                    store.create(store.resource("pods"), _pod(f"p{counter}", "red"), "default")
                    alive.add(f"p{counter}")
                    counter += 1
                store.compact()
            if step % 7 == 0:
                await asyncio.sleep(0.01)  # let the watch deliver some events mid-run
        assert await _converged(client, informer, h), "the informer never matched a fresh list"
        events = sub.drain()
        assert any(isinstance(e, WatchClosed) for e in events)
        assert "expired" in {e.reason for e in events if isinstance(e, InformerRelisted)}
        assert informer.detector is not None
        informer.detector.check_all()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.aclose()


@pytest.mark.asyncio
async def test_informer_emulator_metadata_only_caches_only_metadata(emulator: Any) -> None:
    client = await _client(emulator)
    informer = _informer(client, Bus(), metadata_only=True)
    task = asyncio.create_task(informer.run(), name="test-metadata-informer")
    try:
        await client.create(PODS, _pod("m0", "red"), namespace="default")
        await asyncio.wait_for(informer.wait_synced(), 10)
        await client.create(PODS, _pod("m1", "blue"), namespace="default")
        for _ in range(int(QUIESCE_S / 0.02)):
            if len(informer.indexer) >= 2:
                break
            await asyncio.sleep(0.02)
        objs = informer.indexer.list()
        assert sorted(o["metadata"]["name"] for o in objs) == ["m0", "m1"]
        for obj in objs:
            assert obj["kind"] == "PartialObjectMetadata"
            assert set(obj) <= {"apiVersion", "kind", "metadata"}
            assert obj["metadata"]["labels"]["app"] == "prop"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.aclose()
