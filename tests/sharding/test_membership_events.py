"""What a member reports: its trace events and metrics through a join, a drain that waits for an
in-flight key, a fence and a leave (the emulator over HTTP, a fake clock driving the ticks)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycm.kube.client import Client
from pycm.sharding.leases import ClientLeaseStore
from pycm.sharding.membership import LeaseStore, Membership, MembershipConfig
from pycm.sharding.metrics import ShardingMetrics
from pycm.sharding.ring import Ring
from pycm.trace.bus import Bus, default_bus
from pycm.trace.events import Event
from pycm.trace.kinds import (
    ShardDrainFinished,
    ShardDrainStarted,
    ShardMemberFenced,
    ShardMemberJoined,
    ShardMemberLeft,
    ShardMemberUnfenced,
    ShardViewChanged,
)
from pycm.util.clock import FakeClock

NS = "kube-system"
THREE = ["pycm-0", "pycm-1", "pycm-2"]


class _FlakyStore:
    """A lease store whose writes fail while ``down`` (the API unreachable for this member)."""

    def __init__(self, inner: LeaseStore) -> None:
        self.inner = inner
        self.down = False

    async def write(self, name: str, body: dict[str, Any]) -> None:
        if self.down:
            raise ConnectionError("connection refused")
        await self.inner.write(name, body)

    async def read_ring(self, ring: str) -> list[dict[str, Any]]:
        return await self.inner.read_ring(ring)

    async def delete(self, name: str) -> None:
        await self.inner.delete(name)


class _Rig:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.clock = FakeClock()
        self.members: dict[str, Membership] = {}
        self.buses: dict[str, Bus] = {}
        self.stores: dict[str, _FlakyStore] = {}
        self.in_flight: dict[str, list[int]] = {}
        self.registry = CollectorRegistry()
        self.metrics = ShardingMetrics(self.registry)

    def add(self, name: str, *, metrics: bool = False) -> Membership:
        bus = self.buses[name] = Bus(instance=name, clock=self.clock)
        store = self.stores[name] = _FlakyStore(ClientLeaseStore(self.client, NS))
        flight = self.in_flight[name] = []
        member = self.members[name] = Membership(
            MembershipConfig("pycm", name, lease_duration=15, renew_deadline=10, retry_period=2),
            store,
            lambda: flight,
            clock=self.clock,
            bus=bus,
            metrics=self.metrics if metrics else None,
        )
        return member

    async def rounds(self, count: int) -> None:
        for _ in range(count):
            for member in list(self.members.values()):
                if not member.released.is_set():
                    await member.tick()
            self.clock.advance(2.0)

    def events(self, name: str, cls: type[Event]) -> list[Any]:
        return [e for e in self.buses[name].recent() if isinstance(e, cls)]

    def sample(self, metric: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(metric, labels)


@pytest.mark.asyncio
async def test_members_report_joining_and_the_ring_they_agree_on(kube: tuple[Client, Any]) -> None:
    rig = _Rig(kube[0])
    for name in THREE:
        rig.add(name, metrics=name == "pycm-0")
    await rig.rounds(3)
    ring = Ring.of(THREE)
    for name in THREE:
        (joined,) = rig.events(name, ShardMemberJoined)
        assert (joined.ring, joined.member, joined.instance) == ("pycm", name, name)
        assert name in joined.view.split(",")
        last = rig.events(name, ShardViewChanged)[-1]
        assert last.view == last.target == "pycm-0,pycm-1,pycm-2"
        assert last.members == 3
        assert last.share == pytest.approx(ring.share(name))
        assert last.target_share == pytest.approx(ring.share(name))
    # The first member published itself alone, then gave two thirds away: a drain with no key
    # in flight, finished at once.
    (drained,) = rig.events("pycm-0", ShardDrainFinished)
    assert drained.keys == 0 and drained.duration_ms == 0.0
    assert drained.share_dropped == pytest.approx(1 - ring.share("pycm-0"))
    assert not rig.events("pycm-0", ShardDrainStarted)  # it never had to wait
    assert rig.sample("controller_sharding_members", ring="pycm") == 3
    share = rig.sample("controller_sharding_share_ratio", ring="pycm", member="pycm-0")
    assert share == pytest.approx(ring.share("pycm-0"))
    assert rig.sample("controller_sharding_drains_total", ring="pycm") == 1
    assert rig.sample("controller_sharding_lease_duration_seconds", ring="pycm") == 15
    # Who joined and left, as each report saw it: the last one of pycm-2 names nobody new.
    seen = [(e.joined, e.left) for e in rig.events("pycm-2", ShardViewChanged)]
    assert seen[0][0].split(",")[-1] == "pycm-2" and all(left == "" for _, left in seen)


@pytest.mark.asyncio
async def test_a_drain_waits_for_the_in_flight_key_and_reports_how_long(
    kube: tuple[Client, Any],
) -> None:
    rig = _Rig(kube[0])
    for name in THREE:
        rig.add(name, metrics=name == "pycm-0")
    await rig.rounds(3)
    before, after = Ring.of(THREE), Ring.of([*THREE, "pycm-3"])
    moving = next(
        h
        for h in range(0, 1 << 64, (1 << 64) // 4099)
        if before.owner(h) == "pycm-0" and after.owner(h) == "pycm-3"
    )
    rig.in_flight["pycm-0"].append(moving)
    rig.add("pycm-3")
    # Round 1: pycm-3 writes its Lease after pycm-0 read the ring; round 2: pycm-0 reads it;
    # round 3: pycm-0 must wait for its key before it publishes the new view.
    await rig.rounds(3)
    (started,) = rig.events("pycm-0", ShardDrainStarted)
    assert started.keys == 1
    dropped = before.share("pycm-0") - after.share("pycm-0")
    assert started.share_dropped == pytest.approx(dropped)
    assert not rig.events("pycm-0", ShardDrainFinished)[1:]  # only the join's, none yet
    age = rig.sample("controller_sharding_drain_in_progress_seconds", ring="pycm", member="pycm-0")
    assert age is not None and age >= 2.0
    rig.clock.advance(3.0)
    rig.in_flight["pycm-0"].clear()  # the reconcile finished
    await rig.rounds(1)
    finished = rig.events("pycm-0", ShardDrainFinished)[-1]
    assert finished.keys == 1
    assert finished.share_dropped == pytest.approx(dropped)
    assert finished.duration_ms == pytest.approx(5000.0)  # the rest of round 3 (2 s), then 3 s
    assert (
        rig.sample("controller_sharding_drain_in_progress_seconds", ring="pycm", member="pycm-0")
        == 0
    )
    assert rig.sample("controller_sharding_drain_duration_seconds_count", ring="pycm") == 2
    # The join's drain (0 s) and this one (5 s): cumulative buckets.
    bucket = "controller_sharding_drain_duration_seconds_bucket"
    assert rig.sample(bucket, ring="pycm", le="2.0") == 1
    assert rig.sample(bucket, ring="pycm", le="5.0") == 2
    last = rig.events("pycm-0", ShardViewChanged)[-1]
    assert last.view == last.target == "pycm-0,pycm-1,pycm-2,pycm-3"
    assert any(e.joined == "pycm-3" for e in rig.events("pycm-0", ShardViewChanged))


@pytest.mark.asyncio
async def test_a_member_whose_renews_fail_reports_fenced_then_unfenced(
    kube: tuple[Client, Any],
) -> None:
    rig = _Rig(kube[0])
    for name in THREE:
        rig.add(name, metrics=name == "pycm-1")
    await rig.rounds(2)
    rig.stores["pycm-1"].down = True
    await rig.rounds(4)  # 8 s: inside the 10 s renew deadline
    assert not rig.events("pycm-1", ShardMemberFenced)
    await rig.rounds(2)
    (fenced,) = rig.events("pycm-1", ShardMemberFenced)
    assert fenced.renew_age_s >= 10.0 and fenced.renew_deadline_s == 10.0
    assert rig.sample("controller_sharding_lease_lost_total", ring="pycm") == 1
    rig.stores["pycm-1"].down = False
    await rig.rounds(1)
    (back,) = rig.events("pycm-1", ShardMemberUnfenced)
    assert back.fenced_s > 0
    assert len(rig.events("pycm-1", ShardMemberFenced)) == 1


@pytest.mark.asyncio
async def test_a_member_that_leaves_drains_its_whole_share_then_reports_leaving(
    kube: tuple[Client, Any],
) -> None:
    rig = _Rig(kube[0])
    for name in THREE:
        rig.add(name)
    await rig.rounds(3)
    leaving = rig.members["pycm-2"]
    leaving.stop()
    await rig.rounds(2)
    assert leaving.released.is_set()
    finished = rig.events("pycm-2", ShardDrainFinished)[-1]
    assert finished.share_dropped == pytest.approx(Ring.of(THREE).share("pycm-2"))
    (left,) = rig.events("pycm-2", ShardMemberLeft)
    assert left.member == "pycm-2" and left.on_ring_s == pytest.approx(6.0)
    await rig.rounds(1)
    last = rig.events("pycm-0", ShardViewChanged)[-1]
    assert last.view == "pycm-0,pycm-1" and last.members == 2
    assert any(e.left == "pycm-2" for e in rig.events("pycm-0", ShardViewChanged))


@pytest.mark.asyncio
async def test_a_member_without_a_bus_emits_nothing(kube: tuple[Client, Any]) -> None:
    """Unlike the elector, a member falls back on no process-wide bus."""
    client, _ = kube
    bus = default_bus()
    member = Membership(
        MembershipConfig("pycm", "pycm-0", lease_duration=15, renew_deadline=10, retry_period=2),
        ClientLeaseStore(client, NS),
        lambda: (),
        clock=FakeClock(),
    )
    await member.tick()
    await member.tick()
    assert member.claims.published == frozenset({"pycm-0"})
    assert not [e for e in bus.recent() if e.KIND.startswith("shard.")]


@pytest.mark.asyncio
async def test_a_drain_the_ring_undoes_ends_without_a_finish(kube: tuple[Client, Any]) -> None:
    """pycm-3 joins and leaves again while pycm-0 still waits for its key: pycm-0 gives nothing
    up, its drain's age drops to 0 and its view report shows the view matching the target."""
    rig = _Rig(kube[0])
    for name in THREE:
        rig.add(name, metrics=name == "pycm-0")
    await rig.rounds(3)
    before, after = Ring.of(THREE), Ring.of([*THREE, "pycm-3"])
    moving = next(
        h
        for h in range(0, 1 << 64, (1 << 64) // 4099)
        if before.owner(h) == "pycm-0" and after.owner(h) == "pycm-3"
    )
    rig.in_flight["pycm-0"].append(moving)
    newcomer = rig.add("pycm-3")
    await rig.rounds(3)
    assert len(rig.events("pycm-0", ShardDrainStarted)) == 1
    newcomer.stop()
    await rig.rounds(3)  # pycm-3 releases; pycm-0 reads it gone
    assert newcomer.released.is_set()
    age = rig.sample("controller_sharding_drain_in_progress_seconds", ring="pycm", member="pycm-0")
    assert age == 0
    assert len(rig.events("pycm-0", ShardDrainFinished)) == 1  # the join's only
    last = rig.events("pycm-0", ShardViewChanged)[-1]
    assert last.view == last.target == "pycm-0,pycm-1,pycm-2"
    assert rig.sample("controller_sharding_drains_total", ring="pycm") == 1
