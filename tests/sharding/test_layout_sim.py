"""Three members on the emulator over namespaces ``team-0`` … ``team-8`` (which FNV-1a puts on one
member of the plain ring): one writes the layout Lease, all adopt it (each one's sharded shape
moves), each owns three, and the emulator's ``shardSelector`` built from each member's share
sends it exactly its namespaces' objects. Ticks are driven by the test on a fake clock; the API
calls are real HTTP."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.api.sharding import hash_field
from pycm.app.sharding import ShardedMember
from pycm.kube.client import Client
from pycm.kube.config import load_config
from pycm.kube.resources import CONFIGMAPS, LEASES, NAMESPACES
from pycm.sharding.claims import Claim
from pycm.sharding.layout import Layout
from pycm.sharding.layout_writer import LayoutWriter
from pycm.sharding.leases import ClientLeaseStore, namespace_names
from pycm.sharding.membership import (
    KNOTS_ANNOTATION,
    LAYOUT_ANNOTATION,
    RING_LABEL,
    Membership,
    MembershipConfig,
    layout_lease_name,
)
from pycm.sharding.ring import Ring
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import ShardLayoutChanged
from pycm.util.clock import FakeClock
from tests.deploy.rbac import DEPLOY, MANAGER_ROLES, SHARDING_ROLE, Call, grants, record_calls

LEASE_NS = "pycm-system"  # the deploy manifests' namespace: their Roles are there
TEAMS = [f"team-{i}" for i in range(9)]
NAMES = ["pycm-0", "pycm-1", "pycm-2"]
MEMBER_AGENT = "pycm/sharding-test"
LAYOUT_ROLE = DEPLOY / "kubernetes" / "sharded" / "clusterrole.yaml"


class _Rig:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[Call] = []  # every resource request the members made


@pytest_asyncio.fixture
async def rig() -> AsyncIterator[_Rig]:
    async with run_emulator(tls=False, kubelet=False, nodes=1, sharded_list_and_watch=True) as emu:
        c = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1))
        rig = _Rig(c)
        try:
            for ns in [LEASE_NS, *TEAMS]:
                await c.create(NAMESPACES, {"metadata": {"name": ns}})
            for ns in TEAMS:
                await c.create(CONFIGMAPS, {"metadata": {"name": "cm"}}, namespace=ns)

            record_calls(emu, rig.calls, lambda r: r.headers.get("user-agent") == MEMBER_AGENT)
            yield rig
        finally:
            await c.aclose()


def _members(client: Client, clock: FakeClock, bus: Bus) -> dict[str, ShardedMember]:
    client = client.with_user_agent(MEMBER_AGENT)
    return {
        name: ShardedMember(
            Membership(
                MembershipConfig(
                    "pycm", name, lease_duration=15, renew_deadline=10, retry_period=2
                ),
                ClientLeaseStore(client, LEASE_NS),
                lambda: (),
                clock=clock,
                bus=bus,
            )
        )
        for name in NAMES
    }


async def _rounds(members: dict[str, ShardedMember], clock: FakeClock, count: int) -> set[str]:
    """``count`` periods of every member; the members whose sharded shape moved."""
    moved: set[str] = set()
    for _ in range(count):
        for name, member in members.items():
            await member.membership.tick()
            if member.reshard_if_moved():
                moved.add(name)
        clock.advance(2.0)
    return moved


async def _layout_lease(client: Client) -> dict[str, Any]:
    return await client.get(LEASES, layout_lease_name("pycm"), namespace=LEASE_NS)


@pytest.mark.asyncio
async def test_three_members_write_adopt_and_select_by_one_layout(rig: _Rig) -> None:
    client = rig.client
    plain = Ring.of(NAMES)
    assert len({plain.owner(hash_field(ns)) for ns in TEAMS}) == 1, "the defect, as an anchor"
    clock, bus = FakeClock(), Bus()
    members = _members(client, clock, bus)
    for member in members.values():
        await member.join()
    await _rounds(members, clock, 4)
    for member in members.values():  # settled on the plain ring: no layout Lease yet
        assert member.membership.claims.published_claim == Claim(frozenset(NAMES), "")
    # One member gets a writer (any may write; one is enough to see the others follow).
    writer_client = client.with_user_agent(MEMBER_AGENT)
    members["pycm-1"].membership.layouts = LayoutWriter(
        ClientLeaseStore(writer_client, LEASE_NS),
        lambda: namespace_names(writer_client),
        every=3,
    )
    moved = await _rounds(members, clock, 8)  # a full listing period, then write and adopt
    assert moved == set(NAMES), "a new layout is a change of every member's shape: relists"

    lease = await _layout_lease(client)
    annotations = lease["metadata"]["annotations"]
    layout = Layout.decode(annotations[KNOTS_ANNOTATION])
    assert layout.digest == annotations[LAYOUT_ANNOTATION] != ""
    assert lease["metadata"]["labels"] == {RING_LABEL: "pycm"}
    assert not lease["spec"].get("holderIdentity"), "never counted as a member"
    written = [e for e in bus.recent() if isinstance(e, ShardLayoutChanged)]
    assert len(written) == 1 and written[0].digest == layout.digest
    assert (written[0].member, written[0].previous, written[0].members) == ("pycm-1", "", 3)

    # Every member publishes its claim under that layout, beside its view.
    page = await client.list(LEASES, namespace=LEASE_NS, label_selector=f"{RING_LABEL}=pycm")
    on = {
        i["metadata"]["name"]: i["metadata"]["annotations"].get(LAYOUT_ANNOTATION)
        for i in page["items"]
        if i["spec"].get("holderIdentity")
    }
    assert on == {f"pycm-{name}": layout.digest for name in NAMES}

    # Each member owns three of the nine teams, and one member takes each key.
    ring = Ring.of(NAMES, layout=layout)
    owners = {ns: ring.owner(hash_field(ns)) for ns in TEAMS}
    assert sorted(Counter(owners.values()).values()) == [3, 3, 3]
    for ns in TEAMS:
        takers = [n for n, m in members.items() if m.membership.may_take(hash_field(ns))]
        assert takers == [owners[ns]], ns

    # The selector each member's informers would carry: the emulator sends it exactly its own.
    for name, member in members.items():
        selector = member.selector()
        assert selector is not None
        got = await client.list(CONFIGMAPS, namespace=None, shard_selector=str(selector))
        mine = {i["metadata"]["namespace"] for i in got["items"]}
        assert mine & set(TEAMS) == {ns for ns, owner in owners.items() if owner == name}

    # Settled: later lists find the layout balanced and write nothing more.
    version = lease["metadata"]["resourceVersion"]
    assert not await _rounds(members, clock, 10), "no member's share moved again"
    assert (await _layout_lease(client))["metadata"]["resourceVersion"] == version
    assert [e for e in bus.recent() if isinstance(e, ShardLayoutChanged)] == written

    # What the members called is what the sharded overlay grants (the layout's namespaces list
    # by its ClusterRole), and the overlay's ClusterRole is used.
    rules = grants((*MANAGER_ROLES, SHARDING_ROLE, LAYOUT_ROLE))
    refused = sorted(str(c) for c in rig.calls if not any(g.allows(c) for g in rules))
    assert not refused, f"used but not granted: {refused}"
    assert all(any(g.allows(c) for c in rig.calls) for g in grants([LAYOUT_ROLE]))


@pytest.mark.asyncio
async def test_a_broken_layout_lease_counts_as_none_and_is_replaced(
    rig: _Rig, caplog: pytest.LogCaptureFixture
) -> None:
    client = rig.client
    store = ClientLeaseStore(client, LEASE_NS)
    name = layout_lease_name("pycm")
    broken = {
        "metadata": {
            "name": name,
            "labels": {RING_LABEL: "pycm"},
            "annotations": {LAYOUT_ANNOTATION: "0123456789ab", KNOTS_ANNOTATION: "zz:zz"},
        },
        "spec": {},
    }
    assert await store.write_layout(name, broken, "")
    assert not await store.write_layout(name, broken, ""), "a second create conflicts"
    version = (await _layout_lease(client))["metadata"]["resourceVersion"]
    assert not await store.write_layout(name, broken, str(int(version) - 1)), "a stale update"

    clock = FakeClock()
    members = _members(client, clock, Bus())
    members["pycm-0"].membership.layouts = LayoutWriter(
        ClientLeaseStore(client, LEASE_NS), lambda: namespace_names(client), every=3
    )
    for member in members.values():
        await member.join()
    await _rounds(members, clock, 12)
    warnings = [r.getMessage() for r in caplog.records if "ignoring layout Lease" in r.message]
    assert len(warnings) == len(NAMES), "each member says so once"
    lease = await _layout_lease(client)
    layout = Layout.decode(lease["metadata"]["annotations"][KNOTS_ANNOTATION])
    assert layout.digest == lease["metadata"]["annotations"][LAYOUT_ANNOTATION] != ""
    for member in members.values():
        assert member.membership.claims.published_claim == Claim(frozenset(NAMES), layout.digest)
