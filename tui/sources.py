"""Where `pycm top` gets its events: the viewers' sources of :mod:`pycm.trace` (one stream client,
one replay, shared with the web dashboard), under the names the TUI has always used.

- :class:`SseSource` — :class:`pycm.trace.stream.StreamClient`, one manager's
  ``GET /debug/pycm/events``;
- :class:`ReplaySource` — a ``--trace-file`` recording with :class:`Playback`;
- :class:`BusSource` — a Bus in this process (`pycm demo`);
- :class:`ListSource` — a fixed list of events (tests, the benchmark).

Every source pushes into the app's :class:`~tui.feed.Feed` (a
:class:`~pycm.trace.replay.ReplaySink`).
"""

from __future__ import annotations

from pycm.trace.replay import Playback, ReplaySource
from pycm.trace.sources import BusSource, ListSource, ReplaySink, Source
from pycm.trace.stream import StreamClient

__all__ = [
    "BusSource",
    "ListSource",
    "Playback",
    "ReplaySink",
    "ReplaySource",
    "Source",
    "SseSource",
]

SseSource = StreamClient
