"""The dashboard's lease panel with coordinated leader election: two replicas' snapshots (one a
step behind) merged into one candidates table, oldest emulation version first, and the
coordinator's preferred holder named; an uncoordinated lease shows none of it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ScriptedDashboard, hello

pytestmark = pytest.mark.browser

WAIT_MS = 10_000
LEASE = "kube-system/pycm"


def _snapshot(now: int, instance: str, **lease: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "now_ts": now,
        "instances": {instance: {"role": "leader", "first_ts": now - 10**10, "last_seq": 2}},
        "leases": {
            LEASE: {
                "name": LEASE,
                "holder": "r-new",
                "history": [{"ts": now - 5 * 10**9, "old": "", "new": "r-new"}],
                "renew_history": [],
                **lease,
            }
        },
    }


def _candidate(emulation: str, renewed: int, pings: int = 0) -> dict[str, Any]:
    return {
        "binary_version": "1.36.0",
        "emulation_version": emulation,
        "strategy": "OldestEmulationVersion",
        "renews": 1 + pings,
        "pings": pings,
        "last_renew_ts": renewed,
        "touched": 1,
    }


def test_lease_panel_lists_candidates_and_the_preferred_holder(
    scripted: ScriptedDashboard, page: Page
) -> None:
    now = time.time_ns()
    leader = _snapshot(
        now,
        "r-new",
        strategy="OldestEmulationVersion",
        preferred_holder="r-old",
        candidates={"r-new": _candidate("1.36.0", now - 10**9, pings=2)},
    )
    standby = _snapshot(
        now,
        "r-old",
        strategy="OldestEmulationVersion",
        candidates={
            "r-old": _candidate("1.35.0", now - 2 * 10**9),
            "r-new": _candidate("1.36.0", now - 9 * 10**9),  # older: the leader's row wins
        },
    )
    page.goto(
        scripted.page(
            [hello([{"name": "r-new", "snapshot": leader}, {"name": "r-old", "snapshot": standby}])]
        )
    )
    rows = page.locator("#lease-candidates tbody tr")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    cells = [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(2)]
    assert cells == [
        ["r-old", "1.35.0", "1.36.0", "1", "0", "preferred"],
        ["r-new", "1.36.0", "1.36.0", "3", "2", "holder"],
    ]
    expect(page.locator("#lease-coordination")).to_have_text(
        "coordinated (OldestEmulationVersion) — preferred holder r-old: r-new is stepping down"
    )


def test_lease_panel_of_an_uncoordinated_lease_hides_the_candidates(
    scripted: ScriptedDashboard, page: Page
) -> None:
    now = time.time_ns()
    page.goto(scripted.page([hello([{"name": "r-new", "snapshot": _snapshot(now, "r-new")}])]))
    expect(page.locator("#lease-changes li")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#lease-candidates")).to_be_hidden()
    expect(page.locator("#lease-coordination")).to_be_hidden()
