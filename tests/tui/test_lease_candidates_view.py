"""The leader view with coordinated leader election (pilot-driven): the coordinator's strategy
and preferred holder in the summary, the candidates with their versions in the details, oldest
emulation version first; nothing of it for a lease that is not coordinated."""

from __future__ import annotations

import pytest

from pycm.trace import kinds as k
from tests.tui import scenario
from tests.tui.conftest import settle, text_of
from tui.app import TopApp
from tui.sources import ListSource

SIZE = (160, 50)


def _coordinated() -> list:  # type: ignore[type-arg]
    s = scenario.Script()
    t = scenario.T0
    for at, inst, emulation in ((0, scenario.A, "1.36.0"), (1, scenario.B, "1.35.0")):
        s.add(
            k.LeaseCandidateRenewed(
                candidate=f"kube-system/{inst}",
                lease=scenario.LEASE,
                binary_version="1.36.0",
                emulation_version=emulation,
                strategy="OldestEmulationVersion",
            ),
            t + at * scenario.S,
            inst,
        )
    s.add(k.LeaseAcquired(lease=scenario.LEASE, identity=scenario.A), t, scenario.A)
    s.add(
        k.LeaseCoordinationObserved(
            lease=scenario.LEASE,
            holder=scenario.A,
            preferred_holder=scenario.B,
            strategy="OldestEmulationVersion",
        ),
        t + 2 * scenario.S,
        scenario.A,
    )
    return s.events


@pytest.mark.asyncio
async def test_leader_view_shows_preferred_holder_and_candidates() -> None:
    app = TopApp([ListSource(_coordinated())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        summary = text_of(app, "#lease-summary")
        assert "coordinated (OldestEmulationVersion)" in summary
        assert "preferred holder pycm-b: the holder is stepping down" in summary
        details = text_of(app, "#lease-details")
        rows = [line.split() for line in details.splitlines() if line.strip().startswith("pycm-")]
        candidates = [r for r in rows if r[1].startswith("1.3")]
        assert candidates == [
            ["pycm-b", "1.35.0", "1.36.0", "1", "0", "preferred"],
            ["pycm-a", "1.36.0", "1.36.0", "1", "0", "holder"],
        ]


@pytest.mark.asyncio
async def test_leader_view_of_an_uncoordinated_lease_has_no_candidates() -> None:
    app = TopApp([ListSource(scenario.build())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert "coordinated" not in text_of(app, "#lease-summary")
        assert "candidates" not in text_of(app, "#lease-details")
