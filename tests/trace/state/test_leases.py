"""Lease handlers: holder timeline, roles, renew statistics."""

from __future__ import annotations

from pycm.trace import kinds as k
from pycm.trace.state import State
from tests.trace.state.script import (
    LEASE,
    T0,
    Feed,
    S,
    errors_of,
)


def test_lease_leader_change_two_instances_transitions_history_and_roles() -> None:
    f = Feed()
    f(k.LeaseAcquireAttempted(lease=LEASE, identity="a", result=k.AcquireResult.CREATED), at=0)
    f(k.LeaseAcquired(lease=LEASE, identity="a", transitions=0, waited_ms=5.0), at=0)
    f(
        k.LeaseAcquireAttempted(
            lease=LEASE, identity="b", result=k.AcquireResult.HELD_BY_OTHER, holder="a"
        ),
        at=1,
        instance="b",
    )
    f(k.LeaseRenewed(lease=LEASE, identity="a", latency_ms=4.0), at=2)
    f(k.LeaseLost(lease=LEASE, identity="a", reason="renew deadline"), at=12)
    f(
        k.LeaseAcquired(lease=LEASE, identity="b", transitions=1, waited_ms=13000.0),
        at=15,
        instance="b",
    )
    f(
        k.LeaderObserved(
            lease=LEASE,
            old_holder="a",
            new_holder="b",
            transitions=1,
            lease_duration_s=15.0,
            skew_ms=-3.5,
        ),
        at=15.5,
    )
    snap = f.state.snapshot()
    lease = snap["leases"][LEASE]
    assert (lease["holder"], lease["transitions"], lease["changes"]) == ("b", 1, 2)
    assert (lease["acquired"], lease["lost"], lease["lease_duration_s"]) == (2, 1, 15.0)
    assert (lease["skew_ms"], lease["max_abs_skew_ms"]) == (-3.5, 3.5)
    assert lease["attempts"] == {"created": 1, "held_by_other": 1}
    assert [(h["old"], h["new"], h["observer"], h["ts"]) for h in lease["history"]] == [
        ("", "a", "a", T0),
        ("a", "b", "b", T0 + 15 * S),
    ]
    assert lease["changes_last_hour"] == 2
    assert snap["instances"]["a"]["role"] == "standby"
    assert snap["instances"]["b"]["role"] == "leader"
    assert errors_of(snap) == [("a", "lease.lost", f"lost {LEASE}: renew deadline")]


def test_lease_holder_change_seen_by_observer_demotes_silent_old_leader() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    f(k.LeaseAcquireAttempted(lease=LEASE, identity="b", holder="a"), at=1, instance="b")
    # a crashes without a word; b takes over
    f(k.LeaseAcquired(lease=LEASE, identity="b", transitions=1), at=20, instance="b")
    roles = {n: i["role"] for n, i in f.state.snapshot()["instances"].items()}
    assert roles == {"a": "standby", "b": "leader"}


def test_lease_renew_failures_counted_by_reason_and_holder() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    reasons = [
        k.RenewFailureReason.CONFLICT,
        k.RenewFailureReason.API_ERROR,
        k.RenewFailureReason.CONFLICT,
        k.RenewFailureReason.TIMEOUT,
    ]
    for i, reason in enumerate(reasons):
        f(k.LeaseRenewFailed(lease=LEASE, identity="a", reason=reason, latency_ms=10.0 + i), at=i)
    f(k.LeaseRenewed(lease=LEASE, identity="a", latency_ms=7.0), at=5)
    lease = f.state.snapshot()["leases"][LEASE]
    assert lease["failures"] == {"conflict": 2, "api_error": 1, "timeout": 1}
    assert lease["holders"]["a"]["failures"] == 4
    assert lease["holders"]["a"]["renews"] == 1
    assert lease["holders"]["a"]["last_latency_ms"] == 7.0
    assert [(r["ok"], r["reason"], r["latency_ms"]) for r in lease["renew_history"]] == [
        (False, "conflict", 10.0),
        (False, "api_error", 11.0),
        (False, "conflict", 12.0),
        (False, "timeout", 13.0),
        (True, "", 7.0),
    ]
    assert lease["renew_latency"]["count"] == 1
    assert len(f.state.snapshot()["errors"]) == 4


def test_lease_released_clears_holder_and_standby() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0)
    f(k.LeaseReleased(lease=LEASE, identity="a"), at=3)
    snap = f.state.snapshot()
    assert snap["leases"][LEASE]["holder"] == ""
    assert snap["leases"][LEASE]["released"] == 1
    assert snap["instances"]["a"]["role"] == "standby"


def test_lease_timings_fold_from_the_electors_configuration_and_survive_a_dump() -> None:
    f = Feed()
    before = f.state.snapshot()["leases"]
    assert LEASE not in before
    f(
        k.LeaderElectionConfigured(
            lease=LEASE,
            identity="a",
            lease_duration_s=8.0,
            renew_deadline_s=4.0,
            retry_period_s=1.0,
        ),
        at=0,
        instance="a",
    )
    # A holder change observed later carries the Lease's own duration (whole seconds).
    f(k.LeaderObserved(lease=LEASE, new_holder="a", lease_duration_s=8.0), at=1, instance="a")
    lease = f.state.snapshot()["leases"][LEASE]
    assert (lease["lease_duration_s"], lease["renew_deadline_s"], lease["retry_period_s"]) == (
        8.0,
        4.0,
        1.0,
    )
    assert f.state.snapshot()["instances"]["a"]["lease"] == LEASE
    restored = State.restore(f.state.snapshot())
    again = restored.snapshot()["leases"][LEASE]
    assert (again["renew_deadline_s"], again["retry_period_s"]) == (4.0, 1.0)


def test_lease_timings_unknown_without_the_configuration_event() -> None:
    f = Feed()
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=0, instance="a")
    lease = f.state.snapshot()["leases"][LEASE]
    # An older recording: 0 says "not in the trace" (the viewers then assume kube's defaults).
    assert (lease["lease_duration_s"], lease["renew_deadline_s"], lease["retry_period_s"]) == (
        0.0,
        0.0,
        0.0,
    )
