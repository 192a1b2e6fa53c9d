"""The SSE parser, and SseSource against an httpx MockTransport server that drops the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from pycm.trace import Bus, Event, UnknownEvent, encode
from pycm.trace import kinds as k
from pycm.trace.state import State
from pycm.util.backoff import Backoff
from tui.feed import Feed
from tui.sources import SseSource
from tui.sse import SseMessage, SseParser


def parse(lines: list[str]) -> list[SseMessage]:
    parser = SseParser()
    return [m for line in lines if (m := parser.feed(line)) is not None]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(["data: x", ""], [SseMessage("message", "x", "")], id="default-event"),
        pytest.param(
            ["event: trace", "id: 7", "data: {}", ""], [SseMessage("trace", "{}", "7")], id="full"
        ),
        pytest.param(["data: a", "data: b", ""], [SseMessage("message", "a\nb", "")], id="joined"),
        pytest.param(["data:nospace", ""], [SseMessage("message", "nospace", "")], id="no-space"),
        pytest.param(["data:  two", ""], [SseMessage("message", " two", "")], id="one-space-cut"),
        pytest.param([": ping", ""], [], id="comment-only"),
        pytest.param(["event: trace", ""], [], id="no-data-no-dispatch"),
        pytest.param(
            ["id: 3", "data: a", "", "data: b", ""],
            [SseMessage("message", "a", "3"), SseMessage("message", "b", "3")],
            id="id-persists",
        ),
        pytest.param(["id: 1\0", "data: a", ""], [SseMessage("message", "a", "")], id="nul-id"),
        pytest.param(["data", ""], [SseMessage("message", "", "")], id="field-without-colon"),
        pytest.param(["bogus: 1", "data: a", ""], [SseMessage("message", "a", "")], id="unknown"),
        pytest.param(
            ["event: a", "data: 1", "", "data: 2", ""],
            [SseMessage("a", "1", ""), SseMessage("message", "2", "")],
            id="event-resets",
        ),
    ],
)
def test_sse_parser_messages(lines: list[str], expected: list[SseMessage]) -> None:
    assert parse(lines) == expected


def test_sse_parser_retry_is_kept_when_integer() -> None:
    parser = SseParser()
    parser.feed("retry: 1500")
    parser.feed("retry: soon")
    assert parser.retry_ms == 1500


def renewed(seq: int) -> Event:
    return k.LeaseRenewed(
        lease="kube-system/pycm",
        identity="pycm-a",
        latency_ms=3.0,
        seq=seq,
        ts=1_790_000_000_000_000_000 + seq,
        instance="pycm-a",
    )


def frame(event: Event) -> bytes:
    return b"event: trace\nid: %d\ndata: %s\n\n" % (event.seq, encode(event))


class Server:
    """Connection 1: a snapshot, events 1-2, a malformed line, an unknown kind, then the
    connection drops. Connection 2 (must ask since=2): event 3, then a clean end."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        n = len(self.requests)

        async def first() -> AsyncIterator[bytes]:
            snap = State()
            snap.apply(
                k.LeaseAcquired(
                    lease="kube-system/pycm",
                    identity="pycm-a",
                    transitions=3,
                    seq=0,
                    ts=1,
                    instance="pycm-a",
                )
            )
            yield b"event: snapshot\ndata: " + orjson.dumps(snap.snapshot()) + b"\n\n"
            yield frame(renewed(1)) + b": ping\n\n"
            yield frame(renewed(2))
            yield b"event: trace\ndata: {not json\n\n"
            yield b'event: trace\nid: 2\ndata: {"kind": "from.the.future", "seq": 0, "ts": 5}\n\n'
            raise httpx.RemoteProtocolError("peer closed connection")

        async def second() -> AsyncIterator[bytes]:
            yield frame(renewed(3))

        if n == 1:
            return httpx.Response(200, content=first())
        if n == 2:
            return httpx.Response(200, content=second())
        return httpx.Response(503, content=b"")


