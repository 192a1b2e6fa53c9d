"""The demo's chaos controls against a real demo (emulator and replicas as processes): killing
the leader, or running a standby's clock fast, hands the lease to another replica and the demo
carries on."""

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


@pytest.mark.asyncio
async def test_clock_skew_key_fast_standby_takes_the_lease_demo_stays_healthy() -> None:
    lines: list[str] = []
    options = DemoOptions(
        replicas=("replica-a", "replica-b"),
        lease_duration="2s",
        renew_deadline="1500ms",
        retry_period="500ms",
    )
    orchestrator = Orchestrator(options, lines.append)
    stop = asyncio.Event()
    run = asyncio.create_task(orchestrator.run(stop), name="demo")
    chaos = Chaos(orchestrator)
    try:
        async with asyncio.timeout(90):
            while not orchestrator.verdict.leaders:
                assert not run.done(), lines
                await asyncio.sleep(0.1)
            first = orchestrator.verdict.leaders[0]
            other = next(r for r in options.replicas if r != first)
            message = await chaos.skew_standby_clock()
    finally:
        stop.set()
        verdict = await run
        await chaos.aclose()
    # 1.25 × lease / retry = 5×: the standby's 2 s lease lasts 0.4 s, under the 0.5 s between
    # the leader's renewals, so it takes the lease although nothing is wrong with the leader.
    assert message.startswith(f"ran {other}'s clock at 5x: it took the healthy lease from {first}")
    assert f"({first} fenced, exited 1, restarted)" in message, message
    assert verdict.ok, verdict.problems
    assert verdict.leaders[:2] == [first, other]
