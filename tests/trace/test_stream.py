"""The stream client: its SSE parser, resume and backoff against an httpx MockTransport server that
drops the stream, and against pycm's real debug route."""

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
from pycm.trace.stream import (
    SourceState,
    SourceStatus,
    SseMessage,
    SseParser,
    StreamClient,
)
from pycm.util.backoff import Backoff


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


class Sink:
    """A :class:`~pycm.trace.stream.StreamSink` that records everything and folds the events."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.snapshots: list[dict[str, Any]] = []
        self.statuses: list[SourceStatus] = []
        self.names: set[str] = set()
        self.state = State()

    def push(self, source: str, events: Any) -> None:
        self.names.add(source)
        self.events.extend(events)
        self.state.apply_all(events)

    def push_snapshot(self, source: str, snapshot: Any) -> None:
        self.names.add(source)
        self.snapshots.append(dict(snapshot))

    def set_status(self, source: str, status: SourceStatus) -> None:
        self.names.add(source)
        self.statuses.append(status)

    @property
    def states(self) -> list[SourceState]:
        return [s.state for s in self.statuses]


@pytest.mark.asyncio
async def test_stream_client_reconnects_after_a_drop_and_resumes_since_last_seq() -> None:
    server = Server()
    sink = Sink()
    delays: list[float] = []
    third_sleep = asyncio.Event()

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) >= 3:
            third_sleep.set()
            await asyncio.Future()  # park: the test cancels the client

    client = StreamClient(
        "https://replica-a:10257",
        token="s3cret",
        transport=httpx.MockTransport(server.handler),
        backoff=Backoff(1.0, factor=2.0),
        sleep=sleep,
    )
    task = asyncio.create_task(client.run(sink), name="stream client")
    await asyncio.wait_for(third_sleep.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert [r.url.params.get("since") for r in server.requests] == [None, "2", "3"]
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in server.requests)
    assert server.requests[0].url.path == "/debug/pycm/events"
    # backoff resets after a connection that delivered: 1 s, 1 s, then 2 s after the 503
    assert delays == [1.0, 1.0, 2.0]
    assert sink.names == {"replica-a:10257"}
    assert sink.states[:3] == [
        SourceState.CONNECTING,
        SourceState.CONNECTED,
        SourceState.RECONNECTING,
    ]
    assert sink.statuses[2].reason.startswith("RemoteProtocolError")
    assert sink.statuses[2].reason.endswith("; retrying in 1.0s")
    assert sink.statuses[-1] == SourceStatus(SourceState.RECONNECTING, "HTTP 503; retrying in 2.0s")
    assert client.malformed == 1 and client.last_seq == 3
    assert len(sink.snapshots) == 1
    assert sink.snapshots[0]["leases"]["kube-system/pycm"]["transitions"] == 3
    state = sink.state
    assert state.leases["kube-system/pycm"].holders["pycm-a"].renews == 3
    assert state.unknown == {"from.the.future": 1}
    assert isinstance(sink.events[2], UnknownEvent)


@pytest.mark.parametrize(
    ("code", "state"),
    [
        pytest.param(401, SourceState.UNAUTHORIZED, id="401"),
        pytest.param(403, SourceState.FORBIDDEN, id="403"),
        pytest.param(500, SourceState.RECONNECTING, id="500"),
    ],
)
@pytest.mark.asyncio
async def test_stream_client_http_error_is_a_typed_status_and_retried(
    code: int, state: SourceState
) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(code, text="Unauthorized" if code == 401 else "")

    sink = Sink()
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) >= 2:
            await asyncio.Future()

    client = StreamClient(
        "https://a:1", transport=httpx.MockTransport(handler), backoff=Backoff(1.0), sleep=sleep
    )
    task = asyncio.create_task(client.run(sink), name="stream client")
    async with asyncio.timeout(5):
        while len(sleeps) < 2:
            await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(calls) == 2  # it keeps trying: a token may be fixed
    assert sink.states == [SourceState.CONNECTING, state, SourceState.CONNECTING, state]
    assert sink.statuses[1].reason.startswith(f"HTTP {code}")


@pytest.mark.asyncio
async def test_stream_client_token_file_read_before_every_attempt(tmp_path: Any) -> None:
    token = tmp_path / "token"
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        token.write_text("second\n")  # rotated after the first attempt
        return httpx.Response(401)

    sink = Sink()
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) >= 3 and len(seen) >= 2:
            await asyncio.Future()

    client = StreamClient(
        "https://a:1",
        token_file=str(token),
        transport=httpx.MockTransport(handler),
        backoff=Backoff(1.0),
        sleep=sleep,
    )
    task = asyncio.create_task(client.run(sink), name="stream client")
    async with asyncio.timeout(5):
        while len(sleeps) < 1:
            await asyncio.sleep(0)
        token.write_text("first\n")
        while len(seen) < 2 or len(sleeps) < 3:
            await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # no file yet: FAILED without a request; then the first token, then the rotated one
    assert sink.statuses[1].state is SourceState.FAILED
    assert "token file" in sink.statuses[1].reason
    assert seen == ["Bearer first", "Bearer second"]


def test_source_status_wire_form_uses_the_enum_values() -> None:
    assert SourceStatus(SourceState.TLS_ERROR, "bad cert").to_dict() == {
        "state": "tls_error",
        "reason": "bad cert",
    }
    assert [s.value for s in SourceState] == [
        "connecting",
        "connected",
        "reconnecting",
        "unauthorized",
        "forbidden",
        "tls_error",
        "failed",
        "ended",
    ]


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
async def test_stream_client_against_pycm_debug_route_resumes_without_gaps_or_duplicates() -> None:
    from starlette.applications import Starlette

    from pycm.server.debug import debug_routes

    bus = Bus(instance="pycm-a")
    server_state = State()
    server_state.apply(
        k.ControllerStarted(controller="deployment", workers=1, seq=1, ts=1, instance="pycm-a")
    )
    app = Starlette(routes=debug_routes(bus, server_state.snapshot))
    transport = _Limit(httpx.ASGITransport(app=app))
    sink = Sink()
    sleeps: list[float] = []
    parked = asyncio.Event()

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) >= 3:
            parked.set()
            await asyncio.Future()

    client = StreamClient(
        "http://pycm-a:10257", transport=transport, sleep=sleep, backoff=Backoff(0.5)
    )
    task = asyncio.create_task(client.run(sink), name="stream client")
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
    assert [e.seq for e in sink.events] == [1, 2, 3, 4, 5, 6]
    assert len(sink.snapshots) == 3  # one first on every connection
    assert sink.state.queues[("pycm-a", "deployment")].depth == 6
    assert "deployment" in sink.snapshots[0]["controllers"]["pycm-a"]
    assert client.restarts == 0 and client.duplicates == 0


def _snapshot_of(first_ts: int) -> bytes:
    state = State()
    state.apply(k.ControllerStarted(controller="c", seq=1, ts=first_ts, instance="pycm-a"))
    return b"event: snapshot\ndata: " + orjson.dumps(state.snapshot()) + b"\n\n"


class RestartingServer:
    """Serves scripted connections (bodies of SSE bytes) and records each request's since."""

    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.since: list[str | None] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        self.since.append(request.url.params.get("since"))
        n = len(self.since)
        if n > len(self.bodies):
            return httpx.Response(503)
        return httpx.Response(200, content=self.bodies[n - 1])


