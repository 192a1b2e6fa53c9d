"""The recorder (bus → JSON lines with rotation), the reader and replay."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import threading
import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pycm.trace.bus import Bus
from pycm.trace.codec import encode
from pycm.trace.events import REGISTRY, Event
from pycm.trace.kinds import ItemAdded, SubscriberLagged
from pycm.trace.recorder import (
    BadLine,
    ReadStats,
    Recorder,
    read_events,
    recording_files,
    recording_problem,
    replay,
)
from pycm.util.clock import FakeClock
from tests.trace.kind_samples import all_samples

# --- helpers ----------------------------------------------------------------------------------


def _item(i: int) -> ItemAdded:
    return ItemAdded(queue="deployment", key=f"default/web-{i:04d}", depth=i)


async def _record(path: Path, events: list[Event], **kwargs: Any) -> Recorder:
    """Record ``events`` through a real bus and recorder task, then close the recorder."""
    bus = Bus(instance="test")
    recorder = Recorder(path, **kwargs)
    sub = recorder.attach(bus, maxsize=len(events) + 1)
    task = asyncio.create_task(recorder.run(sub), name="recorder")
    for event in events:
        bus.emit(event)
    await recorder.close()
    await task
    return recorder


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _keys(events: list[Event]) -> list[str]:
    return [e.key for e in events if isinstance(e, ItemAdded)]


# --- round trip -------------------------------------------------------------------------------


def test_kind_samples_every_field_differs_from_its_default() -> None:
    for event in all_samples():
        for f in dataclasses.fields(event):
            assert getattr(event, f.name) != f.default, f"{event.KIND}.{f.name}"


@pytest.mark.asyncio
async def test_recorder_every_kind_round_trips_losslessly(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    originals = all_samples()
    recorder = Recorder(path)
    bus = Bus()
    recorder.attach(bus)
    # Delivered as they are, each at the bus's next seq: emit would restamp seq and ts.
    for event in originals:
        bus._seq += 1
        bus.deliver(event)
    await recorder.close()

    back = list(read_events(path))

    assert len(originals) == len(REGISTRY)
    assert back == originals
    assert [type(e) for e in back] == [type(e) for e in originals]
    for event in back:
        hints = typing.get_type_hints(type(event))
        for name, tp in hints.items():
            if isinstance(tp, type) and issubclass(tp, float):
                assert isinstance(getattr(event, name), float)
    assert path.read_bytes().count(b"\n") == len(originals)  # escaped newlines stay escaped


@pytest.mark.asyncio
async def test_recorder_bus_events_written_in_emit_order(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    recorder = await _record(path, [_item(i) for i in range(2500)], batch_limit=100)

    back = list(read_events(path))

    assert [e.seq for e in back] == list(range(1, 2501))
    assert all(e.instance == "test" for e in back)
    assert recorder.events_written == 2500


@pytest.mark.asyncio
async def test_recorder_flush_during_run_keeps_emit_order(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    bus = Bus()
    recorder = Recorder(path, batch_limit=3)
    sub = recorder.attach(bus)
    task = asyncio.create_task(recorder.run(sub), name="recorder")
    for i in range(60):
        bus.emit(_item(i))
        if i % 7 == 0:
            await recorder.flush()  # competes with the running task for the file
        elif i % 5 == 0:
            await asyncio.sleep(0)
    await recorder.flush()
    assert [e.seq for e in read_events(path)] == list(range(1, 61))  # flushed means on disk
    await recorder.close()
    await task


@pytest.mark.asyncio
async def test_recorder_run_without_subscription_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="subscription"):
        await Recorder(tmp_path / "t.jsonl").run()


@pytest.mark.asyncio
async def test_recorder_existing_file_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await _record(path, [_item(i) for i in range(3)])
    await _record(path, [_item(i) for i in range(3, 5)])

    assert _keys(list(read_events(path))) == [f"default/web-{i:04d}" for i in range(5)]


# --- rotation ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_recorder_small_max_bytes_rotates_and_drops_oldest(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    line_size = len(encode(_item(0))) + 1
    max_bytes = line_size * 5 + 10  # five lines a file
    recorder = await _record(
        path, [_item(i) for i in range(40)], max_bytes=max_bytes, backups=2, batch_limit=7
    )

    files = _listing(tmp_path)
    assert files == ["trace.jsonl", "trace.jsonl.1", "trace.jsonl.2"]
    oldest_first = [tmp_path / n for n in ("trace.jsonl.2", "trace.jsonl.1", "trace.jsonl")]
    contents = [p.read_bytes() for p in oldest_first]
    for data in contents:
        assert len(data) <= max_bytes
        assert data.endswith(b"\n")
    # Each rotated file was full: its successor's first line would not have fitted.
    for data, after in itertools.pairwise(contents):
        assert len(data) + len(after.split(b"\n", 1)[0]) + 1 > max_bytes
    assert recorder.rotations >= 6
    # Oldest first across the set, without a gap, ending with the newest; the oldest dropped.
    seqs = [e.seq for e in read_events(path, rotated=True)]
    assert seqs == list(range(seqs[0], 41))
    assert seqs[0] > 1
    assert len(seqs) == sum(d.count(b"\n") for d in contents)
    assert [e.seq for e in read_events(oldest_first[0])] == seqs[: contents[0].count(b"\n")]


@pytest.mark.asyncio
async def test_recorder_line_bigger_than_max_bytes_gets_a_file_to_itself(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await _record(path, [_item(i) for i in range(4)], max_bytes=20, backups=5)

    names = _listing(tmp_path)
    assert names == ["trace.jsonl", "trace.jsonl.1", "trace.jsonl.2", "trace.jsonl.3"]
    for name in names:
        assert (tmp_path / name).read_bytes().count(b"\n") == 1
    assert [e.seq for e in read_events(path, rotated=True)] == [1, 2, 3, 4]


@pytest.mark.asyncio
async def test_recorder_zero_backups_keeps_only_the_current_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    line_size = len(encode(_item(0))) + 1
    await _record(path, [_item(i) for i in range(7)], max_bytes=line_size * 3, backups=0)

    assert _listing(tmp_path) == ["trace.jsonl"]
    assert [e.seq for e in read_events(path, rotated=True)] == [7]


def test_recording_files_lists_the_unbroken_rotated_run_oldest_first(tmp_path: Path) -> None:
    base = tmp_path / "t.jsonl"
    for name in ("t.jsonl", "t.jsonl.1", "t.jsonl.2", "t.jsonl.4"):
        (tmp_path / name).write_bytes(b"")

    assert [p.name for p in recording_files(base)] == ["t.jsonl.2", "t.jsonl.1", "t.jsonl"]


# --- lag, slow disk, stopping -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_recorder_overflowed_subscription_writes_the_lag_event(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    bus = Bus(instance="a")
    recorder = Recorder(path)
    recorder.attach(bus, maxsize=4)
    for i in range(10):
        bus.emit(_item(i))
    await recorder.flush()
    await recorder.close()

    back = list(read_events(path))

    assert isinstance(back[0], SubscriberLagged)
    assert (back[0].subscriber, back[0].lost, back[0].instance) == ("recorder", 6, "a")
    assert [e.seq for e in back[1:]] == [7, 8, 9, 10]


@pytest.mark.asyncio
async def test_recorder_slow_disk_lags_instead_of_blocking_the_emitter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trace.jsonl"
    bus = Bus()
    recorder = Recorder(path)
    sub = recorder.attach(bus, maxsize=4)
    writing, release = threading.Event(), threading.Event()
    real_write = recorder._write_lines

    def slow_write(events: list[Event]) -> None:
        writing.set()
        assert release.wait(10)
        real_write(events)

    monkeypatch.setattr(recorder, "_write_lines", slow_write)
    task = asyncio.create_task(recorder.run(sub), name="recorder")
    bus.emit(_item(0))
    assert await asyncio.to_thread(writing.wait, 10)  # the first write is stuck on the "disk"
    for i in range(1, 21):
        bus.emit(_item(i))  # returns at once every time: emit is synchronous and bounded
    assert sub.pending == 4
    release.set()
    await recorder.close()
    await task

    back = list(read_events(path))
    assert [e.seq for e in back if not isinstance(e, SubscriberLagged)] == [1, 18, 19, 20, 21]
    lag = back[1]
    assert isinstance(lag, SubscriberLagged)
    assert lag.lost == 16


@pytest.mark.asyncio
async def test_recorder_cancelled_task_writes_what_it_received(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    bus = Bus()
    recorder = Recorder(path)
    sub = recorder.attach(bus)
    task = asyncio.create_task(recorder.run(sub), name="recorder")
    await asyncio.sleep(0)  # parked in sub.wait()
    for i in range(5):
        bus.emit(_item(i))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await recorder.close()

    assert [e.seq for e in read_events(path)] == [1, 2, 3, 4, 5]


@pytest.mark.asyncio
async def test_recorder_close_is_idempotent_and_unsubscribes(tmp_path: Path) -> None:
    bus = Bus()
    recorder = Recorder(tmp_path / "t.jsonl")
    recorder.attach(bus)
    await recorder.close()
    await recorder.close()
    assert bus.subscribers == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"max_bytes": 0}, id="max_bytes"),
        pytest.param({"backups": -1}, id="backups"),
        pytest.param({"batch_limit": 0}, id="batch_limit"),
    ],
)
def test_recorder_bad_limits_are_rejected(tmp_path: Path, kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        Recorder(tmp_path / "t.jsonl", **kwargs)


# --- reading damaged recordings ---------------------------------------------------------------


def _write_lines(path: Path, events: list[Event], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(encode(e) + b"\n" for e in events) + tail)


def test_read_events_truncated_last_line_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = [dataclasses.replace(_item(i), seq=i + 1) for i in range(3)]
    _write_lines(path, events, tail=encode(_item(9))[:25])
    seen: list[BadLine] = []
    stats = ReadStats()

    back = list(read_events(path, stats=stats, on_bad_line=seen.append))

    assert back == events
    assert stats.truncated
    assert (stats.lines, stats.events) == (4, 3)
    assert len(seen) == 1
    assert seen[0] == stats.bad[0]
    assert (seen[0].line, seen[0].truncated, seen[0].path) == (4, True, str(path))


def test_read_events_bad_middle_lines_are_skipped_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = [encode(dataclasses.replace(_item(i), seq=i + 1)) for i in range(3)]
    path.write_bytes(
        good[0] + b"\nnot json\n\n" + good[1] + b'\n{"no":"kind"}\n\xff\xfe\n' + good[2] + b"\n"
    )
    stats = ReadStats()

    back = list(read_events(path, stats=stats))

    assert [e.seq for e in back] == [1, 2, 3]
    assert [(b.line, b.truncated) for b in stats.bad] == [(2, False), (5, False), (6, False)]
    assert not stats.truncated
    assert "kind" in stats.bad[1].error


def test_read_events_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(read_events(tmp_path / "nope.jsonl"))


# --- replay -----------------------------------------------------------------------------------


class RecordingClock(FakeClock):
    """A FakeClock that remembers every sleep it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await super().sleep(seconds)


