"""The broadcast: bounded viewer queues, the lagged cut-off, and the fan-out over real HTTP."""

from __future__ import annotations

import asyncio
import re
import socket
import time

import pytest
from starlette.applications import Starlette

from tests.web.streams import added, parse_frames, serving
from web.fanout import Broadcast, Viewer, lagged_frame, sse_frame
from web.hub import Hub
from web.live import live_routes


def test_viewer_full_queue_cuts_it_off_and_counts_what_it_lost() -> None:
    broadcast = Broadcast(max_frames=2, max_bytes=1000)
    slow, fast = broadcast.attach("slow"), broadcast.attach("fast")
    for i in range(2):
        broadcast.publish(b"f%d" % i)
        assert fast.take() == b"f%d" % i
    broadcast.publish(b"f2")  # slow holds f0 and f1: f2 does not fit
    assert slow.cut and slow.dropped == 3 and slow.take() is None
    assert (broadcast.viewers, broadcast.cut_off) == (1, 1)
    assert fast.take() == b"f2" and not fast.cut
    broadcast.publish(b"f3")
    assert slow.take() is None and slow.dropped == 3  # no longer fed


def test_viewer_byte_bound_cuts_off_before_the_frame_count() -> None:
    viewer = Viewer("v", max_frames=100, max_bytes=10)
    assert viewer.offer(b"123456")
    assert not viewer.offer(b"123456")
    assert viewer.cut and viewer.queued_bytes == 0


@pytest.mark.asyncio
async def test_viewer_wait_returns_on_a_frame_and_times_out_without_one() -> None:
    broadcast = Broadcast()
    viewer = broadcast.attach()
    assert await viewer.wait(0.01) is False
    waiting = asyncio.create_task(viewer.wait(5))
    await asyncio.sleep(0)
    broadcast.publish(b"x")
    assert await waiting is True and viewer.take() == b"x"


def test_broadcast_close_all_ends_every_viewer() -> None:
    broadcast = Broadcast()
    viewers = [broadcast.attach() for _ in range(3)]
    broadcast.close_all()
    assert broadcast.viewers == 0 and all(v.closed for v in viewers)


def test_sse_frame_and_lagged_frame_shapes() -> None:
    assert (
        sse_frame("events", b'{"a":1}', id="r1:3") == b'event: events\nid: r1:3\ndata: {"a":1}\n\n'
    )
    assert parse_frames(lagged_frame(7)) == [("lagged", "", {"dropped": 7})]


# -- over HTTP --------------------------------------------------------------------------------

VIEWERS = 100
RATE = 5000  # events/s
SECONDS = 2.0
_SEQ = re.compile(rb'"seq":(\d+)')
_LAGGED = re.compile(rb'event: lagged\ndata: \{"dropped":(\d+)\}')


async def _reader(port: int, total: list[int], *, full: bool) -> list[int]:
    """The event seqs this viewer receives in ``events`` frames, until it has seen ``total[0]``
    (set when the emitter stops).

    A raw HTTP/1.1 reader that takes the response one HTTP chunk — one SSE message — at a time
    (an HTTP client library's per-chunk work would make these 99 readers, which share this
    process with the server, the bottleneck). A ``full`` reader lists every seq; the others
    check each frame whole and cheaply — its events are ``first``..``last`` (the frame's id),
    as many as it holds — and list those ranges, so every viewer's order is checked."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        )
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower(), head
        seqs: list[int] = []
        while not seqs or seqs[-1] < total[0]:
            size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
            assert size, "the stream ended early"
            frame = await reader.readexactly(size + 2)
            if frame.startswith(b"event: lagged"):
                raise AssertionError("a reading viewer was cut off")
            if not frame.startswith(b"event: events\n"):
                continue
            if full:
                seqs.extend(int(m) for m in _SEQ.findall(frame))
                continue
            last = int(frame[frame.index(b"id: r1:") + 7 : frame.index(b"\n", 20)])
            first_match = _SEQ.search(frame)
            assert first_match is not None
            first = int(first_match[1])
            assert frame.count(b'"line":') == last - first + 1, (first, last)
            seqs.extend(range(first, last + 1))
        return seqs
    finally:
        writer.close()
        await writer.wait_closed()


def _never_reading_viewer(port: int) -> socket.socket:
    """A raw connection that asks for the stream and then never reads (a tiny receive window,
    so the server's buffers fill quickly)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(
        b"GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    )
    return sock


def _read_to_end(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = sock.recv(1 << 20)
        except TimeoutError:
            break
        if not data:
            break
        chunks.append(data)
        if b"event: lagged" in data[-4096:]:
            break
    return b"".join(chunks)


@pytest.mark.asyncio
async def test_fanout_100_viewers_at_5k_events_per_s_slow_one_cut_others_get_everything() -> None:
    # The viewer that never reads overflows its bound once the stream has outgrown the bound
    # and its socket's buffers (the server's send buffer is fixed small, so that is soon); the
    # emitter runs at 5k events/s for at least SECONDS and until that happened. The readers,
    # in this same process, stay far inside the bound (~1.5 s of this stream).
    broadcast = Broadcast(max_frames=256, max_bytes=5 * 1024 * 1024 // 2)
    hub = Hub("fanin", broadcast=broadcast)
    hub.set_status("r1", "connected")
    total = [1 << 62]
    app = Starlette(routes=live_routes(hub))
    async with serving(app, send_buffer=32 * 1024) as base:
        port = int(base.rsplit(":", 1)[1])
        pump = asyncio.create_task(hub.run(), name="hub")
        slow = _never_reading_viewer(port)
        readers = [
            asyncio.create_task(_reader(port, total, full=i < 10), name=f"viewer {i}")
            for i in range(VIEWERS - 1)
        ]
        try:
            deadline = time.monotonic() + 30
            while broadcast.viewers < VIEWERS and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert broadcast.viewers == VIEWERS
            started = time.monotonic()
            seq = 0
            step = RATE // 100  # every 10 ms
            while seq < RATE * SECONDS or (broadcast.cut_off == 0 and seq < RATE * 30):
                await asyncio.sleep(max(0.0, started + seq / RATE - time.monotonic()))
                hub.push("r1", [added(s) for s in range(seq + 1, seq + step + 1)])
                seq += step
            total[0] = seq
            hub.push("r1", [added(seq + 1)])  # wakes readers waiting with everything already
            total[0] = seq + 1
            assert broadcast.cut_off == 1
            results = await asyncio.wait_for(asyncio.gather(*readers), 60)
            tail = await asyncio.to_thread(_read_to_end, slow, 20)
        finally:
            slow.close()
            for task in (pump, *readers):
                task.cancel()
            await asyncio.gather(pump, *readers, return_exceptions=True)
    expected = list(range(1, total[0] + 1))
    for seqs in results:
        # Every event, in order. The backfill and the first live frame may overlap (the page
        # drops an event at or below the last seq it has): so does this check, and nothing else.
        seen, last = [], 0
        for s in seqs:
            assert s > last or s in seen, f"out of order: {s} after {last}"
            if s > last:
                seen.append(s)
                last = s
        assert seen == expected
    # The raw (chunked) tail of the slow viewer's stream ends with the lagged message.
    lagged = _LAGGED.findall(tail)
    assert len(lagged) == 1 and int(lagged[0]) > 0, tail[-300:]
