"""Coordinated leader election in the state: each lease's candidates (versions, renewals and
answered pings) and the coordinator's strategy and preferred holder; a dump loads back."""

from __future__ import annotations

from pycm.trace import kinds as k
from pycm.trace.state.domains import State
from tests.trace.state.script import LEASE, T0, Feed, S


def _renewed(name: str, emulation: str, pinged: bool = False) -> k.LeaseCandidateRenewed:
    return k.LeaseCandidateRenewed(
        candidate=f"kube-system/{name}",
        lease=LEASE,
        binary_version="1.36.0",
        emulation_version=emulation,
        strategy="OldestEmulationVersion",
        pinged=pinged,
    )


def test_lease_candidates_and_preferred_holder_fold_into_the_lease() -> None:
    f = Feed()
    f(_renewed("a", "1.36.0"), at=0, instance="a")
    f(_renewed("b", "1.35.0"), at=1, instance="b")
    f(_renewed("a", "1.36.0", pinged=True), at=7, instance="a")
    f(
        k.LeaseCoordinationObserved(
            lease=LEASE, holder="a", preferred_holder="b", strategy="OldestEmulationVersion"
        ),
        at=8,
        instance="a",
    )
    lease = f.state.snapshot()["leases"][LEASE]
    assert (lease["holder"], lease["preferred_holder"], lease["strategy"]) == (
        "a",
        "b",
        "OldestEmulationVersion",
    )
    shown = {
        name: (c["emulation_version"], c["renews"], c["pings"], c["last_renew_ts"])
        for name, c in lease["candidates"].items()
    }
    assert shown == {"a": ("1.36.0", 2, 1, T0 + 7 * S), "b": ("1.35.0", 1, 0, T0 + 1 * S)}
    # The hand-over: the holder changes, the preferred holder is cleared.
    f(
        k.LeaseCoordinationObserved(
            lease=LEASE, holder="b", preferred_holder="", strategy="OldestEmulationVersion"
        ),
        at=12,
        instance="b",
    )
    lease = f.state.snapshot()["leases"][LEASE]
    assert (lease["holder"], lease["preferred_holder"]) == ("b", "")
    assert [(h["old"], h["new"]) for h in lease["history"]] == [("", "a"), ("a", "b")]


def test_lease_candidates_survive_a_dump_and_load() -> None:
    f = Feed()
    f(_renewed("a", "1.36.0"), at=0)
    f(k.LeaseCoordinationObserved(lease=LEASE, holder="a", strategy="x/y"), at=1)
    restored = State.restore(f.state.snapshot())
    lease = restored.snapshot()["leases"][LEASE]
    assert lease["candidates"]["a"]["emulation_version"] == "1.36.0"
    assert lease["strategy"] == "x/y"