async def _drive(clock: FakeClock, replayed: AsyncIterator[Event]) -> list[tuple[float, Event]]:
    """Consume ``replayed`` while moving the fake clock to each sleeper's deadline."""
    start = clock.monotonic()
    out: list[tuple[float, Event]] = []

    async def consume() -> None:
        async for event in replayed:
            out.append((round(clock.monotonic() - start, 9), event))

    task = asyncio.create_task(consume(), name="consume")
    while not task.done():
        await asyncio.sleep(0)
        deadline = clock.next_deadline()
        if deadline is not None:
            clock.advance(max(0.0, deadline - clock.monotonic()))
    await task
    return out


_T0 = 1_700_000_000_000_000_000


def _timed(offsets_ms: list[int]) -> list[Event]:
    return [
        dataclasses.replace(_item(i), seq=i + 1, ts=_T0 + ms * 1_000_000)
        for i, ms in enumerate(offsets_ms)
    ]


@pytest.mark.asyncio
async def test_replay_speed_two_sleeps_half_of_each_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = _timed([0, 1000, 1500, 1500, 4000])
    _write_lines(path, events)
    clock = RecordingClock()

    out = await _drive(clock, replay(path, speed=2.0, clock=clock))

    assert [e for _, e in out] == events
    assert clock.sleeps == [0.5, 0.25, 1.25]
    assert [t for t, _ in out] == [0.0, 0.5, 0.75, 0.75, 2.0]


