"""Coordinated leader election (KEP-4355) in the elector: client-go's TestTryCoordinatedRenew
cases and more, table style on a fake clock and a fake lock; then whole runs — a coordinated
candidate never creates or takes a lease, leads when the coordinator names it, and a leader
steps down once the lease names another preferredHolder."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import pytest

from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
)
from pycm.leaderelection.fake import FakeLock, FakeLockServer
from pycm.leaderelection.resourcelock import LeaseLock
from pycm.trace.bus import Bus
from pycm.trace.kinds import AcquireResult, LeaseLost, LeaseRenewFailed, RenewFailureReason
from pycm.util.clock import FakeClock

FUTURE = 1000 * 3600.0  # client-go's "future" observed time: clock.Now() + 1000h


def _elector(
    server: FakeLockServer,
    clock: FakeClock,
    identity: str = "baz",
    log: list[str] | None = None,
    bus: Bus | None = None,
) -> tuple[LeaderElector, FakeLock]:
    lock = FakeLock(server, identity, name="foo/bar")
    out = log if log is not None else []

    async def lead() -> None:
        out.append(f"{identity}: started")
        await asyncio.Event().wait()

    config = LeaderElectionConfig(
        lock=lock,
        callbacks=LeaderCallbacks(
            on_started_leading=lead,
            on_stopped_leading=lambda: out.append(f"{identity}: stopped"),
            on_new_leader=lambda holder: out.append(f"{identity}: new leader {holder}"),
        ),
        lease_duration=10,
        renew_deadline=5,
        retry_period=1,
        coordinated=True,
    )
    elector = LeaderElector(
        config, clock=clock, bus=bus or Bus(instance="test"), rng=random.Random(3)
    )
    return elector, lock


def _observe(elector: LeaderElector, record: LeaderElectionRecord | None, at: float) -> None:
    """What client-go's table sets on the elector: the observed record and when it was seen."""
    if record is None:
        return
    elector._observed = record
    elector._observed_raw = record.raw()
    elector._observed_time = at


@dataclass(frozen=True)
class Case:
    stored: LeaderElectionRecord | None
    observed: LeaderElectionRecord | None
    observed_at: float  # seconds from now (FUTURE, or negative: long ago)
    succeeds: bool
    calls: list[str]
    holder: str  # observed holder afterwards
    result: AcquireResult | None = None
    reason: RenewFailureReason | None = None
    transitions: int = 0


