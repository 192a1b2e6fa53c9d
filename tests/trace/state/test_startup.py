"""Instances: the start-up waterfall, restarts, health checks."""

from __future__ import annotations

from pycm.trace import kinds as k
from tests.trace.state.script import (
    LEASE,
    T0,
    Feed,
    S,
    errors_of,
)


def test_startup_waterfall_first_occurrence_wins() -> None:
    f = Feed()
    root = f.span()
    f(k.StartupBegan(command="run", version="0.1"), at=0, span_id=root)
    f(k.FlagsParsed(changed_count=2), at=0.01, dur_ns=10_000_000)
    lst = f.span()
    f(k.InformerListBegan(resource="pods"), at=0.5, span_id=lst)
    f(k.InformerListFinished(resource="pods", items=3), at=0.7, span_id=lst, dur_ns=200_000_000)
    relist = f.span()
    f(k.InformerListBegan(resource="pods"), at=50, span_id=relist)
    f(k.InformerListFinished(resource="pods"), at=51, span_id=relist, dur_ns=S)
    f(k.LeaseAcquired(lease=LEASE, identity="a", waited_ms=300.0), at=0.4)
    f(k.StartupFinished(), at=1, span_id=root, dur_ns=S)
    steps = f.state.snapshot()["instances"]["a"]["steps"]
    assert {n: (b["start_ts"] - T0, b["dur_ns"], b["outcome"]) for n, b in steps.items()} == {
        "startup": (0, S, "ok"),
        "flags.parsed": (0, 10_000_000, "ok"),
        "informer.list/pods": (500_000_000, 200_000_000, "ok"),
        "lease.acquired": (100_000_000, 300_000_000, "ok"),
    }
    assert f.state.snapshot()["instances"]["a"]["version"] == "0.1"


def test_instance_new_startup_after_finished_one_resets_waterfall_and_role() -> None:
    f = Feed()
    first = f.span()
    f(k.StartupBegan(version="0.1"), at=0, span_id=first)
    f(k.LeaseAcquired(lease=LEASE, identity="a"), at=1)
    f(k.StartupFinished(), at=2, span_id=first, dur_ns=2 * S)
    f(k.ManagerStopped(reason="lease lost", exit_code=1), at=30)
    assert f.state.snapshot()["instances"]["a"]["role"] == "stopped"
    second = f.span()
    f(k.StartupBegan(version="0.2"), at=40, span_id=second)
    inst = f.state.snapshot()["instances"]["a"]
    assert (inst["role"], inst["version"], inst["exit_code"]) == ("unknown", "0.2", None)
    assert inst["steps"] == {
        "startup": {"start_ts": T0 + 40 * S, "dur_ns": 0, "outcome": "", "error": ""}
    }
    assert errors_of(f.state.snapshot()) == [
        ("a", "manager.stopped", "manager stopped (exit 1): lease lost")
    ]


def test_health_check_changes_keep_latest_state() -> None:
    f = Feed()
    f(k.HealthCheckChanged(check="leaderElection", healthy=True), at=0)
    f(k.HealthCheckChanged(check="leaderElection", healthy=False, reason="renew late"), at=5)
    health = f.state.snapshot()["instances"]["a"]["health"]
    assert health == {
        "leaderElection": {"healthy": False, "reason": "renew late", "ts": T0 + 5 * S}
    }
