"""Playing a ``--trace-file`` recording: the one replay player of ``pycm top --replay`` and
``pycm dashboard --replay``.

:func:`load_recording` reads a recording (blocking) and keeps the lines that are well-formed
events. A :class:`ReplayPlayer` pushes them into a :class:`~pycm.trace.sources.ReplaySink` (the
TUI's feed, the dashboard's hub) paced by event time: every :data:`TICK_S` the events whose time
has come at the current speed, at most :data:`MAX_PER_TICK` of them (a viewer stays responsive
at any speed); seeking forward pushes the skipped ones at once; seeking backward starts every
source over (a State has no undo) and pushes everything up to the new position; Play at the end
plays again from the start, as a player does.

A recording holds the events of one or more processes. Each process's events keep their
recorded order, and the processes play side by side, merged by time (recordings concatenated
into one file, ``cat a.jsonl b.jsonl``, play as they happened, not one after the other). The
events a process emits before it knows its identity (no instance) belong to it. The sink sees
one source per process (the dashboard: each replica a source of its own, as live), or, when the
player is given a ``name``, one source of that name (the TUI).

:class:`ReplaySource` is the player as a :class:`~pycm.trace.sources.Source` with the
:class:`Playback` capability: it reads the file in a thread, then plays it, and reports its
position as its status.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pycm.trace.events import Event
from pycm.trace.recorder import read_events
from pycm.trace.sources import ReplaySink
from pycm.trace.stream import SourceState, SourceStatus

__all__ = [
    "MAX_SPEED",
    "SPEEDS",
    "Playback",
    "PlaybackPosition",
    "ReplayPlayer",
    "ReplaySink",
    "ReplaySource",
    "load_recording",
]

TICK_S = 0.05
BATCH = 2048  # events handed to the sink in one push (a push has a per-call cost)
MAX_PER_TICK = 8 * BATCH  # events pushed in one tick at the most, whatever the speed
MAX_SPEED = 1e6  # "as fast as possible": any faster speed is this one (shown as "max")
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, MAX_SPEED)  # the TUI's +/- steps


def _well_formed(event: Event) -> bool:
    """Whether the envelope has the types the player and the viewers order and compare by: the
    codec keeps what a line says, so a damaged line can decode with ``"seq": "x"`` or
    ``"ts": null`` (which stopped a replay dead, or failed its start with a traceback)."""
    return all(
        type(getattr(event, name)) is int for name in ("seq", "ts", "dur_ns")
    ) and isinstance(event.instance, str)


def load_recording(path: str) -> tuple[list[Event], int]:
    """The events of a recording and how many lines were not events — those that do not decode
    or whose envelope is malformed (blocking; OSError if it cannot be read)."""
    bad = 0

    def count(_: object) -> None:
        nonlocal bad
        bad += 1

    events = []
    for event in read_events(path, on_bad_line=count):
        if _well_formed(event):
            events.append(event)
        else:
            bad += 1
    return events, bad


def _processes_of(events: Sequence[Event]) -> list[str]:
    """Each event's process: its instance. A process emits its first events (flags, start-up)
    before it knows its identity, with an empty instance; they belong to the process that names
    itself next in the recording, as they do live (one stream per process) — not to a process
    of their own, which a viewer would show as one more replica."""
    names: list[str] = []
    following = "recording"  # no named event after this one
    for event in reversed(events):
        following = event.instance or following
        names.append(following)
    names.reverse()
    return names


def _interleaved(events: Sequence[Event], processes: list[str]) -> tuple[list[Event], list[str]]:
    """``events`` merged by time across processes, each process's kept in its recorded order
    (its seqs must not go back)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for i, (event, name) in enumerate(zip(events, processes, strict=True)):
        runs.setdefault(name, []).append((event.ts, i))
    if len(runs) < 2:
        return list(events), processes

    # Each run's ts made non-decreasing, so the merge takes every run in its own order.
    def rising(run: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        high = 0
        for ts, i in run:
            high = max(high, ts)
            yield high, i

    order = [i for _, i in heapq.merge(*(rising(run) for run in runs.values()))]
    return [events[i] for i in order], [processes[i] for i in order]


def _speed(speed: float) -> float:
    if not speed > 0:  # NaN too
        raise ValueError("the replay speed must be > 0")
    return min(speed, MAX_SPEED)


@dataclass(frozen=True, slots=True)
class PlaybackPosition:
    """Where a replay is: event times (Unix ns) of the start, the position and the end."""

    playing: bool
    ended: bool
    speed: float
    start_ts: int
    position_ts: int
    end_ts: int
    index: int  # events pushed
    total: int

    @property
    def text(self) -> str:
        """``playing 2x 1.5/30.0s (120/4000)``."""
        if not self.total:
            return "empty recording"
        state = "ended" if self.ended else "playing" if self.playing else "paused"
        speed = "max" if self.speed >= MAX_SPEED else f"{self.speed:g}x"
        at = (self.position_ts - self.start_ts) / 1e9
        length = (self.end_ts - self.start_ts) / 1e9
        return f"{state} {speed} {at:.1f}/{length:.1f}s ({self.index}/{self.total})"


class ReplayPlayer:
    """A recording played into ``sink`` by event time (see the module's docstring).

    Invariants: ``events[:index]`` have been pushed to the sink, in order; ``_ts`` is the events'
    ts made non-decreasing (for bisecting by time); ``_sources[i]`` is the sink source of
    ``events[i]``. ``speed`` is in (0, :data:`MAX_SPEED`].
    """

    def __init__(
        self,
        sink: ReplaySink,
        events: Sequence[Event],
        *,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        name: str | None = None,
    ) -> None:
        self.sink = sink
        self.speed = _speed(speed)
        self.playing = True
        self.index = 0
        self._clock = clock
        self._anchor: tuple[float, int] | None = None  # (clock time, event ts) playing from
        self.events, processes = _interleaved(events, _processes_of(events))
        self._sources = processes if name is None else [name] * len(self.events)
        high = 0
        self._ts: list[int] = []
        for event in self.events:
            high = max(high, event.ts)
            self._ts.append(high)
        # Every source is there (and connected) before its first event is due.
        for source in dict.fromkeys(self._sources if name is None else [name]):
            sink.set_status(source, SourceStatus(SourceState.CONNECTED))

    # -- where it is -----------------------------------------------------------------------

    @property
    def position_ts(self) -> int:
        """The event time of the last event pushed (of the first, before any)."""
        if not self._ts:
            return 0
        return self._ts[max(0, self.index - 1)]

    @property
    def ended(self) -> bool:
        return bool(self.events) and self.index >= len(self.events)

    def playback(self) -> PlaybackPosition:
        ts = self._ts
        return PlaybackPosition(
            playing=self.playing,
            ended=self.ended,
            speed=self.speed,
            start_ts=ts[0] if ts else 0,
            position_ts=self.position_ts,
            end_ts=ts[-1] if ts else 0,
            index=self.index,
            total=len(self.events),
        )

    def info(self) -> dict[str, Any]:
        """The dashboard's ``replay`` object: ``{"playing", "speed", "position_ts",
        "start_ts", "end_ts", "events"}`` (not playing once at the end)."""
        pos = self.playback()
        return {
            "playing": pos.playing and not pos.ended,
            "speed": pos.speed,
            "position_ts": pos.position_ts,
            "start_ts": pos.start_ts,
            "end_ts": pos.end_ts,
            "events": pos.total,
        }

    # -- controls --------------------------------------------------------------------------

    def play(self) -> None:
        """Play on; at the end, from the start again (as a player does)."""
        if self.ended:
            self._start_over()
        self.playing = True
        self._anchor = None

    def pause(self) -> None:
        self.playing = False
        self._anchor = None

    def toggle_play(self) -> None:
        if self.playing and not self.ended:
            self.pause()
        else:
            self.play()

    def set_speed(self, speed: float) -> None:
        """``speed`` > 0 (ValueError otherwise); past :data:`MAX_SPEED` it is that."""
        self.speed = _speed(speed)
        self._anchor = None

    def change_speed(self, factor: float) -> None:
        """Step through :data:`SPEEDS` from the nearest: ``factor`` > 1 faster, < 1 slower."""
        i = min(range(len(SPEEDS)), key=lambda j: abs(math.log(SPEEDS[j] / self.speed)))
        i = min(len(SPEEDS) - 1, i + 1) if factor > 1 else max(0, i - 1)
        self.set_speed(SPEEDS[i])

    def seek(self, seconds: float) -> None:
        """Move the position by ``seconds`` of event time (negative: back)."""
        if not self.events:
            return
        # Past either end is the end: a step beyond the recording's span changes nothing more
        # (and 1e300 s would not fit an int of ns).
        span_s = (self._ts[-1] - self._ts[0]) / 1e9 + 1.0
        seconds = max(-span_s, min(span_s, seconds))
        target_ts = self.position_ts + int(seconds * 1e9)
        target = max(1, min(len(self.events), bisect.bisect_right(self._ts, target_ts)))
        if target < self.index:
            self._start_over()
        self._push_to(target)
        self._anchor = None

    # -- playing ---------------------------------------------------------------------------

    def tick(self) -> None:
        """Push the events whose time has come (at most :data:`MAX_PER_TICK`)."""
        if not self.playing or self.index >= len(self.events):
            return
        now = self._clock()
        if self._anchor is None:
            # From the position: a paused or seeking replay resumes with the recorded gap to
            # the next event, not with that event at once.
            self._anchor = (now, self._ts[0] if self.index == 0 else self.position_ts)
        t0, ts0 = self._anchor
        due_ts = ts0 + int((now - t0) * self.speed * 1e9)
        target = bisect.bisect_right(self._ts, due_ts, lo=self.index)
        if target > self.index:
            self._push_to(min(target, self.index + MAX_PER_TICK))

    async def run(self, after_tick: Callable[[], None] | None = None) -> None:
        """Play until cancelled (at the end it waits: the viewer may seek back or play again);
        ``after_tick`` runs after every tick."""
        while True:
            self.tick()
            if after_tick is not None:
                after_tick()
            await asyncio.sleep(TICK_S)

    def _start_over(self) -> None:
        for source in dict.fromkeys(self._sources):
            self.sink.reset(source)
        self.index = 0

    def _push_to(self, target: int) -> None:
        events, push, sources = self.events, self.sink.push, self._sources
        i = self.index
        while i < target:
            # One push per run of events of the same source, at most BATCH long.
            name = sources[i]
            j = i + 1
            while j < target and j - i < BATCH and sources[j] == name:
                j += 1
            push(name, events[i:j])
            i = j
        self.index = target


@runtime_checkable
class Playback(Protocol):
    """The optional capability of a source that plays a recording (the TUI's keys)."""

    @property
    def position(self) -> str: ...

    def toggle_play(self) -> None: ...

    def change_speed(self, factor: float) -> None: ...

    def seek(self, seconds: float) -> None: ...


class ReplaySource:
    """A ``--trace-file`` recording as a source, with :class:`Playback`: all of it one source
    named ``name``. Status: ``connecting`` ("loading") while it reads, then ``connected`` with
    the position as reason, ``ended`` at the end, ``failed`` when the file cannot be read.
    Before the file is read the controls do nothing (the speed is kept)."""

    def __init__(
        self,
        path: str,
        *,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        name: str | None = None,
    ) -> None:
        self.path = path
        self.name = name or f"replay {path}"
        self._speed = _speed(speed)
        self._clock = clock
        self.player: ReplayPlayer | None = None
        self.bad_lines = 0

    async def run(self, sink: ReplaySink) -> None:
        sink.set_status(self.name, SourceStatus(SourceState.CONNECTING, "loading"))
        try:
            events, self.bad_lines = await asyncio.to_thread(load_recording, self.path)
        except OSError as exc:
            sink.set_status(
                self.name, SourceStatus(SourceState.FAILED, f"cannot read: {exc.strerror or exc}")
            )
            return
        player = ReplayPlayer(sink, events, speed=self._speed, clock=self._clock, name=self.name)
        self.player = player
        await player.run(after_tick=self._report)

    def _report(self) -> None:
        if self.player is not None:
            self.player.sink.set_status(self.name, self.status)

    # -- what the TUI reads ----------------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        return self.player.events if self.player is not None else []

    @property
    def index(self) -> int:
        return self.player.index if self.player is not None else 0

    @property
    def playing(self) -> bool:
        return self.player.playing if self.player is not None else True

    @property
    def speed(self) -> float:
        return self.player.speed if self.player is not None else self._speed

    @property
    def current_ts(self) -> int:
        return self.player.position_ts if self.player is not None else 0

    @property
    def position(self) -> str:
        return self.player.playback().text if self.player is not None else "loading"

    @property
    def status(self) -> SourceStatus:
        if self.player is None:
            return SourceStatus(SourceState.CONNECTING, "loading")
        pos = self.player.playback()
        return SourceStatus(SourceState.ENDED if pos.ended else SourceState.CONNECTED, pos.text)

    # -- Playback --------------------------------------------------------------------------

    def toggle_play(self) -> None:
        if self.player is not None:
            self.player.toggle_play()

    def change_speed(self, factor: float) -> None:
        if self.player is not None:
            self.player.change_speed(factor)

    def seek(self, seconds: float) -> None:
        if self.player is not None:
            self.player.seek(seconds)
            self._report()
