"""The emulator's leader-election coordinator (KEP-4355) on a fake clock: candidate selection by
OldestEmulationVersion, pings and their answers, a Lease created, handed over when free or
expired, preferredHolder on a live one, the strategy conflict, and the candidates' collector."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pycm.sim.leader_coordinator import CoordinatorTimings, LeaderCoordinator, micro_time
from pycm.sim.objects import deep_copy
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.clock import FakeClock

NS = "kube-system"
LEASE = "kube-controller-manager"


def _store() -> tuple[Store, FakeClock, LeaderCoordinator]:
    clock = FakeClock()
    store = Store(clock=clock)
    seed_cluster(store, 0)
    return store, clock, LeaderCoordinator(store, clock)


def _now(clock: FakeClock, ago: float = 0.0) -> str:
    return micro_time(clock.wall_ns() - int(ago * 1e9))


def _add(
    store: Store,
    clock: FakeClock,
    name: str,
    emulation: str = "1.36.0",
    binary: str = "1.36.0",
    *,
    renewed_ago: float = 0.0,
    strategy: str = "OldestEmulationVersion",
    **extra: Any,
) -> None:
    spec = {
        "leaseName": LEASE,
        "binaryVersion": binary,
        "emulationVersion": emulation,
        "strategy": strategy,
        "renewTime": _now(clock, renewed_ago),
        **extra,
    }
    store.create(
        store.resource("leasecandidates", "coordination.k8s.io"),
        {"metadata": {"name": name}, "spec": spec},
        NS,
    )


def _lease(store: Store) -> dict[str, Any] | None:
    return store.peek(store.resource("leases", "coordination.k8s.io"), NS, LEASE)


def _candidate(store: Store, name: str) -> dict[str, Any] | None:
    return store.peek(store.resource("leasecandidates", "coordination.k8s.io"), NS, name)


def _renew(store: Store, clock: FakeClock, name: str) -> None:
    """What client-go's LeaseCandidate does when pinged: renewTime = now."""
    res = store.resource("leasecandidates", "coordination.k8s.io")
    old = store.peek(res, NS, name)
    assert old is not None
    new = deep_copy(old)
    new["spec"]["renewTime"] = _now(clock)
    store.replace(res, new, old, manager="test")


def _put_lease(store: Store, **spec: Any) -> None:
    res = store.resource("leases", "coordination.k8s.io")
    old = store.peek(res, NS, LEASE)
    body = {"metadata": {"name": LEASE}, "spec": spec}
    if old is None:
        store.create(res, body, NS)
    else:
        new = deep_copy(old)
        new["spec"] = spec
        store.replace(res, new, old, manager="test")


@pytest.mark.parametrize(
    ("candidates", "elected"),
    [
        pytest.param(
            [("a", "1.36.0", "1.36.0"), ("b", "1.35.0", "1.36.0")], "b", id="oldest-emulation"
        ),
        pytest.param(
            [("a", "1.35.0", "1.36.0"), ("b", "1.35.0", "1.35.2")], "b", id="then-oldest-binary"
        ),
        pytest.param(
            [("a", "1.35.0", "1.35.0"), ("b", "1.35.0", "1.35.0")], "a", id="then-first-created"
        ),
        pytest.param(
            [("a", "1.36.0", "1.36.0"), ("b", "1.36.0-rc.1", "1.36.0")],
            "b",
            id="pre-release-is-older",
        ),
    ],
)
def test_coordinator_creates_lease_for_best_candidate(
    candidates: list[tuple[str, str, str]], elected: str
) -> None:
    store, clock, coordinator = _store()
    for name, emulation, binary in candidates:
        _add(store, clock, name, emulation, binary)
        clock.advance(1)  # creation order (the last tie-breaker) at one-second resolution
    assert coordinator.reconcile(NS, LEASE) == "created"
    lease = _lease(store)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == elected
    assert lease["spec"]["strategy"] == "OldestEmulationVersion"
    assert lease["spec"]["leaseDurationSeconds"] == 5
    assert coordinator.reconcile(NS, LEASE) == ""  # the best is leading: nothing to do


def test_coordinator_pings_stale_candidates_and_elects_only_those_that_answer() -> None:
    store, clock, coordinator = _store()
    _add(store, clock, "old", "1.35.0", renewed_ago=60)
    _add(store, clock, "stale", "1.34.0", renewed_ago=60)
    assert coordinator.reconcile(NS, LEASE) == "ping"
    pinged = {n: (_candidate(store, n) or {})["spec"].get("pingTime") for n in ("old", "stale")}
    assert pinged == {"old": _now(clock), "stale": _now(clock)}
    clock.advance(1)
    assert coordinator.reconcile(NS, LEASE) == ""  # waiting for the answers
    _renew(store, clock, "old")
    assert coordinator.reconcile(NS, LEASE) == ""  # "stale" may still answer
    assert _lease(store) is None
    clock.advance(4.5)  # stale's ping is older than the election duration: it is left out
    assert coordinator.reconcile(NS, LEASE) == "created"
    assert (_lease(store) or {})["spec"]["holderIdentity"] == "old"


