"""Where `pycm top` gets its events: one class per kind of source behind one small protocol.

A :class:`Source` runs until cancelled and pushes into a :class:`Sink` (the app's
:class:`~tui.feed.Feed`): decoded events in batches, reducer snapshots, and a one-line
connection status. Sources never raise for bad input: a malformed line is counted, an
unknown kind arrives as :class:`~pycm.trace.codec.UnknownEvent`, a dropped stream reconnects.

- :class:`SseSource` — ``GET /debug/pycm/events`` of one manager over HTTPS, resuming with
  ``since=<last seq>`` after jittered exponential backoff;
- :class:`ReplaySource` — a ``--trace-file`` recording, paced by event time, with the
  :class:`Playback` capability (play/pause, speed, seek);
- :class:`BusSource` — a :class:`~pycm.trace.Bus` subscription in this process (`pycm demo`);
- :class:`ListSource` — a fixed list of events (tests, the benchmark).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx
import orjson

from pycm.trace import Bus, CodecError, Event, decode
from pycm.trace.recorder import read_events
from pycm.util.backoff import Backoff
from tui.sse import SseParser

__all__ = [
    "EVENTS_PATH",
    "RECONNECT_BACKOFF",
    "BusSource",
    "ListSource",
    "Playback",
    "ReplaySource",
    "Sink",
    "Source",
    "SseSource",
]

EVENTS_PATH = "/debug/pycm/events"
# Reconnect: 0.5 s doubling to 30 s with full jitter, so three viewers of a restarted replica
# do not reconnect in step; reset once a connection delivers.
RECONNECT_BACKOFF = Backoff(0.5, factor=2.0, jitter=1.0, cap=30.0)
# The server pings an idle stream every 15 s; two missed pings mean the stream is dead.
READ_TIMEOUT_S = 35.0
BATCH = 512  # events pushed to the sink at once


class Sink(Protocol):
    """What a source pushes into (the subset of :class:`tui.feed.Feed` sources use)."""

    def push(self, source: Source, events: Sequence[Event]) -> None: ...

    def push_snapshot(self, source: Source, snapshot: dict[str, Any]) -> None: ...

    def set_status(self, source: Source, status: str) -> None: ...

    def reset(self, source: Source) -> None:
        """Forget everything pushed so far (a replay seeking backwards)."""
        ...


class Source(Protocol):
    name: str

    async def run(self, sink: Sink) -> None:
        """Push into ``sink`` until cancelled (or, for finite sources, until done)."""
        ...


@runtime_checkable
class Playback(Protocol):
    """The optional capability of a source that plays a recording."""

    @property
    def position(self) -> str: ...

    def toggle_play(self) -> None: ...

    def change_speed(self, factor: float) -> None: ...

    def seek(self, seconds: float) -> None: ...


class ListSource:
    """A fixed list of events, pushed at once; then it reports ``done`` and returns."""

    def __init__(self, events: Sequence[Event], *, name: str = "script") -> None:
        self.name = name
        self.events = list(events)

    async def run(self, sink: Sink) -> None:
        for i in range(0, len(self.events), BATCH):
            sink.push(self, self.events[i : i + BATCH])
        sink.set_status(self, f"done ({len(self.events)} events)")


class BusSource:
    """Events of a :class:`Bus` in this process, through an ordinary bounded subscription (a
    slow UI lags and is told, as any subscriber; it never slows the emitters)."""

    def __init__(self, bus: Bus, *, name: str = "in-process", since: int | None = 0) -> None:
        self.name = name
        self.bus = bus
        self.since = since  # 0 = backfill what the ring holds

    async def run(self, sink: Sink) -> None:
        subscription = self.bus.subscribe(name=f"pycm top {self.name}", since=self.since)
        sink.set_status(self, "live")
        try:
            while not subscription.closed:
                batch = subscription.drain(BATCH * 8)
                if batch:
                    sink.push(self, batch)
                    await asyncio.sleep(0)  # let the UI run between big backlogs
                else:
                    await subscription.wait()
        finally:
            subscription.close()


Sleep = Callable[[float], Awaitable[None]]


class SseSource:
    """One manager's ``/debug/pycm/events`` stream.

    States shown: ``connecting``, ``live``, ``reconnecting in Ns (why)``. ``last_seq`` is the seq
    of the newest trace event received; a reconnect asks for ``since=last_seq`` so the server's
    ring backfills the gap (what it no longer holds arrives as a ``bus.lagged`` count).
    """

    def __init__(
        self,
        server: str,
        *,
        token: str = "",
        verify: ssl.SSLContext | bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: Backoff = RECONNECT_BACKOFF,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        name: str | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.name = name or self.server.split("://", 1)[-1]
        self._token = token
        self._verify = verify
        self._transport = transport
        self._timer = backoff.timer(rng)
        self._sleep = sleep
        self.last_seq: int | None = None
        self.connects = 0
        self.malformed = 0

    async def run(self, sink: Sink) -> None:
        headers = {"Accept": "text/event-stream"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT_S)
        async with httpx.AsyncClient(
            verify=self._verify, transport=self._transport, headers=headers, timeout=timeout
        ) as client:
            while True:
                sink.set_status(self, "connecting")
                why = await self._stream_once(client, sink)
                delay = self._timer.next_delay() or RECONNECT_BACKOFF.initial
                sink.set_status(self, f"reconnecting in {delay:.1f}s ({why})")
                await self._sleep(delay)

    async def _stream_once(self, client: httpx.AsyncClient, sink: Sink) -> str:
        """One connection; returns why it ended. Never raises but for cancellation."""
        params = {} if self.last_seq is None else {"since": str(self.last_seq)}
        try:
            async with client.stream("GET", self.server + EVENTS_PATH, params=params) as response:
                if response.status_code != 200:
                    return f"HTTP {response.status_code}"
                self.connects += 1
                sink.set_status(self, "live")
                delivered = False
                parser = SseParser()
                push = sink.push
                async for line in response.aiter_lines():
                    message = parser.feed(line)
                    if message is None:
                        continue
                    if not delivered:
                        delivered = True
                        self._timer.reset()
                    if message.event == "trace":
                        event = self._decode(message.data)
                        if event is not None:
                            push(self, (event,))  # the feed buffers; the app drains per tick
                            if message.id.isdigit():
                                self.last_seq = int(message.id)
                    elif message.event == "snapshot":
                        self._snapshot(message.data, sink)
                return "stream ended"
        except httpx.HTTPError as exc:
            return type(exc).__name__ + (f": {exc}" if str(exc) else "")
        except (ssl.SSLError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"

    def _decode(self, data: str) -> Event | None:
        try:
            return decode(data)
        except (CodecError, TypeError, ValueError):
            self.malformed += 1
            return None

    def _snapshot(self, data: str, sink: Sink) -> None:
        try:
            snapshot = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.malformed += 1
            return
        if isinstance(snapshot, dict):
            sink.push_snapshot(self, snapshot)
        else:
            self.malformed += 1


SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, math.inf)


class ReplaySource:
    """A ``--trace-file`` recording played back by event time, with :class:`Playback`.

    The file is read once (in a thread); the position is an index into it. Seeking forward
    pushes the skipped events at once; seeking backward resets the sink and pushes everything up
    to the new position (the reducer has no undo). ``speed`` inf plays as fast as possible.
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
        self.index = 0  # events[:index] have been pushed
        self._clock = clock or time.monotonic
        self._anchor: tuple[float, int] | None = None  # (clock time, event ts) playing from
        self._sink: Sink | None = None
        self.bad_lines = 0

    async def run(self, sink: Sink) -> None:
        self._sink = sink
        sink.set_status(self, "loading")
        try:
            self.events = await asyncio.to_thread(self._load)
        except OSError as exc:
            sink.set_status(self, f"cannot read: {exc.strerror or exc}")
            return
        high = 0
        for event in self.events:
            high = max(high, event.ts if isinstance(event.ts, int) else 0)
            self._ts.append(high)
        while True:
            self._advance(sink)
            sink.set_status(self, self.position)
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

    @property
    def position(self) -> str:
        if not self.events:
            return "empty recording"
        start = self._ts[0]
        at = (self.current_ts - start) / 1e9
        total = (self._ts[-1] - start) / 1e9
        state = "playing" if self.playing else "paused"
        if self.index >= len(self.events):
            state = "ended"
        speed = "max" if math.isinf(self.speed) else f"{self.speed:g}x"
        return f"{state} {speed} {at:.1f}/{total:.1f}s ({self.index}/{len(self.events)})"

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

    def _advance(self, sink: Sink) -> None:
        target = self._target_index()
        if target > self.index:
            self._push_to(sink, target)

    def _push_to(self, sink: Sink, target: int) -> None:
        for i in range(self.index, target, BATCH):
            sink.push(self, self.events[i : min(target, i + BATCH)])
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
            sink.reset(self)
            self.index = 0
        self._push_to(sink, target)
        self._anchor = None
        sink.set_status(self, self.position)
