"""The one replay player (``pycm top --replay`` and ``pycm dashboard --replay``), driven with a fake
clock into a recording sink: pacing, controls, bounds, and the source naming of each viewer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pycm.trace import kinds as k
from pycm.trace.events import Event
from pycm.trace.replay import MAX_PER_TICK, MAX_SPEED, ReplayPlayer
from pycm.trace.stream import SourceState, SourceStatus

S = 1_000_000_000
T0 = 1_790_000_000 * S


def added(seq: int, instance: str = "r1", ts: int | None = None) -> Event:
    return k.ItemAdded(
        queue="deployment",
        key=f"ns/k{seq}",
        depth=1,
        seq=seq,
        ts=T0 + seq * S if ts is None else ts,
        instance=instance,
    )


class Sink:
    """A ReplaySink that records what it was given, per source, and every reset."""

    def __init__(self) -> None:
        self.pushed: dict[str, list[Event]] = {}
        self.pushes = 0
        self.resets: list[str] = []
        self.status: dict[str, SourceStatus] = {}

    def push(self, source: str, events: Sequence[Event]) -> None:
        self.pushes += 1
        self.pushed.setdefault(source, []).extend(events)

    def push_snapshot(self, source: str, snapshot: Mapping[str, Any]) -> None:
        raise AssertionError("a replay pushes no snapshot")

    def set_status(self, source: str, status: SourceStatus) -> None:
        self.status[source] = status

    def reset(self, source: str) -> None:
        self.resets.append(source)
        self.pushed.pop(source, None)

    def seqs(self, source: str) -> list[int]:
        return [e.seq for e in self.pushed.get(source, [])]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_player_named_source_gets_every_process_merged_by_time() -> None:
    # cat r1.jsonl r2.jsonl into one viewer source (the TUI's): r2's events happened between r1's.
    r1 = [added(seq, "r1") for seq in (1, 2, 3)]
    r2 = [added(seq, "r2", ts=T0 + seq * S + S // 2) for seq in (1, 2, 3)]
    sink = Sink()
    player = ReplayPlayer(sink, r1 + r2, name="replay trace.jsonl", clock=Clock())
    player.seek(3600)
    assert list(sink.pushed) == ["replay trace.jsonl"]
    got = [(e.instance, e.seq) for e in sink.pushed["replay trace.jsonl"]]
    assert got == [("r1", 1), ("r2", 1), ("r1", 2), ("r2", 2), ("r1", 3), ("r2", 3)]
    assert sink.status == {"replay trace.jsonl": SourceStatus(SourceState.CONNECTED)}


def test_player_unnamed_one_source_per_process_connected_before_any_event() -> None:
    sink = Sink()
    ReplayPlayer(sink, [added(1, ""), added(2, "r1"), added(3, "r2")], clock=Clock())
    assert list(sink.status) == ["r1", "r2"] and sink.pushed == {}


def test_player_resume_after_pause_keeps_the_recorded_gap() -> None:
    # The TUI's player took the next event as due at once on resume; the recorded gap is kept.
    clock = Clock()
    sink = Sink()
    player = ReplayPlayer(sink, [added(1), added(2), added(5)], clock=clock)
    player.tick()
    clock.now += 1.0
    player.tick()
    assert sink.seqs("r1") == [1, 2]
    player.pause()
    clock.now += 50
    player.tick()
    player.play()
    player.tick()
    clock.now += 2.9  # event time T0 + 4.9 s: event 5 is not due yet
    player.tick()
    assert sink.seqs("r1") == [1, 2]
    clock.now += 0.2
    player.tick()
    assert sink.seqs("r1") == [1, 2, 5]


def test_player_toggle_play_at_the_end_plays_again_from_the_start() -> None:
    # Both viewers now: the TUI's space at the end did nothing, the dashboard's Play restarted.
    clock = Clock()
    sink = Sink()
    player = ReplayPlayer(sink, [added(1), added(2)], clock=clock, name="rec")
    player.seek(10)
    assert player.ended and player.playback().text.startswith("ended")
    player.toggle_play()
    player.tick()
    assert sink.resets == ["rec"] and sink.seqs("rec") == [1] and player.playing
    player.toggle_play()
    assert not player.playing and player.playback().text.startswith("paused")


def test_player_tick_pushes_at_most_max_per_tick_in_batches() -> None:
    events = [added(seq, ts=T0) for seq in range(1, 2 * MAX_PER_TICK + 11)]
    sink = Sink()
    player = ReplayPlayer(sink, events, speed=math.inf, clock=Clock())
    player.tick()
    assert player.index == MAX_PER_TICK and sink.pushes == 8
    player.tick()
    player.tick()
    assert player.index == len(events) and sink.seqs("r1") == list(range(1, len(events) + 1))


@pytest.mark.parametrize(
    ("seconds", "position"),
    [
        pytest.param(1e300, T0 + 3 * S, id="far-forward"),
        pytest.param(-1e300, T0 + 1 * S, id="far-back"),
        pytest.param(-1.0, T0 + 2 * S, id="within"),
    ],
)
def test_player_seek_far_past_either_end_stops_at_that_end(seconds: float, position: int) -> None:
    sink = Sink()
    player = ReplayPlayer(sink, [added(1), added(2), added(3)], clock=Clock(), name="rec")
    player.seek(10)
    player.seek(seconds)
    assert player.position_ts == position
    assert sink.seqs("rec") == list(range(1, player.index + 1))


def test_player_speed_must_be_positive_and_is_capped_shown_as_max() -> None:
    sink = Sink()
    with pytest.raises(ValueError, match="must be > 0"):
        ReplayPlayer(sink, [], speed=0)
    player = ReplayPlayer(sink, [added(1), added(2)], speed=math.inf, clock=Clock())
    assert player.speed == MAX_SPEED and player.info()["speed"] == MAX_SPEED
    assert " max " in player.playback().text
    with pytest.raises(ValueError, match="must be > 0"):
        player.set_speed(math.nan)
    player.change_speed(0.5)
    assert player.speed == 64.0
    player.change_speed(2.0)
    player.change_speed(2.0)
    assert player.speed == MAX_SPEED
