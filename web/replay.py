"""``pycm dashboard --replay FILE``: a recording played into the hub by event time.

The recording is read once (in a thread) and split by instance: each instance is a source of
its own, as it would be live (each replica's seqs are its own, and the page keeps the last seq
per source); the events a process emits before it knows its identity (no instance) go with it,
and recordings concatenated into one file play side by side, merged by time.
Playing pushes, every :data:`TICK_S`, the events whose time has come at the current speed;
seeking forward pushes the skipped ones at once; seeking backward starts every source over (the
reducer has no undo) and pushes everything up to the new position — the hub then sends every
viewer a fresh ``hello``. The player is the hub's :class:`ReplayControl`.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from pycm.trace.events import Event
from pycm.trace.kinds import FlagsParsed
from pycm.trace.recorder import read_events
from pycm.util.durations import parse_duration
from web.hub import Hub

__all__ = ["BATCH", "ReplayPlayer", "load_recording", "recorded_lease_timings"]

TICK_S = 0.05
BATCH = 2048  # events pushed to the hub at once
MAX_SPEED = 1e6  # "as fast as possible"


def _well_formed(event: Event) -> bool:
    """Whether the envelope has the types the player and the hub order and compare by: the
    codec keeps what a line says, so a damaged line can decode with ``"seq": "x"`` or
    ``"ts": null`` (which stopped the replay dead, or failed its start with a traceback)."""
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


def recorded_lease_timings(
    events: list[Event], default_renew_deadline_s: float, default_lease_duration_s: float
) -> tuple[float, float]:
    """(renew deadline, lease duration) in seconds the recorded manager ran with: from its
    first ``flags.parsed`` (which lists only the values that differ from the defaults, KCM's:
    the ones given here), else the defaults."""
    renew, lease = default_renew_deadline_s, default_lease_duration_s
    for event in events:
        if not isinstance(event, FlagsParsed):
            continue
        for pair in str(event.changed).split(","):
            name, _, value = pair.partition("=")
            try:
                if name == "leader-elect-renew-deadline":
                    renew = parse_duration(value)
                elif name == "leader-elect-lease-duration":
                    lease = parse_duration(value)
            except ValueError:
                continue
        break
    return renew, lease


def _sources_of(events: list[Event]) -> list[str]:
    """Each event's source: its instance. A process emits its first events (flags, start-up)
    before it knows its identity, with an empty instance; they belong to the process that names
    itself next in the recording, as they do live (one stream per process) — not to a source of
    their own, which the page would show as one more replica."""
    names: list[str] = []
    following = "recording"  # no named event after this one
    for event in reversed(events):
        following = event.instance or following
        names.append(following)
    names.reverse()
    return names


def _interleaved(events: list[Event], sources: list[str]) -> tuple[list[Event], list[str]]:
    """``events`` merged by time across sources, each source's kept in its recorded order (its
    seqs must not go back). Recordings concatenated one after another (``cat a.jsonl b.jsonl``)
    play side by side, as they happened — not one replica after the other."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for i, (event, name) in enumerate(zip(events, sources, strict=True)):
        runs.setdefault(name, []).append((event.ts, i))
    if len(runs) < 2:
        return events, sources

    # Each run's ts made non-decreasing, so the merge takes every run in its own order.
    def rising(run: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
        high = 0
        for ts, i in run:
            high = max(high, ts)
            yield high, i

    order = [i for _, i in heapq.merge(*(rising(run) for run in runs.values()))]
    return [events[i] for i in order], [sources[i] for i in order]


class ReplayPlayer:
    """Invariants: ``events[:index]`` have been pushed to the hub, in order; ``_ts`` is the
    events' ts made non-decreasing (for bisecting by time)."""

    def __init__(
        self,
        hub: Hub,
        events: list[Event],
        *,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        source_of: Callable[[Event], str] | None = None,
    ) -> None:
        if not speed > 0:
            raise ValueError("the replay speed must be > 0")
        self.hub = hub
        self.speed = min(speed, MAX_SPEED)
        self.playing = True
        self.index = 0
        self._clock = clock
        self._anchor: tuple[float, int] | None = None  # (clock time, event ts) playing from
        sources = [source_of(e) for e in events] if source_of is not None else _sources_of(events)
        # The events in time order across sources, each source's in its own order; and the
        # source of each, by index.
        self.events, self._sources = _interleaved(events, sources)
        high = 0
        self._ts: list[int] = []
        for event in self.events:
            high = max(high, event.ts)
            self._ts.append(high)
        for name in self._sources:
            if name not in hub.sources:
                hub.add_source(name)
        for name in hub.sources:
            hub.set_status(name, "connected")
        hub.replay = self

    # -- ReplayControl ---------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        start = self._ts[0] if self._ts else 0
        end = self._ts[-1] if self._ts else 0
        return {
            "playing": self.playing and self.index < len(self.events),
            "speed": self.speed,
            "position_ts": self.position_ts,
            "start_ts": start,
            "end_ts": end,
            "events": len(self.events),
        }

    def play(self) -> None:
        """Play on; at the end, from the start again (as a player does), else Play did nothing."""
        if self.events and self.index >= len(self.events):
            for name in self.hub.sources:
                self.hub.reset(name)
            self.index = 0
        self.playing = True
        self._anchor = None

    def pause(self) -> None:
        self.playing = False
        self._anchor = None

    def set_speed(self, speed: float) -> None:
        if not speed > 0 or math.isnan(speed):
            raise ValueError("the replay speed must be > 0")
        self.speed = min(speed, MAX_SPEED)
        self._anchor = None

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
            for name in self.hub.sources:
                self.hub.reset(name)
            self.index = 0
        self._push_to(target)
        self._anchor = None

    # -- playing ---------------------------------------------------------------------------

    @property
    def position_ts(self) -> int:
        if not self._ts:
            return 0
        return self._ts[max(0, self.index - 1)]

    def tick(self) -> None:
        """Push the events whose time has come."""
        if not self.playing or self.index >= len(self.events):
            return
        now = self._clock()
        if self._anchor is None:
            self._anchor = (now, self._ts[self.index] if self.index == 0 else self.position_ts)
        t0, ts0 = self._anchor
        due_ts = ts0 + int((now - t0) * self.speed * 1e9)
        target = bisect.bisect_right(self._ts, due_ts, lo=self.index)
        if target > self.index:
            self._push_to(target)

    def _push_to(self, target: int) -> None:
        events, push, sources = self.events, self.hub.push, self._sources
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

    async def run(self) -> None:
        """Play until cancelled (at the end it waits: the viewer may seek back)."""
        while True:
            self.tick()
            await asyncio.sleep(TICK_S)
