"""Playing a ``--trace-file`` recording as a source of events (`pycm top --replay`, the web
dashboard's replay mode).

:class:`ReplaySource` reads the recording once (in a thread) and pushes its events paced by
event time, with the :class:`Playback` capability: play/pause, speed, seek. Seeking backwards
asks the sink to :meth:`~ReplaySink.reset` and pushes everything up to the new position again
(a State has no undo).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pycm.trace.events import Event
from pycm.trace.recorder import read_events
from pycm.trace.sources import BATCH, ReplaySink
from pycm.trace.stream import SourceState, SourceStatus

__all__ = ["SPEEDS", "Playback", "PlaybackPosition", "ReplaySink", "ReplaySource"]

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, math.inf)


@dataclass(frozen=True, slots=True)
class PlaybackPosition:
    """Where a replay is: event times (Unix ns) of the start, the position and the end."""

    playing: bool
    ended: bool
    speed: float  # inf: as fast as possible
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
        speed = "max" if math.isinf(self.speed) else f"{self.speed:g}x"
        at = (self.position_ts - self.start_ts) / 1e9
        length = (self.end_ts - self.start_ts) / 1e9
        return f"{state} {speed} {at:.1f}/{length:.1f}s ({self.index}/{self.total})"


@runtime_checkable
class Playback(Protocol):
    """The optional capability of a source that plays a recording."""

    @property
    def position(self) -> str: ...

    def toggle_play(self) -> None: ...

    def change_speed(self, factor: float) -> None: ...

    def seek(self, seconds: float) -> None: ...


class ReplaySource:
    """A ``--trace-file`` recording played back by event time, with :class:`Playback`.

    The position is an index into the recording (``events[:index]`` were pushed). ``speed``
    inf plays as fast as possible. Status: ``connecting`` ("loading") while it reads, then
    ``connected`` with the position as reason, ``ended`` at the end, ``failed`` when the file
    cannot be read.
    """

    TICK_S = 0.05

    def __init__(
        self,
        path: str,
        *,
        speed: float = 1.0,
        clock: Callable[[], float] | None = None,
        name: str | None = None,
    ) -> None:
        self.path = path
        self.name = name or f"replay {path}"
        self.speed = speed
        self.playing = True
        self.events: list[Event] = []
        self._ts: list[int] = []  # event ts, made non-decreasing, for bisecting
        self.index = 0
        self._clock = clock or time.monotonic
        self._anchor: tuple[float, int] | None = None  # (clock time, event ts) playing from
        self._sink: ReplaySink | None = None
        self.bad_lines = 0

    async def run(self, sink: ReplaySink) -> None:
        self._sink = sink
        sink.set_status(self.name, SourceStatus(SourceState.CONNECTING, "loading"))
        try:
            self.events = await asyncio.to_thread(self._load)
        except OSError as exc:
            sink.set_status(
                self.name, SourceStatus(SourceState.FAILED, f"cannot read: {exc.strerror or exc}")
            )
            return
        high = 0
        for event in self.events:
            high = max(high, event.ts if isinstance(event.ts, int) else 0)
            self._ts.append(high)
        while True:
            self._advance(sink)
            sink.set_status(self.name, self.status)
            await asyncio.sleep(self.TICK_S)

    def _load(self) -> list[Event]:
        def bad(_: object) -> None:
            self.bad_lines += 1

        return list(read_events(self.path, on_bad_line=bad))

    @property
    def current_ts(self) -> int:
        if not self._ts:
            return 0
        return self._ts[max(0, self.index - 1)]

    def playback(self) -> PlaybackPosition:
        ts = self._ts
        return PlaybackPosition(
            playing=self.playing,
            ended=bool(self.events) and self.index >= len(self.events),
            speed=self.speed,
            start_ts=ts[0] if ts else 0,
            position_ts=self.current_ts,
            end_ts=ts[-1] if ts else 0,
            index=self.index,
            total=len(self.events),
        )

    @property
    def position(self) -> str:
        return self.playback().text

    @property
    def status(self) -> SourceStatus:
        pos = self.playback()
        state = SourceState.ENDED if pos.ended else SourceState.CONNECTED
        return SourceStatus(state, pos.text)

    def _target_index(self) -> int:
        if not self.playing or self.index >= len(self.events):
            return self.index
        if math.isinf(self.speed):
            return min(len(self.events), self.index + BATCH * 16)
        now = self._clock()
        if self._anchor is None:
            self._anchor = (now, self._ts[self.index])
        t0, ts0 = self._anchor
        due_ts = ts0 + int((now - t0) * self.speed * 1e9)
        return bisect.bisect_right(self._ts, due_ts, lo=self.index)

    def _advance(self, sink: ReplaySink) -> None:
        target = self._target_index()
        if target > self.index:
            self._push_to(sink, target)

    def _push_to(self, sink: ReplaySink, target: int) -> None:
        for i in range(self.index, target, BATCH):
            sink.push(self.name, self.events[i : min(target, i + BATCH)])
        self.index = target

    def toggle_play(self) -> None:
        self.playing = not self.playing
        self._anchor = None

    def change_speed(self, factor: float) -> None:
        """Step through :data:`SPEEDS`: ``factor`` > 1 faster, < 1 slower."""
        if math.isinf(self.speed):
            i = len(SPEEDS) - 1
        else:
            finite = range(len(SPEEDS) - 1)
            i = min(finite, key=lambda j: abs(math.log(SPEEDS[j] / self.speed)))
        i = min(len(SPEEDS) - 1, i + 1) if factor > 1 else max(0, i - 1)
        self.speed = SPEEDS[i]
        self._anchor = None

    def seek(self, seconds: float) -> None:
        """Move the position by ``seconds`` of event time (negative: back)."""
        if not self.events or self._sink is None:
            return
        target_ts = self.current_ts + int(seconds * 1e9)
        target = bisect.bisect_right(self._ts, target_ts)
        target = max(1, min(len(self.events), target))
        sink = self._sink
        if target < self.index:
            sink.reset(self.name)
            self.index = 0
        self._push_to(sink, target)
        self._anchor = None
        sink.set_status(self.name, self.status)
