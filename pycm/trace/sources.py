"""Sources of events for viewers, behind one small protocol (`pycm top`, the web dashboard).

A :class:`Source` has a ``name`` and runs until cancelled (or, for a finite one, until done),
pushing into a :class:`~pycm.trace.stream.StreamSink` under its name: decoded events in
batches, snapshots, and a typed :class:`~pycm.trace.stream.SourceStatus`. Sources never raise
for bad input: a malformed line is counted, an unknown kind arrives as
:class:`~pycm.trace.codec.UnknownEvent`, a dropped stream reconnects.

- :class:`~pycm.trace.stream.StreamClient` — one manager's ``/debug/pycm/events`` over HTTPS;
- :class:`~pycm.trace.replay.ReplaySource` — a ``--trace-file`` recording, with the
  :class:`~pycm.trace.replay.Playback` capability (play/pause, speed, seek);
- :class:`BusSource` — a :class:`~pycm.trace.Bus` subscription in this process;
- :class:`ListSource` — a fixed list of events (tests, benchmarks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from pycm.trace.bus import Bus
from pycm.trace.events import Event
from pycm.trace.stream import SourceState, SourceStatus, StreamSink

__all__ = ["BATCH", "BusSource", "ListSource", "ReplaySink", "Source"]

BATCH = 512  # events pushed to the sink at once


class ReplaySink(StreamSink, Protocol):
    """A sink that can also forget what it was given (a replay seeking backwards)."""

    def reset(self, source: str) -> None: ...


class Source(Protocol):
    name: str

    async def run(self, sink: ReplaySink) -> None:
        """Push into ``sink`` until cancelled (or, for finite sources, until done)."""
        ...


class ListSource:
    """A fixed list of events, pushed at once; then it reports ``ended`` and returns."""

    def __init__(self, events: Sequence[Event], *, name: str = "script") -> None:
        self.name = name
        self.events = list(events)

    async def run(self, sink: StreamSink) -> None:
        for i in range(0, len(self.events), BATCH):
            sink.push(self.name, self.events[i : i + BATCH])
        sink.set_status(
            self.name, SourceStatus(SourceState.ENDED, f"done ({len(self.events)} events)")
        )


class BusSource:
    """Events of a :class:`Bus` in this process, through an ordinary bounded subscription (a
    slow viewer lags and is told, as any subscriber; it never slows the emitters)."""

    def __init__(self, bus: Bus, *, name: str = "in-process", since: int | None = 0) -> None:
        self.name = name
        self.bus = bus
        self.since = since  # 0 = backfill what the ring holds

    async def run(self, sink: StreamSink) -> None:
        subscription = self.bus.subscribe(name=f"viewer {self.name}", since=self.since)
        sink.set_status(self.name, SourceStatus(SourceState.CONNECTED))
        try:
            while not subscription.closed:
                batch = subscription.drain(BATCH * 8)
                if batch:
                    sink.push(self.name, batch)
                    await asyncio.sleep(0)  # let the viewer run between big backlogs
                else:
                    await subscription.wait()
        finally:
            subscription.close()
        sink.set_status(self.name, SourceStatus(SourceState.ENDED, "the bus closed"))
