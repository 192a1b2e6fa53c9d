"""Members on the emulator: their Leases over real HTTP, the ring they agree on, a graceful leave
that moves keys at once, a crash whose keys wait out the lease (a fake clock: ticks are driven
by the test, the API calls are real)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from pycm.kube.client import Client
from pycm.kube.resources import LEASES
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import (
    RING_LABEL,
    VIEW_ANNOTATION,
    Membership,
    MembershipConfig,
    layout_lease_name,
    lease_name,
)
from pycm.sharding.ring import Ring
from pycm.util.clock import FakeClock

NS = "kube-system"
_RNG = random.Random(5)
KEYS = [_RNG.randrange(1 << 64) for _ in range(200)]


def _members(client: Client, clock: FakeClock, names: list[str]) -> dict[str, Membership]:
    return {
        name: Membership(
            MembershipConfig("pycm", name, lease_duration=15, renew_deadline=10, retry_period=2),
            ClientLeaseStore(client, NS),
            lambda: (),
            clock=clock,
        )
        for name in names
    }


async def _rounds(members: dict[str, Membership], clock: FakeClock, count: int) -> None:
    for _ in range(count):
        for member in members.values():
            await member.tick()
        clock.advance(2.0)


def _takers(members: dict[str, Membership], key: int) -> list[str]:
    return [name for name, member in members.items() if member.may_take(key)]


@pytest.mark.asyncio
async def test_members_agree_on_the_ring_and_each_key_has_one_taker(
    kube: tuple[Client, Any],
) -> None:
    client, emu = kube
    clock = FakeClock()
    members = _members(client, clock, ["pycm-0", "pycm-1", "pycm-2"])
    await _rounds(members, clock, 3)
    ring = Ring.of(members)
    for member in members.values():
        assert member.claims.published == frozenset(members)
    for key in KEYS:
        assert _takers(members, key) == [ring.owner(key)]
    # The Leases, read with the official client (in a thread: it blocks, and the emulator
    # serves from this loop): one a member, holder and view set.
    api = k8s_config.new_client_from_config(config_file=str(emu.kubeconfig_path))
    leases = await asyncio.to_thread(
        k8s.CoordinationV1Api(api).list_namespaced_lease, NS, label_selector=f"{RING_LABEL}=pycm"
    )
    assert sorted(lease.metadata.name for lease in leases.items) == [
        "pycm-pycm-0",
        "pycm-pycm-1",
        "pycm-pycm-2",
    ]
    for lease in leases.items:
        assert lease.metadata.annotations[VIEW_ANNOTATION] == "pycm-0,pycm-1,pycm-2"
        assert lease.spec.holder_identity == lease.metadata.name.removeprefix("pycm-")
        assert lease.spec.renew_time is not None and lease.spec.lease_duration_seconds == 15


@pytest.mark.asyncio
async def test_a_member_that_leaves_releases_its_keys_at_once(kube: tuple[Client, Any]) -> None:
    client, _ = kube
    clock = FakeClock()
    members = _members(client, clock, ["pycm-0", "pycm-1", "pycm-2"])
    await _rounds(members, clock, 3)
    leaving = members.pop("pycm-2")
    leaving.stop()
    await leaving.tick()  # drained (nothing in flight): writes the empty view
    await leaving.tick()  # then deletes its Lease
    assert leaving.released.is_set()
    await _rounds(members, clock, 2)  # 4 s: far inside the 15 s lease
    ring = Ring.of(members)
    for key in KEYS:
        assert _takers(members, key) == [ring.owner(key)]
    page = await client.list(LEASES, namespace=NS, label_selector=f"{RING_LABEL}=pycm")
    assert sorted(i["metadata"]["name"] for i in page["items"]) == ["pycm-pycm-0", "pycm-pycm-1"]


@pytest.mark.asyncio
async def test_a_crashed_members_keys_move_after_its_lease(kube: tuple[Client, Any]) -> None:
    client, _ = kube
    clock = FakeClock()
    members = _members(client, clock, ["pycm-0", "pycm-1"])
    await _rounds(members, clock, 3)
    members.pop("pycm-1")  # no more ticks: crashed
    crashed_keys = [k for k in KEYS if Ring.of(["pycm-0", "pycm-1"]).owner(k) == "pycm-1"]
    survivor = members["pycm-0"]
    waited = 0.0
    while not all(survivor.may_take(k) for k in crashed_keys):
        assert not any(survivor.may_take(k) for k in crashed_keys), "all at once, not piecemeal"
        await survivor.tick()
        clock.advance(2.0)
        waited += 2.0
        assert waited < 30
    assert 15 - 2 <= waited <= 15 + 2 * 2


def test_lease_names_are_dns_labels_and_distinct() -> None:
    assert lease_name("pycm", "pycm-0") == "pycm-pycm-0"
    a, b = lease_name("pycm", "Host_1234"), lease_name("pycm", "host-1234")
    assert a != b and a.startswith("pycm-host-1234-")
    long = lease_name("pycm", "x" * 100)
    assert len(long) <= 63
    # No member's Lease is the ring's layout Lease, whatever its identity.
    assert lease_name("pycm", "layout") != layout_lease_name("pycm") == "pycm-layout"


def test_membership_config_refuses_unsafe_timings_and_bad_identities() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        MembershipConfig("pycm", "a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="no ','"):
        MembershipConfig("pycm", "a,b")
