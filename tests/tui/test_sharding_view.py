"""The Sharding view of `pycm top` (pilot-driven, fed the synthetic ring trace): hidden while the
trace has no ring, then the members with their Lease, share, keys, objects and drains, and the
ring's moves;
a drain under way and a fenced member while they last."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent

from pycm.sharding.ring import Ring
from tests.support.sharding_trace import T0, layout_written, ring_trace
from tests.tui import scenario
from tests.tui.conftest import settle, table_rows, text_of
from tui.app import TopApp
from tui.sources import ListSource

SIZE = (180, 50)
S = 1_000_000_000


def _tab_shown(app: TopApp, vid: str) -> bool:
    tabs = app.query_one(TabbedContent)
    return bool(tabs.get_tab(vid).display)


@pytest.mark.asyncio
async def test_sharding_tab_is_hidden_without_a_ring_and_skipped_by_tab() -> None:
    app = TopApp([ListSource(scenario.build())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not _tab_shown(app, "sharding")
        await pilot.press("7")
        assert app.query_one(TabbedContent).active == "overview"
        await pilot.press("shift+tab")
        assert app.query_one(TabbedContent).active == "events"  # not the hidden tab


@pytest.mark.asyncio
async def test_sharding_view_shows_members_shares_drains_and_moves() -> None:
    app = TopApp([ListSource(ring_trace())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _tab_shown(app, "sharding")
        await pilot.press("7")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "sharding"
        summary = text_of(app, "#sharding-summary")
        assert "ring pycm: 3 live of 4 members seen" in summary
        assert "drains 3, fences 1" in summary
        assert "layout" not in summary  # none written in this trace
        rows = {r[1]: r for r in table_rows(app, "#sharding-table")}
        assert sorted(rows) == ["pycm-0", "pycm-1", "pycm-2", "pycm-3"]
        three = Ring.of(["pycm-0", "pycm-1", "pycm-2"])
        zero = rows["pycm-0"]
        assert zero[2] == "live" and zero[3] == f"{three.share('pycm-0') * 100:.1f}%"
        # keys (the replica sets' and deployments' objects), objects (pods too), drains
        assert (zero[5], zero[6], zero[9], zero[10], zero[11]) == ("39", "118", "2", "2.5s", "0")
        assert rows["pycm-1"][11] == "1"
        assert rows["pycm-3"][2] == "left"
        moves = text_of(app, "#sharding-moves")
        assert "pycm-3 left after 20s on the ring" in moves
        assert "pycm-1 fenced: renewed 10.2s ago (deadline 10s)" in moves
        # The filter keeps one member's rows and moves.
        await pilot.press("slash", *"pycm-3")
        await settle(pilot)
        assert [r[1] for r in table_rows(app, "#sharding-table")] == ["pycm-3"]
        assert "pycm-1 fenced" not in text_of(app, "#sharding-moves")


@pytest.mark.asyncio
async def test_sharding_view_shows_a_running_drain_and_a_fence_while_they_last() -> None:
    events = [e for e in ring_trace() if e.ts <= T0 + 21 * S]
    cut = [e for e in events if e.ts <= T0 + 13 * S]
    app = TopApp([ListSource(cut)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        assert "draining: pycm-0" in text_of(app, "#sharding-summary")
        zero = {r[1]: r for r in table_rows(app, "#sharding-table")}["pycm-0"]
        assert zero[8] == "1 key(s), 0.0s ago"  # now is the newest event: the drain's start
        four = Ring.of(["pycm-0", "pycm-1", "pycm-2", "pycm-3"])
        assert zero[4] == f"{four.share('pycm-0') * 100:.1f}%"  # the share it moves to
        app.feed.push("more", events[len(cut) :])
        await settle(pilot)
        summary = text_of(app, "#sharding-summary")
        assert "fenced: pycm-1" in summary and "draining" not in summary
        assert {r[1]: r for r in table_rows(app, "#sharding-table")}["pycm-1"][2] == "fenced"


@pytest.mark.asyncio
async def test_sharding_view_names_the_layout_a_member_wrote() -> None:
    app = TopApp([ListSource([*ring_trace(), layout_written(40.0, "0123456789ab", "")])])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        assert "layout 0123456789ab (1 written)" in text_of(app, "#sharding-summary")
        assert "pycm-1 wrote layout 0123456789ab" in text_of(app, "#sharding-moves")
