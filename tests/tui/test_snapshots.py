"""SVG snapshots of the Overview and Leader views over the frozen scenario (no wall clock in
the rendering: every "ago" is against the reducer's now_ts). Update with --snapshot-update."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from tests.tui import scenario
from tests.tui.conftest import settle
from tui.app import TopApp
from tui.sources import ListSource

SIZE = (150, 42)


def frozen_app() -> TopApp:
    return TopApp([ListSource(scenario.build())])


def test_overview_snapshot(snap_compare: Any) -> None:
    async def ready(pilot: Pilot[int]) -> None:
        await settle(pilot)

    assert snap_compare(frozen_app(), terminal_size=SIZE, run_before=ready)


def test_leader_snapshot(snap_compare: Any) -> None:
    async def ready(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)

    assert snap_compare(frozen_app(), terminal_size=SIZE, run_before=ready)
