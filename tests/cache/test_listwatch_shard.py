"""An informer's share (KEP-5866): the list-watch sends ``shardSelector`` and keeps only its
share whether the server filtered (ShardedListAndWatch on: ``metadata.shardInfo``) or not
(off: everything comes, this side filters and says so once) — through a paged list and a
streaming one, and for the events that follow."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.api.sharding import FIELD_NAMESPACE, hash_field
from pycm.cache.factory import default_list_watch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.kube import Client, load_config
from pycm.kube.resources import NAMESPACES as NAMESPACE_RESOURCE
from pycm.kube.resources import PODS
from pycm.sharding.ring import Ring
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import InformerBackedOff, InformerRelisted

# Names that differ in more than their last character: FNV-1a (kube's shard hash) puts names
# such as team-0 … team-7 within 2^-21 of the space of each other, so one member would own
# them all on the plain ring this test uses (docs/operations.md, "Sharding": the layout).
NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
MEMBERS = ["pycm-0", "pycm-1"]


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


@pytest_asyncio.fixture(params=[True, False], ids=["server-filters", "server-ignores"])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, bool]]:
    sharded: bool = request.param
    async with run_emulator(
        tls=False, kubelet=False, nodes=1, sharded_list_and_watch=sharded
    ) as emu:
        client = await Client.connect(
            await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        )
        try:
            for ns in NAMESPACES:
                await client.create(NAMESPACE_RESOURCE, {"metadata": {"name": ns}})
                for i in range(3):
                    await client.create(PODS, _pod(f"p{i}", ns), namespace=ns)
            yield client, sharded
        finally:
            await client.aclose()


async def _wait(predicate: Any, what: str) -> None:
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"not within 5 s: {what}")


@pytest.mark.asyncio
@pytest.mark.parametrize("watch_list", [False, True], ids=["paged-list", "streaming-list"])
async def test_informers_of_two_members_hold_disjoint_shares_that_cover_everything(
    cluster: tuple[Client, bool], watch_list: bool, caplog: pytest.LogCaptureFixture
) -> None:
    client, sharded = cluster
    ring = Ring.of(MEMBERS)
    informers: dict[str, SharedIndexInformer] = {}
    lws = {}
    for member in MEMBERS:
        lw = default_list_watch(client, PODS)
        lw.shard_selector = ring.selector(member, FIELD_NAMESPACE)
        lws[member] = lw
        informers[member] = SharedIndexInformer(
            lw, "pods", bus=Bus(), page_size=5, watch_list=watch_list
        )
    caplog.set_level(logging.WARNING, logger="pycm.cache.listwatch")
    tasks = [asyncio.create_task(i.run(), name=f"informer {m}") for m, i in informers.items()]
    try:
        for informer in informers.values():
            await asyncio.wait_for(informer.wait_synced(), 10)
        # Events after the sync: one more pod in every namespace.
        for ns in NAMESPACES:
            await client.create(PODS, _pod("late", ns), namespace=ns)
        total = len(NAMESPACES) * 4

        def held() -> dict[str, set[str]]:
            return {m: set(i.indexer.list_keys()) for m, i in informers.items()}

        await _wait(lambda: sum(len(k) for k in held().values()) == total, "every late pod")
        keys = held()
        assert not keys["pycm-0"] & keys["pycm-1"], "no object in two shares"
        assert len(keys["pycm-0"] | keys["pycm-1"]) == total
        for member, member_keys in keys.items():
            for key in member_keys:
                assert ring.owner(hash_field(key.split("/")[0])) == member
        assert all(keys.values()), "each member holds some of the eight namespaces"
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    warned = [r for r in caplog.records if "does not filter by shardSelector" in r.message]
    if watch_list:  # no list response to read shardInfo from: nothing is said
        assert all(lw.server_filters is None for lw in lws.values())
    elif sharded:
        assert all(lw.server_filters for lw in lws.values()) and not warned
    else:
        assert all(lw.server_filters is False for lw in lws.values())
        assert len(warned) == len(MEMBERS), "once per list-watch, not once per page"


@pytest.mark.asyncio
async def test_a_changed_share_is_relisted_at_once_what_left_goes_what_came_arrives(
    cluster: tuple[Client, bool],
) -> None:
    client, _ = cluster
    two, one = Ring.of(MEMBERS), Ring.of(["pycm-0"])
    lw = default_list_watch(client, PODS)
    lw.shard_selector = two.selector("pycm-0", FIELD_NAMESPACE)
    bus = Bus()
    informer = SharedIndexInformer(lw, "pods", bus=bus, page_size=5)
    task = asyncio.create_task(informer.run(), name="informer")
    try:
        await asyncio.wait_for(informer.wait_synced(), 10)
        before = set(informer.indexer.list_keys())
        assert 0 < len(before) < len(NAMESPACES) * 3
        # pycm-1 left: pycm-0 owns everything now.
        lw.shard_selector = one.selector("pycm-0", FIELD_NAMESPACE)
        informer.reflector.relist("shard changed")
        await _wait(lambda: len(informer.indexer.list_keys()) == len(NAMESPACES) * 3, "all")
        # And back: what left the share is deleted from the cache.
        lw.shard_selector = two.selector("pycm-0", FIELD_NAMESPACE)
        informer.reflector.relist("shard changed")
        await _wait(lambda: set(informer.indexer.list_keys()) == before, "the half again")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    reasons = [e.reason for e in bus.recent() if isinstance(e, InformerRelisted)]
    assert reasons.count("shard changed") == 2
    assert not [e for e in bus.recent() if isinstance(e, InformerBackedOff)], "no backoff"
