"""``--duration`` counts from the first lease, and start-up has its own bound."""

from __future__ import annotations

import asyncio
import time

import pytest

from pycm.demo import orchestrator
from pycm.demo.orchestrator import DemoOptions, Orchestrator


@pytest.mark.asyncio
async def test_duration_starts_when_a_replica_leads_not_when_the_demo_starts() -> None:
    orch = Orchestrator(DemoOptions(duration=0.2), out=lambda _line: None)
    started = time.monotonic()
    timer = asyncio.create_task(orch._timer(0.2))
    await asyncio.sleep(0.3)
    assert not timer.done(), "start-up (no lease yet) is not counted"
    orch._leader.set()
    await asyncio.wait_for(timer, 2)
    assert time.monotonic() - started >= 0.5
    assert not orch._leader_timed_out


@pytest.mark.asyncio
async def test_no_lease_within_the_start_up_bound_ends_the_timer_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(orchestrator, "LEADER_TIMEOUT", 0.1)
    orch = Orchestrator(DemoOptions(duration=30), out=lambda _line: None)
    await asyncio.wait_for(orch._timer(30), 2)
    assert orch._leader_timed_out
