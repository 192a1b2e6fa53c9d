"""uid sharding in one process against the emulator (ShardedListAndWatch on): members whose
controller reconciles ConfigMaps of ONE namespace, each key owned by the ring position of its
object's uid. Each member caches and reconciles only its share, together all of them, no key by
two at once; a member joining takes about 1/N of the keys, from the others, without a key
reconciled twice at once."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID, hash_field
from pycm.app.sharding import ShardedMember
from pycm.cache.factory import default_list_watch
from pycm.cache.listwatch import ClientListWatch
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import meta_namespace_key
from pycm.controller.worker import Controller
from pycm.kube import Client, load_config
from pycm.kube.resources import CONFIGMAPS, NAMESPACES
from pycm.sharding.gate import KeyAdmission
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import Membership, MembershipConfig
from pycm.sharding.ring import Ring
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from tests.app.shard_log import Reconcile, no_overlap, until

pytestmark = pytest.mark.asyncio

NAMESPACE = "shared"
KEYS = 64  # enough that the share a joining member takes is near its ring share
TIMINGS = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    async with run_emulator(tls=False, kubelet=False, nodes=1, sharded_list_and_watch=True) as emu:
        c = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
        try:
            await c.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            for i in range(KEYS):
                cm = {"metadata": {"name": f"cm-{i:02}", "namespace": NAMESPACE}, "data": {}}
                await c.create(CONFIGMAPS, cm, namespace=NAMESPACE)
            yield c
        finally:
            await c.aclose()


def _membership(client: Client, name: str) -> Membership:
    return Membership(
        MembershipConfig("pycm", name, **TIMINGS), ClientLeaseStore(client, "kube-system"), list
    )


class _Member:
    """A member whose controller reconciles the ConfigMaps of its share of uids."""

    def __init__(self, name: str, client: Client, log: list[Reconcile]) -> None:
        self.name = name
        self.member = ShardedMember(_membership(client, name))
        self.informer = SharedIndexInformer(
            default_list_watch(client, CONFIGMAPS), "configmaps", bus=Bus()
        )

        async def sync(key: str) -> None:
            began = time.monotonic()
            await asyncio.sleep(0.02)
            log.append((name, key, began, time.monotonic()))

        self.controller = Controller(f"cm-{name}", sync, bus=Bus())
        # What ControllerBuilder.build records for the manager: the cache of its keys' objects.
        self.controller.primary = self.informer
        self.controller.watched = (self.informer,)
        enqueue = self.controller.enqueue
        self.informer.add_event_handler(
            HandlerFuncs(
                on_add=lambda obj, _: enqueue(meta_namespace_key(obj)),
                on_update=lambda _, obj: enqueue(meta_namespace_key(obj)),
                on_delete=lambda obj: enqueue(meta_namespace_key(obj)),
            )
        )
        self.member.add_controller(self.controller, FIELD_UID)
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.member.join()
        assert self.member.add_informer(self.informer, FIELD_UID, keys=True)
        self.tasks = [
            asyncio.create_task(self.member.run(), name=f"{self.name} membership"),
            asyncio.create_task(self.informer.run(), name=f"{self.name} informer"),
            asyncio.create_task(self.controller.run(workers=2), name=f"{self.name} controller"),
        ]

    def held(self) -> set[str]:
        return {k for k in self.informer.indexer.list_keys() if k.startswith(f"{NAMESPACE}/")}

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _uids(client: Client) -> dict[str, str]:
    listed = await client.list(CONFIGMAPS, namespace=NAMESPACE)
    return {
        f"{NAMESPACE}/{cm['metadata']['name']}": cm["metadata"]["uid"] for cm in listed["items"]
    }


def _owners(members: list[_Member], uids: dict[str, str]) -> dict[str, str]:
    ring = Ring.of([m.name for m in members])
    return {key: str(ring.owner(hash_field(uid))) for key, uid in uids.items()}


def _settled(members: list[_Member], owner: dict[str, str]) -> bool:
    view = frozenset(m.name for m in members)
    return all(
        m.member.membership.claims.published == view
        and m.held() == {k for k, o in owner.items() if o == m.name}
        and m.member.caches_current()
        for m in members
    )


async def _touch_all(client: Client, keys: list[str], round_: int) -> None:
    for key in keys:
        name = key.partition("/")[2]
        await client.patch(CONFIGMAPS, name, {"data": {"round": str(round_)}}, namespace=NAMESPACE)


async def test_uid_members_split_one_namespace_and_a_joining_member_takes_about_a_quarter(
    client: Client,
) -> None:
    log: list[Reconcile] = []
    members = [_Member(f"pycm-{n}", client, log) for n in "abc"]
    joiner = _Member("pycm-d", client, log)
    uids = await _uids(client)
    keys = sorted(uids)
    assert len(keys) >= KEYS  # (the namespace's own kube-root-ca.crt may be one more)
    owner3 = _owners(members, uids)
    assert set(owner3.values()) == {m.name for m in members}, "every member has a share"
    try:
        for m in members:
            await m.start()
        await until(lambda: _settled(members, owner3), "three members, each its share of uids")
        for m in members:  # the share is the server's answer to a selector over uid
            lw = m.informer.reflector.list_watch
            assert isinstance(lw, ClientListWatch) and lw.shard_selector is not None
            assert lw.shard_selector.field == FIELD_UID and lw.server_filters is True
        # One change to every ConfigMap: each reconciled by its uid's owner, together all.
        mark = len(log)
        await _touch_all(client, keys, 1)
        await until(lambda: {k for _, k, _, _ in log[mark:]} >= set(keys), "every key reconciled")
        wrong = [(m, k) for m, k, _, _ in log[mark:] if k in owner3 and m != owner3[k]]
        assert not wrong, f"reconciled by a member that does not own the uid: {wrong[:5]}"
        # A fourth member joins while every key changes again (drains with keys in flight):
        # the keys that move all go to it, about its share of them.
        everyone = [*members, joiner]
        owner4 = _owners(everyone, uids)
        churn = asyncio.create_task(_touch_all(client, keys, 2), name="round 2")
        await joiner.start()
        await until(lambda: _settled(everyone, owner4), "four members, each its share", 10)
        await churn
        moved = {k for k in keys if owner3[k] != owner4[k]}
        assert moved == {k for k in keys if owner4[k] == joiner.name}, "keys moved between old"
        share = Ring.of([m.name for m in everyone]).share(joiner.name)
        expected, spread = share * len(keys), math.sqrt(len(keys) * share * (1 - share))
        assert abs(len(moved) - expected) <= 4 * spread + 1, (len(moved), expected)
        assert 0 < len(moved) < len(keys) / 2
        mark = len(log)
        await _touch_all(client, keys, 3)
        await until(lambda: {k for _, k, _, _ in log[mark:]} >= set(keys), "every key again")
        wrong = [(m, k) for m, k, _, _ in log[mark:] if k in owner4 and m != owner4[k]]
        assert not wrong, f"reconciled by a member that does not own the uid: {wrong[:5]}"
        assert joiner.member.keys_cached() == len(moved) == len(joiner.held())
    finally:
        for m in [*members, joiner]:
            await m.stop()
    no_overlap(log)


async def test_uid_sharding_takes_cluster_scoped_primaries_and_drops_keys_not_cached(
    client: Client,
) -> None:
    member = ShardedMember(_membership(client, "pycm-a"))
    await member.join()
    # A cluster-scoped resource: namespace sharding leaves it whole, uid sharding divides it.
    whole = SharedIndexInformer(default_list_watch(client, NAMESPACES), "namespaces", bus=Bus())
    assert not member.add_informer(whole, FIELD_NAMESPACE)
    assert whole.reflector.list_watch.shard_selector is None  # type: ignore[attr-defined]
    divided = SharedIndexInformer(default_list_watch(client, NAMESPACES), "namespaces", bus=Bus())
    assert member.add_informer(divided, FIELD_UID, keys=True)
    selector = divided.reflector.list_watch.shard_selector  # type: ignore[attr-defined]
    assert selector is not None and selector.field == FIELD_UID
    # The gate reads the key's uid from the controller's primary cache: a key whose object is
    # not there is another member's (or gone): dropped, saying why.
    controller = Controller("namespaces", lambda key: asyncio.sleep(0), bus=Bus())
    controller.primary = divided
    member.add_controller(controller, FIELD_UID)
    gate = controller.key_gate
    assert gate is not None and gate is not member.gate
    assert gate.admit("nowhere") == (
        KeyAdmission.DROP,
        "sharded: not in this member's share of the cache",
    )
    task = asyncio.create_task(divided.run(), name="namespaces informer")
    try:
        await asyncio.wait_for(divided.wait_synced(), 10)
        obj = divided.indexer.get_by_key(NAMESPACE)
        assert obj is not None
        assert gate.hash_of(NAMESPACE) == hash_field(obj["metadata"]["uid"])
        assert gate.admit(NAMESPACE) == (KeyAdmission.TAKE, "")  # alone on the ring: all its
        assert member.keys_cached() == member.objects_cached() == len(divided.indexer)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_uid_sharding_refuses_a_controller_without_a_primary_cache(client: Client) -> None:
    member = ShardedMember(_membership(client, "pycm-a"))
    controller = Controller("hand-made", lambda key: asyncio.sleep(0), bus=Bus())
    with pytest.raises(ValueError) as caught:
        member.add_controller(controller, FIELD_UID)
    assert str(caught.value) == (
        "controller 'hand-made': uid sharding needs the cache of the objects its keys name "
        "(build it with ControllerBuilder.for_)"
    )
    with pytest.raises(ValueError, match=r"unsupported shard field 'object\.metadata\.name'"):
        member.add_controller(controller, "object.metadata.name")


async def test_a_deleted_objects_key_is_reconciled_by_the_owner_of_its_uid(
    client: Client,
) -> None:
    # The object is gone from every cache when its delete is handled: the gate hashes the uid
    # the cache last held under the key, so the delete's reconcile is its owner's, once.
    log: list[Reconcile] = []
    members = [_Member(f"pycm-{n}", client, log) for n in "ab"]
    uids = await _uids(client)
    owner = _owners(members, uids)
    doomed = sorted(uids)[:8]
    assert len({owner[k] for k in doomed}) == 2, "both members own some of the deleted keys"
    try:
        for m in members:
            await m.start()
        await until(lambda: _settled(members, owner), "two members, each its share of uids")
        mark = len(log)
        for key in doomed:
            await client.delete(CONFIGMAPS, key.partition("/")[2], namespace=NAMESPACE)
        await until(lambda: {k for _, k, _, _ in log[mark:]} >= set(doomed), "deletes reconciled")
        await asyncio.sleep(0.3)  # a wrong member's reconcile would come as soon
        by = [(m, k) for m, k, _, _ in log[mark:] if k in doomed]
        assert all(m == owner[k] for m, k in by), by
        assert all(not m.held() & set(doomed) for m in members)
    finally:
        for m in members:
            await m.stop()
    no_overlap(log)
