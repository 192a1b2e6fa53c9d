"""The web dashboard's fan-out, and what its viewers cost the manager.

Viewers are real: raw HTTP/1.1 connections on 127.0.0.1, all in one separate process
(:mod:`bench._sse_readers`), each counting the events it receives.

- ``web.fanout``: ``E`` events pushed into a fan-in hub (as fast as the loop takes them, in
  batches) with 100 viewers on ``/api/stream``: events/s delivered to each viewer — ``E`` over
  the time until every viewer has counted all ``E``. Peer ``debug_stream``: the same events
  emitted on a bus with 100 viewers of the manager's ``/debug/pycm/events`` (one bus
  subscription and one encoding per viewer per event; its lag bound lifted so that it, too,
  delivers everything); ratio ours / peer (throughput: higher is better).
- ``web.manager_cost``: the Deployment controller's no-op syncs through the traced worker
  step (as ``bench controllers``), in a process that also runs the state reducer and the
  mounted dashboard (its bus feed, hub and routes), with 100 viewers attached: syncs/s.
  Peer: the same with no viewer; ratio with / without, the median of paired passes (aim
  >= 0.90). Each sync yields to the loop once, as a worker does at its queue, so the
  dashboard's tasks and the viewers' writes run between syncs.

What a watched dashboard costs is mostly bytes: every event (its codec JSON and its line,
~500 bytes) goes to every viewer, so at the no-op syncs' ~10k events/s 100 viewers are ~0.5 GB/s
of socket writes on loopback, which no per-event saving removes; the work per event (the line,
the encoding) is done once, whatever the number of viewers. Served over plain HTTP here; the
mounted dashboard is behind TLS, which adds an encryption per viewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette

import pycm.server.debug as debug
from bench.controllers import settle, settled_controller
from bench.harness import Figure
from pycm.trace import kinds as k
from pycm.trace.bus import Bus
from pycm.trace.events import Event
from pycm.trace.state import State
from web.busfeed import BusFeed
from web.fanout import Broadcast
from web.hub import Hub
from web.live import live_routes

_SIZES = {
    # size: (events for the fan-out, for its peer (one frame per event per viewer: slow),
    #        settled deployments, paired passes)
    "tiny": (2_000, 200, 60, 1),
    "full": (100_000, 10_000, 2_000, 7),
}
VIEWERS = 100
_BATCH = 1000


@contextlib.asynccontextmanager
async def _serving(app: Any) -> AsyncIterator[int]:
    sock = socket.create_server(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, ws="none")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield port
    finally:
        server.should_exit = True
        server.force_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
        sock.close()


class _Readers:
    """The viewers' process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, port: int, path: str, token: str, target: int | None) -> _Readers:
        argv = [sys.executable, "-m", "bench._sse_readers", str(port), path, str(VIEWERS), token]
        if target is not None:
            argv.append(str(target))
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        readers = cls(proc)
        await readers.expect("ready")
        return readers

    async def expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 300)
        if line.strip() != word.encode():
            raise RuntimeError(f"the viewers' process said {line!r}, expected {word!r}")

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


def _events(n: int) -> list[Event]:
    ts = 1_790_000_000 * 10**9
    return [
        k.ItemAdded(
            queue="deployment", key=f"ns/k{i}", depth=i % 7, seq=i, ts=ts + i, instance="r1"
        )
        for i in range(1, n + 1)
    ]


async def _fanout_ours(n: int) -> float:
    hub = Hub("fanin", broadcast=Broadcast(max_frames=1 << 20, max_bytes=1 << 34))
    events = _events(n)
    async with _serving(Starlette(routes=live_routes(hub))) as port:
        pump = asyncio.create_task(hub.run())
        readers = await _Readers.start(port, "/api/stream", '"line":', n)
        try:
            start = time.perf_counter()
            for i in range(0, n, _BATCH):
                hub.push("r1", events[i : i + _BATCH])
                await asyncio.sleep(0)
            await readers.expect("done")
            elapsed = time.perf_counter() - start
        finally:
            hub.broadcast.close_all()
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            await readers.stop()
    if hub.broadcast.cut_off:
        raise RuntimeError(f"{hub.broadcast.cut_off} viewers were cut off")
    return n / elapsed


async def _fanout_peer(n: int) -> float:
    bus = Bus(instance="r1")
    streams = debug.OpenStreams()
    lifted = debug.SUBSCRIBER_QUEUE
    debug.SUBSCRIBER_QUEUE = n + 1024  # every event delivered, as ours does
    events = _events(n)
    try:
        app = Starlette(routes=debug.debug_routes(bus, None, streams=streams))
        async with _serving(app) as port:
            readers = await _Readers.start(port, debug.EVENTS_PATH, "event: trace", n)
            try:
                start = time.perf_counter()
                for i in range(0, n, _BATCH):
                    for event in events[i : i + _BATCH]:
                        bus.emit(event)
                    await asyncio.sleep(0)
                await readers.expect("done")
                elapsed = time.perf_counter() - start
            finally:
                streams.close_all()
                await readers.stop()
    finally:
        debug.SUBSCRIBER_QUEUE = lifted
    return n / elapsed


async def _manager_cost(n: int, pairs: int) -> tuple[float, float, float]:
    controller, client, keys, bus = settled_controller(n)
    await settle(controller, client, keys)
    state = State()
    reducer_sub = bus.subscribe(name="state", maxsize=65536)

    async def reduce() -> None:
        while True:
            await reducer_sub.wait()
            for event in reducer_sub.drain():
                state.apply(event)

    hub = Hub("live")
    hub.add_source("bench", snapshot=state.snapshot)
    tasks = [
        asyncio.create_task(reduce()),
        asyncio.create_task(BusFeed(bus, hub, "bench").run()),
        asyncio.create_task(hub.run()),
    ]
    process = controller.controller.process

    async def one_pass() -> float:
        start = time.perf_counter()
        for key in keys:
            await process(key)
            await asyncio.sleep(0)
        return len(keys) / (time.perf_counter() - start)

    with_viewers: list[float] = []
    without: list[float] = []
    try:
        async with _serving(Starlette(routes=live_routes(hub))) as port:
            await one_pass()  # warm-up
            for _ in range(pairs):
                without.append(await one_pass())
                readers = await _Readers.start(port, "/api/stream", '"line":', None)
                try:
                    with_viewers.append(await one_pass())
                finally:
                    hub.broadcast.close_all()
                    await readers.stop()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        reducer_sub.close()
    ratio = statistics.median(w / o for w, o in zip(with_viewers, without, strict=True))
    return statistics.median(with_viewers), statistics.median(without), ratio


def run(size: str) -> list[Figure]:
    events, peer_events, settled, pairs = _SIZES[size]
    ours = asyncio.run(_fanout_ours(events))
    peer = asyncio.run(_fanout_peer(peer_events))
    with_viewers, without, ratio = asyncio.run(_manager_cost(settled, pairs))
    return [
        Figure(
            "web.fanout",
            ours,
            "events/s/viewer",
            "debug_stream",
            peer,
            "events/s/viewer",
            ours / peer,
        ),
        Figure(
            "web.manager_cost",
            with_viewers,
            "syncs/s",
            "no_viewers",
            without,
            "syncs/s",
            ratio,
        ),
    ]
