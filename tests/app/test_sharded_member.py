"""Two sharded members in one process against the emulator (ShardedListAndWatch on): each
informer holds its member's share, each key is reconciled by one member at a time, and when one
member leaves the other relists and takes its namespaces."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.api.sharding import hash_field
from pycm.app.sharding import ShardedMember
from pycm.cache.factory import default_list_watch
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import meta_namespace_key
from pycm.controller.worker import Controller
from pycm.kube import Client, load_config
from pycm.kube.resources import NAMESPACES as NAMESPACE_RESOURCE
from pycm.kube.resources import PODS
from pycm.sharding.gate import KeyAdmission
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import Membership, MembershipConfig
from pycm.sharding.ring import Ring
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from tests.app.shard_log import no_overlap, until

NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
TIMINGS = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    async with run_emulator(tls=False, kubelet=False, nodes=1, sharded_list_and_watch=True) as emu:
        c = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
        try:
            for ns in NAMESPACES:
                await c.create(NAMESPACE_RESOURCE, {"metadata": {"name": ns}})
                await c.create(PODS, _pod("p0", ns), namespace=ns)
            yield c
        finally:
            await c.aclose()


def _membership(client: Client, ring: str, name: str) -> Membership:
    return Membership(
        MembershipConfig(ring, name, **TIMINGS), ClientLeaseStore(client, "kube-system"), list
    )


class _Member:
    """A member with a pods informer and a controller that notes each reconcile's span."""

    def __init__(self, name: str, client: Client, log: list[tuple[str, str, float, float]]):
        self.name = name
        self.member = ShardedMember(_membership(client, "pycm", name))
        self.informer = SharedIndexInformer(default_list_watch(client, PODS), "pods", bus=Bus())

        async def sync(key: str) -> None:
            began = time.monotonic()
            await asyncio.sleep(0.02)
            log.append((name, key, began, time.monotonic()))

        self.controller = Controller(f"pods-{name}", sync, bus=Bus())
        key = meta_namespace_key
        self.informer.add_event_handler(
            HandlerFuncs(
                on_add=lambda obj, _: self.controller.enqueue(key(obj)),
                on_update=lambda _, obj: self.controller.enqueue(key(obj)),
                on_delete=lambda obj: self.controller.enqueue(key(obj)),
            )
        )
        self.member.add_controller(self.controller)
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.member.join()
        assert self.member.add_informer(self.informer)
        self.tasks = [
            asyncio.create_task(self.member.run(), name=f"{self.name} membership"),
            asyncio.create_task(self.informer.run(), name=f"{self.name} informer"),
            asyncio.create_task(self.controller.run(workers=2), name=f"{self.name} controller"),
        ]

    def held(self) -> set[str]:
        return set(self.informer.indexer.list_keys())

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@pytest.mark.asyncio
async def test_two_members_split_the_namespaces_then_one_takes_over_when_the_other_leaves(
    client: Client,
) -> None:
    log: list[tuple[str, str, float, float]] = []
    a, b = _Member("pycm-a", client, log), _Member("pycm-b", client, log)
    ring = Ring.of([a.name, b.name])
    owner = {ns: ring.owner(hash_field(ns)) for ns in NAMESPACES}
    assert set(owner.values()) == {a.name, b.name}
    try:
        await a.start()
        await b.start()
        both = frozenset({a.name, b.name})
        await until(
            lambda: (
                a.member.membership.claims.published == both
                and b.member.membership.claims.published == both
                and a.held() | b.held() == {f"{ns}/p0" for ns in NAMESPACES}
                and not a.held() & b.held()
            ),
            "both members on the ring of two, each caching its share",
        )
        for m in (a, b):
            assert {k.split("/")[0] for k in m.held()} == {
                ns for ns in NAMESPACES if owner[ns] == m.name
            }
        # A change in every namespace: reconciled by its namespace's owner only.
        mark = len(log)
        for ns in NAMESPACES:
            await client.create(PODS, _pod("p1", ns), namespace=ns)
        await until(
            lambda: {k for _, k, _, _ in log[mark:]} >= {f"{ns}/p1" for ns in NAMESPACES},
            "every new pod reconciled",
        )
        for member, key, _, _ in log[mark:]:
            assert member == owner[key.split("/")[0]], (member, key)
        # b leaves: drained and released, a relists and takes b's namespaces at once.
        b.member.stop()
        await until(lambda: b.member.membership.released.is_set(), "b released")
        await until(lambda: len(a.held()) == 2 * len(NAMESPACES), "a caches everything")
        mark = len(log)
        b_ns = next(ns for ns in NAMESPACES if owner[ns] == b.name)
        await client.create(PODS, _pod("p2", b_ns), namespace=b_ns)
        await until(lambda: any(k == f"{b_ns}/p2" for _, k, _, _ in log[mark:]), "b's ns by a")
        assert {m for m, k, _, _ in log[mark:] if k == f"{b_ns}/p2"} == {a.name}
    finally:
        await a.stop()
        await b.stop()
    no_overlap(log)


