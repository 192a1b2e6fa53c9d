"""The elector's algorithm with a fake clock and a fake lock: acquisition, expiry judged by the
local observation, fast and slow renewals, release, transitions, loss and the watchdog."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry

from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaderHealthzAdaptor,
)
from pycm.leaderelection.elector import LeaderMetrics
from pycm.leaderelection.fake import FakeLock, FakeLockServer
from pycm.trace.bus import Bus
from pycm.trace.kinds import (
    AcquireResult,
    LeaderElectionConfigured,
    LeaderObserved,
    LeaseAcquireAttempted,
    LeaseAcquired,
    LeaseLost,
    LeaseReleased,
    LeaseRenewed,
    LeaseRenewFailed,
    RenewFailureReason,
    StartupBegan,
)
from pycm.util.clock import FakeClock


@dataclass
class Harness:
    clock: FakeClock
    bus: Bus
    server: FakeLockServer
    log: list[str] = field(default_factory=list)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def elector(
        self,
        identity: str,
        *,
        release: bool = False,
        lease: float = 15,
        renew: float = 10,
        retry: float = 2,
        metrics: bool = False,
    ) -> tuple[LeaderElector, FakeLock]:
        lock = FakeLock(self.server, identity)

        async def lead() -> None:
            self.log.append(f"{identity}: started")
            try:
                await asyncio.Event().wait()
            finally:
                self.log.append(f"{identity}: leading work stopped")

        config = LeaderElectionConfig(
            lock=lock,
            callbacks=LeaderCallbacks(
                on_started_leading=lead,
                on_stopped_leading=lambda: self.log.append(f"{identity}: stopped"),
                on_new_leader=lambda holder: self.log.append(f"{identity}: new leader {holder}"),
            ),
            lease_duration=lease,
            renew_deadline=renew,
            retry_period=retry,
            release_on_cancel=release,
            name="pycm",
        )
        elector = LeaderElector(
            config,
            clock=self.clock,
            bus=self.bus,
            rng=random.Random(7),
            metrics=LeaderMetrics(self.registry) if metrics else None,
        )
        return elector, lock

    async def settle(self) -> None:
        for _ in range(30):
            await asyncio.sleep(0)

    async def advance(self, seconds: float, step: float = 0.1) -> None:
        """Move time in small steps, letting every task run between them."""
        await self.settle()
        moved = 0.0
        while moved < seconds - 1e-9:
            delta = min(step, seconds - moved)
            self.clock.advance(delta)
            moved += delta
            await self.settle()

    def kinds(self, cls: type) -> list:  # type: ignore[type-arg]
        return [e for e in self.bus.recent() if isinstance(e, cls)]


@pytest.fixture
def h() -> Harness:
    return Harness(FakeClock(), Bus(instance="test"), FakeLockServer())


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_acquire_from_empty_creates_the_lease(h: Harness) -> None:
    elector, _ = h.elector("a")
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    record = h.server.record
    assert record is not None
    assert (record.holder_identity, record.leader_transitions, record.lease_duration_seconds) == (
        "a",
        0,
        15,
    )
    assert elector.is_leader()
    assert h.log[:2] == ["a: new leader a", "a: started"]
    assert h.server.events == ["a became leader"]
    attempt = h.kinds(LeaseAcquireAttempted)[0]
    assert attempt.result is AcquireResult.CREATED
    assert h.kinds(LeaseAcquired)[0].transitions == 0
    observed = h.kinds(LeaderObserved)[0]
    assert (observed.old_holder, observed.new_holder) == ("", "a")
    await _cancel(task)
    assert h.log[-2:] == ["a: leading work stopped", "a: stopped"]


@pytest.mark.asyncio
async def test_acquire_waits_for_an_expired_holder_and_counts_the_transition(h: Harness) -> None:
    h.server.write(LeaderElectionRecord("old", 15, 1, 1, leader_transitions=4))
    elector, _ = h.elector("a")
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    assert not elector.is_leader()
    assert h.kinds(LeaseAcquireAttempted)[0].result is AcquireResult.HELD_BY_OTHER
    assert h.kinds(LeaseAcquireAttempted)[0].holder == "old"
    # The lease is judged by when *we* first saw it, not by its renewTime (1 ns after epoch).
    await h.advance(14.0)
    assert not elector.is_leader()
    await h.advance(6.0)  # past 15 s plus one jittered retry (≤ 2 s × 2.2)
    assert elector.is_leader()
    assert h.server.record is not None
    assert h.server.record.leader_transitions == 5
    assert "a: new leader old" in h.log
    assert "a: new leader a" in h.log
    await _cancel(task)


@pytest.mark.asyncio
async def test_zero_duration_lease_is_not_taken_on_first_sight(h: Harness) -> None:
    h.server.write(LeaderElectionRecord("other", 0, 1, 1))
    elector, lock = h.elector("a")
    attempt = await elector.try_acquire_or_renew()
    assert not attempt.ok
    assert h.server.record is not None
    assert h.server.record.holder_identity == "other"
    assert lock.calls == ["get"]
    # Unchanged on the next look, a zero-duration lease has expired: it is taken.
    h.clock.advance(0.001)
    attempt = await elector.try_acquire_or_renew()
    assert attempt.ok
    assert h.server.record.holder_identity == "a"


@pytest.mark.asyncio
async def test_a_changing_lease_stays_valid_however_old_its_renew_time(h: Harness) -> None:
    elector, _ = h.elector("a")
    for n in range(5):
        # The holder keeps writing; its clock is an hour behind ours (renewTime in the past).
        h.server.write(LeaderElectionRecord("other", 15, 1, 1 + n * 1_000_000))
        attempt = await elector.try_acquire_or_renew()
        assert not attempt.ok
        h.clock.advance(10)
    assert h.server.record is not None
    assert h.server.record.holder_identity == "other"


@pytest.mark.asyncio
async def test_renew_takes_the_fast_path_without_a_get(h: Harness) -> None:
    elector, lock = h.elector("a", metrics=True)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    acquired = h.server.record
    lock.calls.clear()
    await h.advance(2.0)
    assert lock.calls == ["update"]
    renewed = h.server.record
    assert renewed is not None and acquired is not None
    assert renewed.renew_time_ns > acquired.renew_time_ns
    assert renewed.acquire_time_ns == acquired.acquire_time_ns
    assert h.kinds(LeaseRenewed)[0].fast_path is True
    assert h.registry.get_sample_value("leader_election_master_status", {"name": "pycm"}) == 1
    await _cancel(task)
    assert h.registry.get_sample_value("leader_election_master_status", {"name": "pycm"}) == 0


@pytest.mark.asyncio
async def test_renewals_of_an_election_started_inside_a_step_are_not_its_children(
    h: Harness,
) -> None:
    # Regression: the elector started inside start-up emitted every renewal (and its lock
    # calls) into the start-up trace.
    elector, _ = h.elector("a")
    with h.bus.step(StartupBegan(command="run")) as startup:
        task = asyncio.create_task(elector.run(), name="a")
    await h.advance(4.5)
    renewed = h.kinds(LeaseRenewed)
    assert len(renewed) >= 2
    assert all(r.trace_id != startup.trace_id and r.parent_id == "" for r in renewed)
    # The acquisition happened during start-up and stays in its trace.
    (acquired,) = h.kinds(LeaseAcquired)
    assert acquired.trace_id == startup.trace_id
    await _cancel(task)


@pytest.mark.asyncio
async def test_gate_opens_on_acquire_closes_after_a_pause_and_reopens_on_renew(
    h: Harness,
) -> None:
    elector, _ = h.elector("a", lease=15, renew=10, retry=2)
    assert not elector.gate.is_open()
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    assert elector.is_leader() and elector.gate.is_open()
    # Paused (SIGSTOP): the clock jumps past the renew deadline before any task runs again.
    h.clock.advance(12.0)
    assert not elector.gate.is_open()
    renewals = len(h.kinds(LeaseRenewed))
    await h.settle()  # resumed: the renew loop renews (the lease is still ours, 12 s < 15 s)
    assert len(h.kinds(LeaseRenewed)) == renewals + 1
    assert elector.gate.is_open()
    await _cancel(task)
    assert not elector.gate.is_open()


@pytest.mark.asyncio
async def test_gate_closes_at_the_first_renew_that_finds_another_holder_not_at_the_deadline(
    h: Harness,
) -> None:
    # A standby whose clock runs fast judged the healthy lease expired and took it: the
    # leader's own renew is fresh, but its next attempt sees the new holder — from then on it
    # is fenced, 8 s before its renew deadline would have closed the gate.
    elector, _ = h.elector("a", lease=15, renew=10, retry=2)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    h.server.write(LeaderElectionRecord(holder_identity="b", lease_duration_seconds=15))
    assert elector.gate.is_open()
    await h.advance(2.1)  # one retry period: the renew attempt
    assert not elector.is_leader()
    assert elector.gate.age() is None and not elector.gate.is_open()
    assert [e.reason for e in h.kinds(LeaseRenewFailed)] == [RenewFailureReason.NOT_HOLDER]
    await _cancel(task)


@pytest.mark.asyncio
async def test_gate_stays_closed_when_a_paused_leader_finds_the_lease_taken(h: Harness) -> None:
    elector, _ = h.elector("a", lease=15, renew=10, retry=2)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    h.clock.advance(20.0)  # paused past the whole lease; another replica takes it meanwhile
    h.server.write(LeaderElectionRecord(holder_identity="b", lease_duration_seconds=15))
    await h.settle()
    assert not elector.gate.is_open() and not h.kinds(LeaseLost)
    await h.advance(10.5)
    assert not elector.gate.is_open()
    assert h.kinds(LeaseLost)
    await asyncio.wait_for(task, 1)


@pytest.mark.asyncio
async def test_failed_fast_update_falls_back_to_the_slow_path(h: Harness) -> None:
    elector, lock = h.elector("a", metrics=True)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    acquired = h.server.record
    assert acquired is not None
    lock.calls.clear()
    h.server.fail("update")
    await h.advance(2.0)
    assert lock.calls == ["update", "get", "update"]
    record = h.server.record
    assert record is not None
    assert (record.holder_identity, record.acquire_time_ns, record.leader_transitions) == (
        "a",
        acquired.acquire_time_ns,
        0,
    )
    assert h.registry.get_sample_value("leader_election_slowpath_total", {"name": "pycm"}) == 1
    assert h.kinds(LeaseRenewed)[-1].fast_path is False
    await _cancel(task)


@pytest.mark.asyncio
async def test_release_on_cancel_stops_the_work_then_clears_the_holder(h: Harness) -> None:
    elector, _ = h.elector("a", release=True)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    await _cancel(task)
    record = h.server.record
    assert record is not None
    assert (record.holder_identity, record.lease_duration_seconds, record.leader_transitions) == (
        "",
        1,
        0,
    )
    assert h.log[-2:] == ["a: leading work stopped", "a: stopped"]
    assert len(h.kinds(LeaseReleased)) == 1
    # A standby takes a released (holderless) lease on its very next attempt.
    b, _ = h.elector("b")
    attempt = await b.try_acquire_or_renew()
    assert attempt.ok
    assert h.server.record is not None
    assert h.server.record.leader_transitions == 1


@pytest.mark.asyncio
async def test_cancel_without_release_leaves_the_lease_to_expire(h: Harness) -> None:
    a, _ = h.elector("a")
    b, _ = h.elector("b")
    ta = asyncio.create_task(a.run(), name="a")
    await h.settle()
    tb = asyncio.create_task(b.run(), name="b")
    await h.settle()
    await _cancel(ta)
    assert h.server.record is not None
    assert h.server.record.holder_identity == "a"
    await h.advance(12.0)
    assert not b.is_leader()
    await h.advance(8.0)
    assert b.is_leader()
    assert h.server.record.leader_transitions == 1
    assert [r.holder_identity for r in h.server.history][-1] == "b"
    assert "b: new leader a" in h.log
    assert "b: new leader b" in h.log
    await _cancel(tb)


@pytest.mark.asyncio
async def test_renew_failures_past_the_deadline_lose_the_lease(h: Harness) -> None:
    elector, _ = h.elector("a", metrics=True)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    h.server.fail("update", 100)
    h.server.fail("get", 100)
    await h.advance(2.0 + 10.0 + 0.5)
    assert task.done()
    await task  # a lost lease ends run() normally; the caller decides to exit
    assert elector.lost_reason == "failed to renew lease within the renew deadline"
    reasons = [e.reason for e in h.kinds(LeaseRenewFailed)]
    assert reasons[-1] is RenewFailureReason.TIMEOUT
    assert RenewFailureReason.API_ERROR in reasons
    assert len(h.kinds(LeaseLost)) == 1
    assert h.log[-2:] == ["a: leading work stopped", "a: stopped"]
    assert h.registry.get_sample_value("leader_election_master_status", {"name": "pycm"}) == 0
    await h.settle()
    assert h.server.events == ["a became leader", "a stopped leading"]


@pytest.mark.asyncio
async def test_a_hung_lock_call_is_bounded_and_the_round_times_out(h: Harness) -> None:
    elector, _ = h.elector("a")
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    h.server.hang = asyncio.Event()
    await h.advance(2.0 + 10.0 + 0.5)
    assert task.done()
    reasons = [e.reason for e in h.kinds(LeaseRenewFailed)]
    assert reasons[0] is RenewFailureReason.TIMEOUT
    h.server.hang.set()
    await task


@pytest.mark.asyncio
async def test_another_holder_seen_while_leading_fails_renewal_as_not_holder(h: Harness) -> None:
    elector, _ = h.elector("a")
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    h.server.write(LeaderElectionRecord("intruder", 15, 1, 1, 3))
    await h.advance(2.0)
    failed = h.kinds(LeaseRenewFailed)
    assert failed
    # The fast update conflicts (our resourceVersion is stale); the slow path sees the holder.
    assert failed[0].reason is RenewFailureReason.NOT_HOLDER
    assert failed[0].error == "lock is held by intruder and has not yet expired"
    assert not elector.is_leader()
    await h.advance(10.0)
    assert task.done()
    await task
    assert "a: new leader intruder" in h.log


@pytest.mark.asyncio
async def test_healthz_watchdog_fails_a_leader_that_stops_renewing(h: Harness) -> None:
    clock = h.clock
    elector, _ = h.elector("a", lease=15, renew=10, retry=2)
    watchdog = LeaderHealthzAdaptor(tolerance=20, clock=clock)
    assert watchdog.check() is None  # no elector yet
    watchdog.set_elector(elector)
    await elector.try_acquire_or_renew()
    assert elector.is_leader()
    clock.advance(35.0)
    assert watchdog.check() is None  # exactly lease + tolerance is still healthy
    clock.advance(0.1)
    assert watchdog.check() == "failed election to renew leadership on lease pycm"
    await elector.try_acquire_or_renew()
    assert watchdog.check() is None
    standby, _ = h.elector("b")
    watchdog.set_elector(standby)
    clock.advance(100)
    assert await watchdog() is None  # a standby is healthy


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        pytest.param(
            10, 10, 2, "leaseDuration must be greater than renewDeadline", id="lease=renew"
        ),
        pytest.param(
            15,
            2.4,
            2,
            "renewDeadline must be greater than retryPeriod*JitterFactor",
            id="renew<=1.2retry",
        ),
        pytest.param(15, 10, 0, "retryPeriod must be greater than zero", id="zero-retry"),
        pytest.param(-1, -2, -3, "leaseDuration must be greater than zero", id="negative"),
    ],
)
def test_config_validation_reports_client_go_errors(
    lease: float, renew: float, retry: float, message: str
) -> None:
    server = FakeLockServer()

    async def lead() -> None:
        return None

    config = LeaderElectionConfig(
        lock=FakeLock(server, "a"),
        callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=lambda: None),
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
    )
    assert message in config.validate()


def test_config_validation_requires_an_identity_and_callbacks() -> None:
    config = LeaderElectionConfig(
        lock=FakeLock(FakeLockServer(), ""),
        callbacks=LeaderCallbacks(on_started_leading=None, on_stopped_leading=None),  # type: ignore[arg-type]
    )
    errors = config.validate()
    assert "Lock identity is empty" in errors
    assert "OnStartedLeading callback must not be nil" in errors
    assert "OnStoppedLeading callback must not be nil" in errors


@pytest.mark.asyncio
async def test_renew_round_metric_spans_every_attempt_of_the_round(h: Harness) -> None:
    elector, _ = h.elector("a", metrics=True)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    deadline = h.registry.get_sample_value(
        "pycm_leader_election_renew_deadline_seconds", {"name": "pycm"}
    )
    assert deadline == 10
    await h.advance(2.0)  # rounds whose first attempt renews: ~0 s
    h.server.fail("update", 2)  # the next round's first attempt fails (fast and slow path)
    await h.advance(2.0 + 2.0)  # ... and its second, a retry period later, renews: 2 s
    labels = {"name": "pycm"}
    count = h.registry.get_sample_value("pycm_leader_election_renew_round_seconds_count", labels)
    total = h.registry.get_sample_value("pycm_leader_election_renew_round_seconds_sum", labels)
    assert count == 3  # the renew right after acquiring, then the two rounds above
    assert total == pytest.approx(2.0, abs=0.15)
    within_1s = h.registry.get_sample_value(
        "pycm_leader_election_renew_round_seconds_bucket", {"name": "pycm", "le": "1.0"}
    )
    assert within_1s == 2
    await _cancel(task)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("operation", "message"),
    [
        pytest.param(
            "get",
            "error retrieving resource lock kube-system/pycm: LockError: injected get failure",
            id="get",
        ),
        pytest.param(
            "create",
            "error initially creating leader election record: LockError: injected create failure",
            id="create",
        ),
    ],
)
async def test_failed_acquire_attempts_are_logged_each_time(
    h: Harness, caplog: pytest.LogCaptureFixture, operation: str, message: str
) -> None:
    # client-go logs every failed lock call; a manager that may not read or create its Lease
    # (RBAC) must say so, not just "attempting to acquire leader lease" for ever.
    elector, _ = h.elector("a")
    h.server.fail(operation, 2)
    task = asyncio.create_task(elector.run(), name="a")
    try:
        with caplog.at_level("ERROR", logger="pycm.leaderelection.elector"):
            await h.advance(2.4 * 2 + 0.5)
    finally:
        await _cancel(task)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [message] * 2
    assert h.server.record is not None and h.server.record.holder_identity == "a"


@pytest.mark.asyncio
async def test_master_status_is_0_on_a_standby_and_1_on_the_leader(h: Harness) -> None:
    # client-go sets the gauge to 0 in NewLeaderElector: a standby that never led reports 0
    # (the PycmNoLeader alert takes the max over the replicas), not nothing.
    a, _ = h.elector("a")
    ta = asyncio.create_task(a.run(), name="a")
    await h.settle()
    b, _ = h.elector("b", metrics=True)
    tb = asyncio.create_task(b.run(), name="b")
    try:
        await h.advance(4.0)
        assert h.server.record is not None and h.server.record.holder_identity == "a"
        status = h.registry.get_sample_value("leader_election_master_status", {"name": "pycm"})
        assert status == 0
        await _cancel(ta)  # a's lease expires (no release): b takes over
        await h.advance(15.0 + 5.0)
        status = h.registry.get_sample_value("leader_election_master_status", {"name": "pycm"})
        assert status == 1
    finally:
        await _cancel(ta)
        await _cancel(tb)


@pytest.mark.asyncio
async def test_run_emits_its_timings_once_before_the_first_attempt(h: Harness) -> None:
    elector, _ = h.elector("a", release=True, lease=8, renew=4, retry=1)
    task = asyncio.create_task(elector.run(), name="a")
    await h.settle()
    await h.advance(3.0)  # a few renews: still one configuration event
    (configured,) = h.kinds(LeaderElectionConfigured)
    assert (
        configured.lease,
        configured.identity,
        configured.lease_duration_s,
        configured.renew_deadline_s,
        configured.retry_period_s,
        configured.coordinated,
        configured.release_on_cancel,
    ) == ("kube-system/pycm", "a", 8.0, 4.0, 1.0, False, True)
    kinds = [type(e) for e in h.bus.recent()]
    assert kinds.index(LeaderElectionConfigured) < kinds.index(LeaseAcquireAttempted)
    await _cancel(task)
