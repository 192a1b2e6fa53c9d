"""The stuck-worker watcher: a hung sync is named once per processing, and let go."""

from __future__ import annotations

import asyncio

import pytest

from pycm.controller import Controller
from pycm.controller.stuck import StuckWorkerWatcher
from pycm.trace.bus import Bus
from pycm.trace.kinds import WorkerStuck, WorkerUnstuck
from pycm.util.clock import FakeClock


async def _settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def _marks(bus: Bus) -> list[tuple[str, str, str, int, float]]:
    return [
        (type(e).__name__, e.controller, e.key, e.worker, e.processing_s)
        for e in bus.recent()
        if isinstance(e, WorkerStuck | WorkerUnstuck)
    ]


@pytest.mark.asyncio
async def test_stuck_watcher_names_a_hung_sync_once_then_its_release() -> None:
    clock, bus = FakeClock(), Bus()
    release = asyncio.Event()

    async def sync(key: str) -> None:
        if key == "ns/hung":
            await release.wait()

    ctrl = Controller("replicaset", sync, clock=clock, bus=bus)
    watcher = StuckWorkerWatcher(lambda: {"replicaset": ctrl.queue}, 60.0, bus=bus, clock=clock)
    run = asyncio.get_running_loop().create_task(ctrl.run(2))
    await _settle()
    ctrl.enqueue("ns/hung")
    ctrl.enqueue("ns/fine")
    await _settle()
    clock.advance(59.0)
    watcher.check()
    assert _marks(bus) == []
    clock.advance(2.0)
    watcher.check()
    clock.advance(5.0)
    watcher.check()  # still the same processing: no second mark
    assert _marks(bus) == [("WorkerStuck", "replicaset", "ns/hung", 0, 61.0)]
    (stuck,) = [e for e in bus.recent() if isinstance(e, WorkerStuck)]
    assert stuck.threshold_s == 60.0
    release.set()
    await _settle()
    watcher.check()
    assert _marks(bus)[1:] == [("WorkerUnstuck", "replicaset", "ns/hung", 0, 66.0)]
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


@pytest.mark.asyncio
async def test_stuck_watcher_marks_a_new_processing_of_the_same_key_again() -> None:
    clock, bus = FakeClock(), Bus()
    gates = [asyncio.Event(), asyncio.Event()]

    async def sync(key: str) -> None:
        await gates.pop(0).wait() if gates else None

    ctrl = Controller("deployment", sync, clock=clock, bus=bus)
    watcher = StuckWorkerWatcher(lambda: {"deployment": ctrl.queue}, 1.0, bus=bus, clock=clock)
    assert watcher.interval == 0.25
    run = asyncio.get_running_loop().create_task(ctrl.run(1))
    await _settle()
    first, second = gates
    ctrl.enqueue("ns/a")
    await _settle()
    clock.advance(1.5)
    watcher.check()
    first.set()
    ctrl.enqueue("ns/a")  # taken again at once: a new processing, before the next tick
    await _settle()
    clock.advance(1.0)
    watcher.check()
    assert [m[0] for m in _marks(bus)] == ["WorkerStuck", "WorkerUnstuck", "WorkerStuck"]
    second.set()
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


def test_stuck_watcher_refuses_a_non_positive_threshold() -> None:
    with pytest.raises(ValueError, match="positive"):
        StuckWorkerWatcher(dict, 0.0, bus=Bus())