@pytest.mark.asyncio
async def test_a_member_takes_no_key_while_its_informers_relist_for_a_new_share() -> None:
    # The caches must hold the whole new share before its keys are taken, as a new leader waits
    # for its caches: the pods list of the relist is slowed down, and until it lands every key
    # waits ("relisting"), then the member's keys are taken again.
    async with run_emulator(tls=False, kubelet=False, nodes=1, sharded_list_and_watch=True) as emu:
        c = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
        try:
            for ns in NAMESPACES:
                await c.create(NAMESPACE_RESOURCE, {"metadata": {"name": ns}})
                await c.create(PODS, _pod("p0", ns), namespace=ns)
            log: list[tuple[str, str, float, float]] = []
            a, b = _Member("pycm-a", c, log), _Member("pycm-b", c, log)
            ring = Ring.of([a.name, b.name])
            b_ns = next(ns for ns in NAMESPACES if ring.owner(hash_field(ns)) == b.name)
            try:
                await a.start()
                await b.start()
                both = frozenset({a.name, b.name})
                await until(
                    lambda: (
                        a.member.membership.claims.published == both
                        and b.member.membership.claims.published == both
                        and len(a.held()) + len(b.held()) == len(NAMESPACES)
                    ),
                    "both members on the ring of two",
                )
                assert a.member.caches_current()
                emu.faults.add(
                    kind="latency", seconds=1.5, resource="pods", verb="list", duration=10
                )
                b.member.stop()
                draining = "sharded: claimed by another member until it drains"
                await until(
                    lambda: (
                        a.member.membership.claims.published == {a.name}
                        and a.member.gate.admit(f"{b_ns}/p0")[1] != draining
                    ),
                    "a alone, b's claim gone",
                )
                admission, why = a.member.gate.admit(f"{b_ns}/p0")
                assert (admission, why) == (
                    KeyAdmission.WAIT,
                    "sharded: the caches are relisting for a new share",
                )
                assert not a.member.caches_current()
                await until(lambda: a.member.caches_current(), "a's relist landed")
                assert f"{b_ns}/p0" in a.held()
                assert a.member.gate.admit(f"{b_ns}/p0") == (KeyAdmission.TAKE, "")
            finally:
                await a.stop()
                await b.stop()
        finally:
            await c.aclose()


@pytest.mark.asyncio
async def test_a_starting_member_settles_on_the_members_that_start_with_it(client: Client) -> None:
    # Two members start together: a's first read finds only itself (b has not written yet), so
    # without settling it would list the whole cluster; it reads again each period until the
    # ring holds, and its informers then start with its share of the two.
    a = ShardedMember(_membership(client, "settle", "pycm-a"))
    b = ShardedMember(_membership(client, "settle", "pycm-b"))
    await a.join()
    assert a.membership.claims.target(time.monotonic()) == {"pycm-a"}
    await b.join()
    assert await a.settle() == 2  # the ring changed once (b), then held for a period
    both = Ring.of(["pycm-a", "pycm-b"])
    selector = a.selector()
    assert selector is not None
    assert [(r.start, r.end) for r in selector.ranges] == both.spans("pycm-a")
    assert await b.settle() == 1  # b saw both at its join: it held at once
    assert a.reshard_if_moved() is False  # settled: no relist due at the informers' start
