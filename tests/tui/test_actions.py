"""Host actions (the demo's chaos keys): a key runs its coroutine once at a time and the
outcome is shown; a failing action is reported, never fatal."""

from __future__ import annotations

import asyncio

import pytest

from tests.tui.conftest import settle
from tui.actions import Action
from tui.app import TopApp
from tui.sources import ListSource


@pytest.mark.asyncio
async def test_action_key_runs_once_at_a_time_and_notifies() -> None:
    calls: list[str] = []
    gate = asyncio.Event()

    async def kill_leader() -> str:
        calls.append("kill")
        await gate.wait()
        return "killed replica-a (SIGKILL)"

    async def broken() -> str:
        raise RuntimeError("no leader yet")

    app = TopApp(
        [ListSource([])],
        actions=[Action("K", "kill leader", kill_leader), Action("L", "add latency", broken)],
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await pilot.press("K")  # still running: not started twice
        await settle(pilot)
        assert calls == ["kill"]
        gate.set()
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert "killed replica-a (SIGKILL)" in messages
        assert "add latency: RuntimeError: no leader yet" in messages
        await pilot.press("K")
        await settle(pilot)
        assert calls == ["kill", "kill"]
        gate.set()
        await settle(pilot)
