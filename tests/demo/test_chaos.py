"""The demo's chaos controls against a real demo (emulator and three replicas as processes):
killing the leader hands the lease to another replica and the demo carries on."""

from __future__ import annotations

import asyncio

import pytest

from pycm.demo.chaos import Chaos
from pycm.demo.orchestrator import DemoOptions, Orchestrator

pytestmark = pytest.mark.e2e


@pytest.mark.asyncio
async def test_kill_leader_hands_over_and_the_demo_stays_healthy() -> None:
    lines: list[str] = []
    options = DemoOptions(lease_duration="2s", renew_deadline="1500ms", retry_period="500ms")
    orchestrator = Orchestrator(options, lines.append)
    stop = asyncio.Event()
    run = asyncio.create_task(orchestrator.run(stop), name="demo")
    chaos = Chaos(orchestrator)
    try:
        async with asyncio.timeout(60):
            while not orchestrator.verdict.leaders:
                assert not run.done(), lines
                await asyncio.sleep(0.1)
            first = orchestrator.verdict.leaders[0]
            message = await chaos.kill_leader()
            assert message.startswith(f"killed the leader {first} (SIGKILL): replica-")
            assert "took over after" in message
            successor = message.split(": ", 1)[1].split(" ", 1)[0]
            assert successor != first
            scaled = await chaos.scale_workload()
            assert scaled == "scaled deployment default/demo-web to 5 replicas"
    finally:
        stop.set()
        verdict = await run
        await chaos.aclose()
    assert verdict.ok, verdict.problems
    assert verdict.leaders[:1] == [first]
    assert successor in verdict.leaders
