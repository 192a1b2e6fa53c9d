"""A sharded worker asks its key gate before each key: it reconciles its own keys, forgets
another member's (``queue.drop`` names the owner) and retries a key another member still
claims — with the real :class:`ShardKeyGate` over a member's claims on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from pycm.api.sharding import hash_field
from pycm.controller.worker import Controller
from pycm.sharding.claims import PeerRecord
from pycm.sharding.gate import KeyAdmission, ShardKeyGate, namespace_of
from pycm.sharding.membership import Membership, MembershipConfig
from pycm.sharding.ring import Ring
from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemDropped
from pycm.util.clock import FakeClock

NAMESPACES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
BOTH = frozenset({"a", "b"})


class _NoStore:
    async def write(self, name: str, body: dict[str, object]) -> None:
        raise AssertionError("the test drives the claims directly")

    async def read_ring(self, ring: str) -> list[dict[str, object]]:
        raise AssertionError("the test drives the claims directly")

    async def delete(self, name: str) -> None:
        raise AssertionError("the test drives the claims directly")


def _member(clock: FakeClock) -> Membership:
    membership = Membership(MembershipConfig("pycm", "a"), _NoStore(), lambda: (), clock=clock)
    now = clock.monotonic()
    membership.claims.renewed(now, BOTH)
    membership.claims.observed(now, [PeerRecord("b", BOTH, "1")])
    return membership


def _owned(owner: str) -> list[str]:
    ring = Ring.of(BOTH)
    return [ns for ns in NAMESPACES if ring.owner(hash_field(ns)) == owner]


def test_namespace_of_keys() -> None:
    assert namespace_of("team/web") == "team"
    assert namespace_of("node-1") == ""


def test_shard_key_gate_admits_by_the_claims() -> None:
    clock = FakeClock()
    membership = _member(clock)
    gate = ShardKeyGate(membership)
    mine, theirs = _owned("a"), _owned("b")
    assert mine and theirs
    assert gate.admit(f"{mine[0]}/web") == (KeyAdmission.TAKE, "")
    assert gate.admit(f"{theirs[0]}/web") == (KeyAdmission.DROP, "sharded: b owns it")
    # b stops renewing: after its lease, its keys are a's under the ring a sees, but a has
    # not published that view yet — so it waits (rule 1) rather than drops.
    clock.advance(16.0)
    membership.claims.renewed(clock.monotonic(), BOTH)
    admission, why = gate.admit(f"{theirs[0]}/web")
    assert admission is KeyAdmission.WAIT and "claimed by another member" in why
    assert gate.retry_after == 2.0


@pytest.mark.asyncio
async def test_sharded_worker_reconciles_its_own_drops_and_retries_the_others() -> None:
    clock, bus = FakeClock(), Bus()
    seen: list[str] = []

    async def sync(key: str) -> None:
        seen.append(key)

    ctrl = Controller("deployment", sync, clock=clock, bus=bus)
    membership = _member(clock)
    ctrl.key_gate = ShardKeyGate(membership)
    mine, theirs = f"{_owned('a')[0]}/web", f"{_owned('b')[0]}/web"
    task = asyncio.create_task(ctrl.run(workers=1), name="controller")
    try:
        ctrl.enqueue(mine)
        ctrl.enqueue(theirs)
        for _ in range(30):
            await asyncio.sleep(0)
        assert seen == [mine]
        (dropped,) = [e for e in bus.recent() if isinstance(e, ItemDropped)]
        assert (dropped.key, dropped.reason) == (theirs, "sharded: b owns it")
        # b goes silent; a sees it gone but has not published its new view: b's key waits…
        clock.advance(16.0)
        membership.claims.renewed(clock.monotonic(), BOTH)
        ctrl.enqueue(theirs)
        for _ in range(30):
            await asyncio.sleep(0)
        assert seen == [mine] and len(ctrl.queue) == 0, "retried later, not now"
        # …until a publishes {a} and reads: then it is a's, taken at the retry.
        membership.claims.renewed(clock.monotonic(), frozenset({"a"}))
        membership.claims.observed(clock.monotonic(), [])
        clock.advance(2.0)
        for _ in range(30):
            await asyncio.sleep(0)
        assert seen == [mine, theirs]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