async def _run_until_parked(server: RestartingServer, sink: Sink) -> StreamClient:
    """Run a client against ``server`` until its second backoff sleep (its script is over)."""
    parked = asyncio.Event()
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)
        if len(sleeps) >= 2:
            parked.set()
            await asyncio.Future()

    client = StreamClient(
        "https://a:1",
        transport=httpx.MockTransport(server.handler),
        backoff=Backoff(0.1),
        sleep=sleep,
    )
    task = asyncio.create_task(client.run(sink), name="stream client")
    await asyncio.wait_for(parked.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return client


@pytest.mark.asyncio
async def test_stream_client_seq_going_back_after_reconnect_reads_the_new_run_from_its_start() -> (
    None
):
    server = RestartingServer(
        [
            b"".join(frame(renewed(i)) for i in (1, 2, 3)),
            frame(renewed(2)) + frame(renewed(3)),  # a new process: since=3 is in its future
            b"".join(frame(renewed(i)) for i in (1, 2, 3, 4)),
        ]
    )
    sink = Sink()
    client = await _run_until_parked(server, sink)
    assert server.since == [None, "3", "0"]
    assert [e.seq for e in sink.events] == [1, 2, 3, 1, 2, 3, 4]
    assert (client.restarts, client.duplicates, client.last_seq) == (1, 0, 4)


@pytest.mark.asyncio
async def test_stream_client_snapshot_of_a_new_process_restarts_from_since_zero() -> None:
    server = RestartingServer(
        [
            _snapshot_of(100) + b"".join(frame(renewed(i)) for i in range(1, 6)),
            _snapshot_of(200) + frame(renewed(6)),  # already past since=5: seqs cannot tell
            _snapshot_of(200) + frame(renewed(1)) + frame(renewed(2)),
        ]
    )
    sink = Sink()
    client = await _run_until_parked(server, sink)
    assert server.since == [None, "5", "0"]
    assert [e.seq for e in sink.events] == [1, 2, 3, 4, 5, 1, 2]
    assert client.restarts == 1


@pytest.mark.asyncio
async def test_stream_client_repeated_event_in_one_connection_not_pushed_twice() -> None:
    server = RestartingServer([b"".join(frame(renewed(i)) for i in (1, 2, 2, 3, 1))])
    sink = Sink()
    client = await _run_until_parked(server, sink)
    assert [e.seq for e in sink.events] == [1, 2, 3]
    assert (client.duplicates, client.restarts) == (2, 0)
