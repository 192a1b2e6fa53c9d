"""The in-process bus source and the replay source (play/pause, speed, seek)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pycm.trace import Bus, encode
from pycm.trace import kinds as k
from pycm.util.clock import FakeClock
from tests.tui import scenario
from tests.tui.conftest import settle
from tui.app import TopApp
from tui.feed import Feed
from tui.sources import BusSource, ReplaySource


@pytest.mark.asyncio
async def test_bus_source_backfills_the_ring_and_follows_live_events() -> None:
    bus = Bus(instance="pycm-a", clock=FakeClock())
    bus.emit(k.ControllerStarted(controller="deployment", workers=2))
    app = TopApp([BusSource(bus)])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert ("pycm-a", "deployment") in app.feed.state.controllers
        bus.emit(k.ItemAdded(queue="deployment", key="default/web", depth=1))
        await settle(pilot)
        assert app.snapshot["queues"]["pycm-a"]["deployment"]["depth"] == 1
        assert app.feed.statuses["in-process"] == "live"


def record(tmp_path: Path) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"\n".join(encode(e) for e in scenario.build()) + b"\nnot an event\n")
    return path


@pytest.mark.asyncio
async def test_replay_paces_by_event_time_pauses_and_seeks(tmp_path: Path) -> None:
    now = [0.0]
    source = ReplaySource(str(record(tmp_path)), speed=1.0, clock=lambda: now[0])
    feed = Feed()
    task = asyncio.create_task(source.run(feed), name="replay")
    try:
        while not source.events:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert source.bad_lines == 1
        first = source.index
        assert 0 < first < 30  # only what is due at t=0 (the first start-up events)
        now[0] = 31.0  # 31 s of event time later: the lease moved to pycm-b
        await asyncio.sleep(0.1)
        feed.drain()
        assert feed.state.leases[scenario.LEASE].holder == scenario.B
        source.toggle_play()  # pause: time passes, nothing more is pushed
        held = source.index
        now[0] = 100.0
        await asyncio.sleep(0.1)
        assert source.index == held and source.position.startswith("paused")
        source.seek(-30)  # back to before the change: the feed starts over
        feed.drain()
        assert feed.state.leases[scenario.LEASE].holder == scenario.A
        assert feed.generation == 1
        source.seek(1000)  # to the end
        feed.drain()
        assert source.index == len(source.events)
        assert feed.state.applied == len(scenario.build())
        source.change_speed(2.0)
        assert source.speed == 2.0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.mark.asyncio
async def test_replay_of_a_missing_file_shows_why_in_the_status(tmp_path: Path) -> None:
    app = TopApp([ReplaySource(str(tmp_path / "missing.jsonl"))])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await asyncio.sleep(0.05)
        await settle(pilot)
        assert app.feed.statuses[f"replay {tmp_path / 'missing.jsonl'}"].startswith("cannot read")


@pytest.mark.asyncio
async def test_replay_keys_play_pause_speed_and_seek(tmp_path: Path) -> None:
    now = [0.0]
    source = ReplaySource(str(record(tmp_path)), speed=1.0, clock=lambda: now[0])
    app = TopApp([source])
    async with app.run_test(size=(160, 50)) as pilot:
        while not source.events:
            await asyncio.sleep(0.01)
        await pilot.press("space")
        assert not source.playing
        await pilot.press("plus")
        assert source.speed == 2.0
        await pilot.press("minus", "minus")
        assert source.speed == 0.5
        await pilot.press("right_square_bracket")  # +10 s of event time
        await settle(pilot)
        assert app.snapshot["now_ts"] == source.current_ts
        assert scenario.T0 + 9 * scenario.S < source.current_ts <= scenario.T0 + 10 * scenario.S
        await pilot.press("left_square_bracket")  # back to the start: the state starts over
        await settle(pilot)
        assert source.current_ts < scenario.T0 + scenario.S
        assert app.feed.state.applied == source.index


@pytest.mark.asyncio
async def test_run_top_async_returns_once_stop_is_set() -> None:
    from tui.app import run_top_async

    bus = Bus(instance="pycm-a", clock=FakeClock())
    stop = asyncio.Event()
    top = asyncio.create_task(run_top_async([BusSource(bus)], stop=stop, headless=True), name="top")
    while bus.subscribers == 0:  # the app is up and its source subscribed
        await asyncio.sleep(0.01)
    stop.set()
    assert await asyncio.wait_for(top, 10) == 0
    assert bus.subscribers == 0  # the source's subscription was closed on exit
