"""Coordinated leader election end to end in one process: the emulator with its coordinator
(``CoordinatedLeaderElection`` on), LeaseCandidates published by :class:`LeaseCandidate`
through pycm's client over HTTP, and coordinated electors on real Leases. Short lease timings
keep each case within a few seconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from pycm.app.clients import LeaseClientAdapter
from pycm.kube import Client
from pycm.kube.config import load_config
from pycm.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector
from pycm.leaderelection.candidate import LeaseCandidate
from pycm.leaderelection.resourcelock import LeaseLock
from pycm.sim.leader_coordinator import micro_time
from pycm.sim.objects import deep_copy
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import LeaseCandidateRenewed, LeaseCoordinationObserved

NS, LEASE = "kube-system", "pycm"


@dataclass
class Replica:
    name: str
    candidate: LeaseCandidate
    elector: LeaderElector
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


async def _eventually(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@asynccontextmanager
async def _cluster() -> AsyncIterator[tuple[Emulator, Client, Bus]]:
    async with run_emulator(
        tls=False, kubelet=False, nodes=0, coordinated_leader_election=True
    ) as emu:
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        bus = Bus(instance="test")
        async with await Client.connect(config, bus=bus) as client:
            yield emu, client, bus


def _replica(client: Client, bus: Bus, name: str, emulation: str) -> Replica:
    candidate = LeaseCandidate(client, NS, name, LEASE, "1.36.0", emulation, bus=bus)
    log: list[str] = []

    async def lead() -> None:
        log.append("started")
        await asyncio.Event().wait()

    elector = LeaderElector(
        LeaderElectionConfig(
            lock=LeaseLock(LeaseClientAdapter(client), NS, LEASE, name),
            callbacks=LeaderCallbacks(
                on_started_leading=lead, on_stopped_leading=lambda: log.append("stopped")
            ),
            lease_duration=2,
            renew_deadline=1.5,
            retry_period=0.25,
            coordinated=True,
        ),
        bus=bus,
    )
    replica = Replica(name, candidate, elector, log=log)
    replica.tasks = [
        asyncio.create_task(candidate.run(), name=f"{name}: candidate"),
        asyncio.create_task(elector.run(), name=f"{name}: elector"),
    ]
    return replica


async def _stop(*replicas: Replica) -> None:
    tasks = [t for r in replicas for t in r.tasks]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _lease(emu: Emulator) -> dict[str, Any]:
    res = emu.store.resource("leases", "coordination.k8s.io")
    return emu.store.peek(res, NS, LEASE) or {}


@pytest.mark.asyncio
async def test_coordinator_moves_the_lease_to_the_older_emulation_version() -> None:
    async with _cluster() as (emu, client, bus):
        new = _replica(client, bus, "replica-new", "1.36.0")
        try:
            await _eventually(new.elector.is_leader, 5, "the only candidate to lead")
            assert _lease(emu)["spec"]["strategy"] == "OldestEmulationVersion"
            old = _replica(client, bus, "replica-old", "1.35.0")
            try:
                # The newer one is asked to step down, stops renewing and loses at its renew
                # deadline; the coordinator hands the expired lease to the older one.
                await _eventually(lambda: new.tasks[1].done(), 6, "the newer one to step down")
                assert new.elector.lost_reason == (
                    "stepped down: the coordinator prefers replica-old"
                )
                await _eventually(old.elector.is_leader, 6, "the older one to lead")
                spec = _lease(emu)["spec"]
                assert spec["holderIdentity"] == "replica-old"
                assert "preferredHolder" not in spec
                # Leading starts the callback as a task: it has run once the loop turns.
                await _eventually(lambda: old.log == ["started"], 2, "the older one's callback")
                observed = [e for e in bus.recent() if isinstance(e, LeaseCoordinationObserved)]
                assert any(e.preferred_holder == "replica-old" for e in observed)
            finally:
                await _stop(old)
        finally:
            await _stop(new)


@pytest.mark.asyncio
async def test_candidate_answers_a_ping_by_renewing_and_clearing_it() -> None:
    async with _cluster() as (emu, client, bus):
        candidate = LeaseCandidate(client, NS, "solo", "other-lease", "1.36.0", "1.36.0", bus=bus)
        task = asyncio.create_task(candidate.run())
        res = emu.store.resource("leasecandidates", "coordination.k8s.io")
        try:
            await _eventually(lambda: emu.store.peek(res, NS, "solo") is not None, 5, "create")
            created = emu.store.peek(res, NS, "solo") or {}
            assert created["spec"] == {
                "leaseName": "other-lease",
                "binaryVersion": "1.36.0",
                "emulationVersion": "1.36.0",
                "strategy": "OldestEmulationVersion",
                "renewTime": created["spec"]["renewTime"],
            }
            await asyncio.sleep(0.05)
            pinged = deep_copy(created)
            ping = micro_time(emu.store.clock.wall_ns())
            pinged["spec"]["pingTime"] = ping
            emu.store.replace(res, pinged, created, manager="test")
            await _eventually(
                lambda: "pingTime" not in (emu.store.peek(res, NS, "solo") or {})["spec"],
                5,
                "the ping to be answered",
            )
            answered = (emu.store.peek(res, NS, "solo") or {})["spec"]
            assert answered["renewTime"] > ping
            renewals = [e for e in bus.recent() if isinstance(e, LeaseCandidateRenewed)]
            assert [e.pinged for e in renewals] == [False, True]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
