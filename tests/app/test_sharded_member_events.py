"""A sharded member reports the relist a ring change causes (``shard.relist``: its informers, its
new share, what they cached: keys and objects) and serves ``controller_sharding_keys_owned`` (its
primary informers' objects) and ``controller_sharding_objects_cached`` (all its sharded
informers') from its caches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.api.sharding import hash_field
from pycm.app.sharding import ShardedMember
from pycm.cache.factory import default_list_watch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.kube import Client, load_config
from pycm.kube.resources import CONFIGMAPS, PODS
from pycm.kube.resources import NAMESPACES as NAMESPACE_RESOURCE
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import Membership, MembershipConfig
from pycm.sharding.metrics import ShardingMetrics
from pycm.sharding.ring import Ring
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import ShardRelisted
from pycm.trace.state import State
from pycm.util.clock import FakeClock

NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    async with run_emulator(tls=False, kubelet=False, nodes=1, sharded_list_and_watch=True) as emu:
        c = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
        try:
            for ns in NAMESPACES:
                await c.create(NAMESPACE_RESOURCE, {"metadata": {"name": ns}})
                pod: dict[str, Any] = {
                    "metadata": {"name": "p0", "namespace": ns},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }
                await c.create(PODS, pod, namespace=ns)
                for name in ("c0", "c1"):
                    cm = {"metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}}
                    await c.create(CONFIGMAPS, cm, namespace=ns)
            yield c
        finally:
            await c.aclose()


def _membership(
    client: Client, name: str, clock: FakeClock, bus: Bus | None, metrics: ShardingMetrics | None
) -> Membership:
    return Membership(
        MembershipConfig("pycm", name, lease_duration=15, renew_deadline=10, retry_period=2),
        ClientLeaseStore(client, "kube-system"),
        lambda: (),
        clock=clock,
        bus=bus,
        metrics=metrics,
    )


@pytest.mark.asyncio
async def test_a_ring_change_relists_and_reports_the_new_share(client: Client) -> None:
    clock, bus, registry = FakeClock(), Bus(instance="pycm-a"), CollectorRegistry()
    member = ShardedMember(_membership(client, "pycm-a", clock, bus, ShardingMetrics(registry)))
    # Pods are the keys here (a controller's primary resource); its config maps, read besides.
    informer = SharedIndexInformer(default_list_watch(client, PODS), "pods", bus=Bus())
    configmaps = SharedIndexInformer(
        default_list_watch(client, CONFIGMAPS), "configmaps", bus=Bus()
    )
    await member.join()
    assert member.add_informer(informer, keys=True)
    assert member.add_informer(configmaps)
    tasks = [
        asyncio.create_task(informer.run(), name="pods informer"),
        asyncio.create_task(configmaps.run(), name="configmaps informer"),
    ]
    try:
        await asyncio.wait_for(informer.wait_synced(), 10)
        await asyncio.wait_for(configmaps.wait_synced(), 10)
        labels = {"ring": "pycm", "member": "pycm-a"}
        # (Each namespace may hold a kube-root-ca.crt besides c0 and c1.)
        cms = len(configmaps.indexer)
        assert cms >= 2 * len(NAMESPACES)
        assert registry.get_sample_value("controller_sharding_keys_owned", labels) == 6
        assert registry.get_sample_value("controller_sharding_objects_cached", labels) == 6 + cms
        other = _membership(client, "pycm-b", clock, None, None)
        await other.tick()
        for _ in range(3):  # pycm-a reads pycm-b, publishes the two-member view
            clock.advance(2.0)
            await member.membership.tick()
            member.reshard_if_moved()
            await other.tick()
        relists = [e for e in bus.recent() if isinstance(e, ShardRelisted)]
        assert relists, "no shard.relist after the ring changed"
        first, last = relists[0], relists[-1]
        assert (first.member, first.informers) == ("pycm-a", 2)
        assert (first.keys_cached, first.objects_cached) == (6, 6 + cms)
        assert (first.key_resources, first.resources) == ("pods", "configmaps,pods")
        assert last.share == pytest.approx(Ring.of(["pycm-a", "pycm-b"]).share("pycm-a"))
        assert last.spans >= 1
        ring = Ring.of(["pycm-a", "pycm-b"])
        mine = {ns for ns in NAMESPACES if ring.owner(hash_field(ns)) == "pycm-a"}

        def namespaces(i: SharedIndexInformer) -> set[str]:
            return {k.split("/")[0] for k in i.indexer.list_keys()}

        async def settled() -> None:
            while namespaces(informer) != mine or namespaces(configmaps) != mine:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(settled(), 10)
        held = registry.get_sample_value("controller_sharding_keys_owned", labels)
        assert held == len(mine)
        cached = registry.get_sample_value("controller_sharding_objects_cached", labels)
        assert cached == len(mine) + len(configmaps.indexer) < 6 + cms
        # What pycm top and the dashboard fold from this member's events.
        state = State()
        state.apply_all(bus.recent())
        ring_state = state.snapshot()["sharding"]["pycm"]
        me = ring_state["members"]["pycm-a"]
        assert me["lease_live"] and me["view"] == "pycm-a,pycm-b"
        assert me["share"] == pytest.approx(ring.share("pycm-a"))
        assert me["relists"] == len(relists) and me["objects_cached"] == last.objects_cached
        assert (me["keys_cached"], me["key_resources"]) == (last.keys_cached, "pods")
        # (No informer reports in this stream: the relist's counts stand.)
        assert (me["keys"], me["objects"]) == (last.keys_cached, last.objects_cached)
        assert ring_state["members"]["pycm-b"]["reported"] is False  # seen in pycm-a's view
        kinds = [m["kind"] for m in ring_state["moves"]]
        assert kinds[0] == "joined" and "drain" in kinds and "relist" in kinds
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