@pytest.mark.asyncio
async def test_replay_lag_notice_does_not_move_the_schedule(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first, second = _timed([0, 1000])
    # The lag notice carries the time the recorder read it: later than what follows it.
    lag = SubscriberLagged(subscriber="recorder", lost=3, ts=_T0 + 60_000_000_000)
    _write_lines(path, [first, lag, second])
    clock = RecordingClock()

    out = await _drive(clock, replay(path, clock=clock))

    assert [e for _, e in out] == [first, lag, second]
    assert clock.sleeps == [1.0]


@pytest.mark.asyncio
@pytest.mark.parametrize("speed", [pytest.param(0.0, id="zero"), pytest.param(math.inf, id="inf")])
async def test_replay_unpaced_speed_never_sleeps(tmp_path: Path, speed: float) -> None:
    path = tmp_path / "t.jsonl"
    events = _timed([0, 1000, 5000])
    _write_lines(path, events)
    clock = RecordingClock()

    out = [e async for e in replay(path, speed=speed, clock=clock)]

    assert out == events
    assert clock.sleeps == []


@pytest.mark.asyncio
async def test_replay_negative_speed_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write_lines(path, _timed([0]))
    with pytest.raises(ValueError):
        async for _ in replay(path, speed=-1.0):
            pass


@pytest.mark.asyncio
async def test_replay_rotated_set_plays_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = _timed([0, 10, 20, 30])
    _write_lines(Path(f"{path}.1"), events[:2])
    _write_lines(path, events[2:])

    out = [e async for e in replay(path, speed=0, rotated=True)]

    assert out == events


def test_recording_problem_tells_a_recording_from_the_wrong_file(tmp_path: Path) -> None:
    good = encode(ItemAdded(key="k", ts=1))
    cases = {
        "recording": good + b"\n",
        "damaged": b"garbage\n" * 3 + good + b"\n" + good[:20],  # a cut recording is one
        "empty": b"",  # a recorder that saw nothing yet
        "blank": b"\n\n",
        "notes": b"hello\n\nworld\n",
        "long": b"x\n" * 500 + good + b"\n",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    problems = {name: recording_problem(tmp_path / name) for name in cases}
    assert problems == {
        "recording": None,
        "damaged": None,
        "empty": None,
        "blank": None,
        "notes": "not a recording: none of its 2 line(s) is an event (line 1: not JSON: "
        "unexpected character, expected a JSON value: line 1 column 1 (char 0))",
        # (stops reading at the 100th bad line: a recording does not start with 100 of them)
        "long": "not a recording: its first 100 lines are not events (line 1: not JSON: "
        "unexpected character, expected a JSON value: line 1 column 1 (char 0))",
    }
    assert recording_problem(tmp_path / "missing") == "no such file"
    assert recording_problem(tmp_path) == "not a file"