def test_coordinator_sets_preferred_holder_on_a_live_lease_then_hands_it_over_on_expiry() -> None:
    store, clock, coordinator = _store()
    _add(store, clock, "new", "1.36.0")
    _put_lease(
        store,
        holderIdentity="new",
        leaseDurationSeconds=15,
        renewTime=_now(clock),
        strategy="OldestEmulationVersion",
        leaseTransitions=3,
    )
    assert coordinator.reconcile(NS, LEASE) == ""  # the only candidate leads
    _add(store, clock, "old", "1.35.0")
    assert coordinator.reconcile(NS, LEASE) == "updated"
    spec = (_lease(store) or {})["spec"]
    assert (spec["holderIdentity"], spec["preferredHolder"]) == ("new", "old")
    assert coordinator.reconcile(NS, LEASE) == ""  # already asked
    # The holder steps down (stops renewing); once its lease expires the coordinator gives the
    # lease to the preferred candidate, who renews it.
    clock.advance(16)
    _renew(store, clock, "new")
    _renew(store, clock, "old")
    assert coordinator.reconcile(NS, LEASE) == "updated"
    spec = (_lease(store) or {})["spec"]
    assert spec["holderIdentity"] == "old"
    assert "preferredHolder" not in spec and "acquireTime" not in spec
    assert spec["leaseDurationSeconds"] == 5 and spec["leaseTransitions"] == 3


def test_coordinator_fills_a_lease_without_holder_and_sets_its_strategy() -> None:
    store, clock, coordinator = _store()
    _put_lease(store, holderIdentity="", leaseDurationSeconds=1, renewTime=_now(clock))
    _add(store, clock, "a", "1.36.0")
    assert coordinator.reconcile(NS, LEASE) == "updated"
    spec = (_lease(store) or {})["spec"]
    assert (spec["holderIdentity"], spec["strategy"]) == ("a", "OldestEmulationVersion")


def test_coordinator_stops_on_conflicting_strategies_at_one_binary_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, clock, coordinator = _store()
    _add(store, clock, "a", strategy="OldestEmulationVersion")
    _add(store, clock, "b", strategy="example.com/Other")
    with caplog.at_level("INFO", logger="pycm.sim"):
        assert coordinator.reconcile(NS, LEASE) == ""
        assert coordinator.reconcile(NS, LEASE) == ""  # the same problem: logged once
    assert _lease(store) is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "at same binary version but received differing strategies" in lines[0]


def test_coordinator_newest_binary_decides_the_strategy_a_vendor_one_is_left_alone() -> None:
    store, clock, coordinator = _store()
    _add(store, clock, "a", "1.35.0", "1.35.0", strategy="OldestEmulationVersion")
    _add(store, clock, "b", "1.36.0", "1.36.0", strategy="example.com/Other")
    assert coordinator.reconcile(NS, LEASE) == "created"
    spec = (_lease(store) or {})["spec"]
    assert spec["strategy"] == "example.com/Other"
    assert "holderIdentity" not in spec  # another controller's to choose


def test_coordinator_ignores_and_collects_expired_candidates() -> None:
    store, clock, coordinator = _store()
    timings = CoordinatorTimings()
    _add(store, clock, "gone", "1.30.0", renewed_ago=timings.candidate_valid_duration + 1)
    _add(store, clock, "live", "1.36.0")
    assert coordinator.contended() == [(NS, LEASE)]
    assert coordinator.reconcile(NS, LEASE) == "created"
    assert (_lease(store) or {})["spec"]["holderIdentity"] == "live"
    assert coordinator.collect_garbage() == 1
    assert _candidate(store, "gone") is None and _candidate(store, "live") is not None


def test_coordinator_step_collects_only_every_gc_period() -> None:
    store, clock, coordinator = _store()
    _add(store, clock, "gone", renewed_ago=CoordinatorTimings().candidate_valid_duration + 1)
    coordinator.step()
    assert _candidate(store, "gone") is not None  # the collector runs a period after start
    clock.advance(CoordinatorTimings().gc_period)
    coordinator.step()
    assert _candidate(store, "gone") is None


def test_coordinator_forces_an_election_to_ping_half_expired_candidates() -> None:
    store, clock, coordinator = _store()
    half = CoordinatorTimings().candidate_valid_duration / 2
    _add(store, clock, "a", renewed_ago=half + 1)
    _put_lease(
        store,
        holderIdentity="a",
        leaseDurationSeconds=15,
        renewTime=_now(clock),
        strategy="OldestEmulationVersion",
    )
    assert coordinator.reconcile(NS, LEASE) == "ping"
    assert (_candidate(store, "a") or {})["spec"]["pingTime"] == _now(clock)


@pytest.mark.asyncio
async def test_coordinator_run_elects_when_a_candidate_appears() -> None:
    store, clock, coordinator = _store()
    task = asyncio.create_task(coordinator.run())
    try:
        await asyncio.sleep(0)
        _add(store, clock, "a")
        for _ in range(50):
            await asyncio.sleep(0)
            if _lease(store) is not None:
                break
        assert (_lease(store) or {})["spec"]["holderIdentity"] == "a"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