@pytest.mark.asyncio
async def test_sse_source_reconnects_after_a_drop_and_resumes_since_last_seq() -> None:
    server = Server()
    feed = Feed()
    statuses: list[str] = []
    original = feed.set_status

    def record(source: Any, status: str) -> None:
        statuses.append(status)
        original(source, status)

    feed.set_status = record  # type: ignore[method-assign]
    delays: list[float] = []
    third_sleep = asyncio.Event()

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) >= 3:
            third_sleep.set()
            await asyncio.Future()  # park: the test cancels the source

    source = SseSource(
        "https://replica-a:10257",
        token="s3cret",
        transport=httpx.MockTransport(server.handler),
        backoff=Backoff(1.0, factor=2.0),
        sleep=sleep,
    )
    task = asyncio.create_task(source.run(feed), name="sse source")
    await asyncio.wait_for(third_sleep.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert [r.url.params.get("since") for r in server.requests] == [None, "2", "3"]
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in server.requests)
    assert server.requests[0].url.path == "/debug/pycm/events"
    # backoff resets after a connection that delivered: 1 s, 1 s, then 2 s after the 503
    assert delays == [1.0, 1.0, 2.0]
    assert statuses[:2] == ["connecting", "live"]
    assert statuses[2].startswith("reconnecting in 1.0s (RemoteProtocolError")
    assert statuses[-1] == "reconnecting in 2.0s (HTTP 503)"
    assert source.malformed == 1 and source.last_seq == 3
    assert feed.snapshots == 1
    feed.drain()
    state = feed.state
    assert state.leases["kube-system/pycm"].transitions == 3  # from the snapshot
    assert state.leases["kube-system/pycm"].holders["pycm-a"].renews == 3
    assert state.unknown == {"from.the.future": 1}
    assert isinstance(feed.recent[2], UnknownEvent)


def test_feed_overflow_drops_oldest_and_counts() -> None:
    feed = Feed(max_buffer=3)
    feed.push(None, [renewed(i) for i in range(1, 6)])
    assert feed.dropped == 2
    assert feed.drain() == 3
    assert [e.seq for e in feed.recent] == [3, 4, 5]


def test_feed_snapshot_merge_keeps_known_instances() -> None:
    feed = Feed()
    feed.push(None, [renewed(1)])
    feed.drain()
    other = State()
    other.apply(
        k.LeaseRenewed(lease="kube-system/pycm", identity="pycm-a", seq=9, ts=9, instance="pycm-a")
    )
    other.apply(
        k.ControllerStarted(controller="deployment", workers=2, seq=1, ts=9, instance="pycm-b")
    )
    feed.push_snapshot(None, other.snapshot())
    assert feed.state.instances["pycm-a"].last_seq == 1  # ours kept
    assert ("pycm-b", "deployment") in feed.state.controllers  # theirs adopted
    feed.push_snapshot(None, {"instances": "garbage"})  # not fatal


class _Limit(httpx.AsyncBaseTransport):
    """Adds ``limit=2`` to each request, so pycm's real SSE route ends every stream after two
    events (a dropped connection, as far as the viewer can tell)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.since: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.since.append(request.url.params.get("since"))
        request.url = request.url.copy_merge_params({"limit": "2"})
        return await self.inner.handle_async_request(request)


@pytest.mark.asyncio
async def test_sse_source_against_pycm_debug_route_resumes_without_gaps_or_duplicates() -> None:
    from starlette.applications import Starlette

    from pycm.server.debug import debug_routes

    bus = Bus(instance="pycm-a")
    server_state = State()
    server_state.apply(
        k.ControllerStarted(controller="deployment", workers=1, seq=1, ts=1, instance="pycm-a")
    )
    app = Starlette(routes=debug_routes(bus, server_state.snapshot))
    transport = _Limit(httpx.ASGITransport(app=app))
    feed = Feed()
    sleeps: list[float] = []
    parked = asyncio.Event()

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) >= 3:
            parked.set()
            await asyncio.Future()

    source = SseSource(
        "http://pycm-a:10257", transport=transport, sleep=sleep, backoff=Backoff(0.5)
    )
    task = asyncio.create_task(source.run(feed), name="sse source")
    try:
        async with asyncio.timeout(5):
            while bus.subscribers == 0:  # live from the first connection on: since=None
                await asyncio.sleep(0)
            for i in range(6):
                bus.emit(k.ItemAdded(queue="deployment", key=f"default/web-{i}", depth=i + 1))
                await asyncio.sleep(0)
            await parked.wait()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert transport.since == [None, "2", "4"]
    feed.drain()
    assert [e.seq for e in feed.recent] == [1, 2, 3, 4, 5, 6]
    assert feed.snapshots == 1  # adopted once: the later ones name an instance already known
    assert feed.state.queues[("pycm-a", "deployment")].depth == 6
    assert ("pycm-a", "deployment") in feed.state.controllers  # from the snapshot