CASES = [
    # client-go's two cases.
    pytest.param(
        Case(
            LeaderElectionRecord(holder_identity="bing"),
            None,
            FUTURE,
            False,
            ["get"],
            "bing",
            AcquireResult.HELD_BY_OTHER,
            RenewFailureReason.NOT_HOLDER,
        ),
        id="don't acquire from led, acked object",
    ),
    pytest.param(
        Case(
            LeaderElectionRecord(holder_identity="baz"),
            LeaderElectionRecord(holder_identity="baz"),
            FUTURE,
            True,
            ["get", "update"],
            "baz",
            AcquireResult.ACQUIRED,
        ),
        id="renew already acquired object",
    ),
    # pycm's: what coordination forbids or asks.
    pytest.param(
        Case(
            None,
            None,
            0,
            False,
            ["get"],
            "",
            AcquireResult.NOT_ELECTED,
            RenewFailureReason.NOT_HOLDER,
        ),
        id="no lease: never created by the candidate",
    ),
    pytest.param(
        Case(
            LeaderElectionRecord(holder_identity="", lease_duration_seconds=10),
            None,
            0,
            False,
            ["get"],
            "",
            AcquireResult.NOT_ELECTED,
            RenewFailureReason.NOT_HOLDER,
        ),
        id="free lease: not taken",
    ),
    pytest.param(
        Case(
            LeaderElectionRecord(holder_identity="bing", lease_duration_seconds=10),
            LeaderElectionRecord(holder_identity="bing", lease_duration_seconds=10),
            -60,
            False,
            ["get"],
            "bing",
            AcquireResult.NOT_ELECTED,
            RenewFailureReason.NOT_HOLDER,
        ),
        id="expired lease of another: not taken",
    ),
    pytest.param(
        Case(
            LeaderElectionRecord(
                holder_identity="baz",
                lease_duration_seconds=10,
                strategy="OldestEmulationVersion",
                preferred_holder="bing",
            ),
            LeaderElectionRecord(holder_identity="baz", lease_duration_seconds=10),
            0,
            False,
            ["get"],
            "baz",
            AcquireResult.HELD_BY_OTHER,
            RenewFailureReason.STEPPED_DOWN,
        ),
        id="end of term: preferredHolder set, no renew",
    ),
    pytest.param(
        Case(
            LeaderElectionRecord(
                holder_identity="baz",
                lease_duration_seconds=5,
                strategy="OldestEmulationVersion",
                leader_transitions=2,
            ),
            LeaderElectionRecord(holder_identity="bing", lease_duration_seconds=10),
            -60,
            True,
            ["get", "update"],
            "baz",
            AcquireResult.ACQUIRED,
            transitions=2,
        ),
        id="named holder by the coordinator: renewed, strategy kept",
    ),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.asyncio
async def test_try_coordinated_renew(case: Case) -> None:
    clock = FakeClock()
    server = FakeLockServer()
    if case.stored is not None:
        server.write(case.stored)
    elector, lock = _elector(server, clock)
    _observe(elector, case.observed, clock.monotonic() + case.observed_at)
    attempt = await elector.try_coordinated_renew()
    assert attempt.ok is case.succeeds
    assert lock.calls == case.calls  # client-go: len(reactors) == len(actions)
    assert elector.observed_record.holder_identity == case.holder
    assert elector.observed_record.leader_transitions == case.transitions
    assert attempt.result is case.result
    assert attempt.reason is case.reason
    if case.succeeds:
        written = server.record
        assert written is not None and written.holder_identity == "baz"
        assert written.strategy == (case.stored.strategy if case.stored else "")
        assert written.preferred_holder == ""


async def _settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


async def _advance(clock: FakeClock, seconds: float) -> None:
    moved = 0.0
    while moved < seconds - 1e-9:
        clock.advance(0.1)
        moved += 0.1
        await _settle()


@pytest.mark.asyncio
async def test_coordinated_candidate_waits_for_the_coordinator_then_leads() -> None:
    clock, server, log = FakeClock(), FakeLockServer(), []
    elector, lock = _elector(server, clock, log=log)
    task = asyncio.create_task(elector.run())
    try:
        await _advance(clock, 5)
        assert server.record is None and "create" not in lock.calls  # never creates
        assert not elector.is_leader()
        # The coordinator creates the lease naming this candidate.
        server.write(
            LeaderElectionRecord(
                holder_identity="baz",
                lease_duration_seconds=5,
                renew_time_ns=clock.wall_ns(),
                strategy="OldestEmulationVersion",
            )
        )
        await _advance(clock, 4)
        assert elector.is_leader()
        assert "baz: started" in log
        record = server.record
        assert record is not None and record.lease_duration_seconds == 10
        assert record.strategy == "OldestEmulationVersion"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_coordinated_leader_steps_down_for_the_preferred_holder() -> None:
    clock, server, log, bus = FakeClock(), FakeLockServer(), [], Bus(instance="test")
    server.write(
        LeaderElectionRecord(
            holder_identity="baz", lease_duration_seconds=5, strategy="OldestEmulationVersion"
        )
    )
    elector, _ = _elector(server, clock, log=log, bus=bus)
    task = asyncio.create_task(elector.run())
    await _advance(clock, 3)
    assert elector.is_leader()
    renewed = server.resource_version
    current = server.record
    assert current is not None
    # The coordinator prefers another candidate: the leader stops renewing at once and loses
    # leadership at its renew deadline (5 s), well before the lease (10 s) expires.
    server.write(
        LeaderElectionRecord(
            holder_identity="baz",
            lease_duration_seconds=current.lease_duration_seconds,
            renew_time_ns=current.renew_time_ns,
            strategy="OldestEmulationVersion",
            preferred_holder="bing",
        )
    )
    await _advance(clock, 7)
    assert task.done()
    await asyncio.gather(task, return_exceptions=True)
    assert server.resource_version == renewed + 1  # only the coordinator's write
    assert log[-1] == "baz: stopped"
    reasons = {e.reason for e in bus.recent() if isinstance(e, LeaseRenewFailed)}
    assert RenewFailureReason.STEPPED_DOWN in reasons
    lost = [e for e in bus.recent() if isinstance(e, LeaseLost)]
    assert lost and lost[0].reason == "stepped down: the coordinator prefers bing"
    assert elector.lost_reason == "stepped down: the coordinator prefers bing"


class _Leases:
    """A LeaseClient that stores what it is sent (the LeaseLock's wire view)."""

    def __init__(self, spec: dict[str, object]) -> None:
        self.lease: dict[str, object] = {"metadata": {"name": "bar"}, "spec": spec}

    async def get_lease(self, namespace: str, name: str) -> dict[str, object]:
        return self.lease

    async def create_lease(self, namespace: str, body: dict[str, object]) -> dict[str, object]:
        raise AssertionError("not used")

    async def update_lease(self, namespace: str, body: dict[str, object]) -> dict[str, object]:
        self.lease = body
        return body

    async def create_event(self, namespace: str, body: dict[str, object]) -> dict[str, object]:
        return body


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        pytest.param(
            LeaderElectionRecord(holder_identity="baz", lease_duration_seconds=10),
            {},
            id="uncoordinated write unsets both, as client-go's whole-spec update",
        ),
        pytest.param(
            LeaderElectionRecord(
                holder_identity="baz", lease_duration_seconds=10, strategy="OldestEmulationVersion"
            ),
            {"strategy": "OldestEmulationVersion"},
            id="coordinated renew keeps the strategy, drops the preferred holder",
        ),
    ],
)
@pytest.mark.asyncio
async def test_lease_lock_writes_strategy_and_preferred_holder_as_the_record_has_them(
    written: LeaderElectionRecord, expected: dict[str, str]
) -> None:
    api = _Leases(
        {
            "holderIdentity": "baz",
            "leaseDurationSeconds": 5,
            "strategy": "OldestEmulationVersion",
            "preferredHolder": "bing",
        }
    )
    lock = LeaseLock(api, "foo", "bar", "baz")
    record, _ = await lock.get()
    assert (record.strategy, record.preferred_holder) == ("OldestEmulationVersion", "bing")
    await lock.update(written)
    spec = api.lease["spec"]
    assert isinstance(spec, dict)
    assert {k: spec[k] for k in ("strategy", "preferredHolder") if k in spec} == expected
