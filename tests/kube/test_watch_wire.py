"""Watches over the wire transport (pycm.kube.wire) against a scripted HTTP/1.1 server on
127.0.0.1: the bytes each answer is made of are written as given, so framing, errors and
closes are exactly what the test says."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

import pycm.kube.request as client_module
from pycm.kube import (
    PODS,
    Client,
    Expired,
    Forbidden,
    KubeError,
    ServerError,
    Timeout,
    TransportError,
    Unauthorized,
)
from pycm.kube.config import ClientConfig
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from tests.kube.loopback import serving

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Server:
    """Answers the n-th connection with ``scripts[n]``; records each request head and whether
    the client closed its side (EOF seen) after the script ran."""

    scripts: list[Script] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)
    closed: list[asyncio.Event] = field(default_factory=list)
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        closed = asyncio.Event()
        self.closed.append(closed)
        try:
            self.heads.append(await reader.readuntil(b"\r\n\r\n"))
            await self.scripts.pop(0)(reader, writer)
            await reader.read()  # until the client closes (or aborts) the connection
            closed.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            closed.set()
        finally:
            writer.close()


@pytest_asyncio.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    async with serving(srv):
        yield srv


@pytest_asyncio.fixture
async def wire(server: Server) -> AsyncIterator[Client]:
    config = ClientConfig(server=f"http://127.0.0.1:{server.port}", qps=-1, token="t0k")
    client = Client(config, bus=Bus(), registry=CollectorRegistry(), clock=_Clock())
    assert client._watch_http is not None  # watches take the wire path
    try:
        yield client
    finally:
        await client.aclose()


class _Clock(FakeClock):
    async def sleep(self, seconds: float) -> None:  # Retry-After waits pass at once
        self.advance(seconds)
        await asyncio.sleep(0)


def _line(kind: str, name: str, rv: str = "1") -> bytes:
    return orjson.dumps({"type": kind, "object": {"metadata": {"name": name, "rv": rv}}}) + b"\n"


def _chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), ext, data)


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def _writes(*parts: bytes, end: bool = True) -> Script:
    """Write each part separately (drained, then a loop turn), then the end if ``end``."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0)
        if end:
            writer.write_eof()

    return script


def _status(code: int, reason: str, extra: bytes = b"") -> Script:
    body = orjson.dumps({"kind": "Status", "code": code, "reason": reason, "message": "no"})
    head = b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
    return _writes(head % (code, len(body), extra) + body)


async def _names(client: Client) -> list[str]:
    async with client.watch(PODS, namespace="ns") as w:
        return [ev.object["metadata"]["name"] async for ev in w]


async def _types_until_raises(
    client: Client, error: type[Exception], match: str, **watch: Any
) -> list[str]:
    """The types of the events a watch gave before it raised ``error`` (matching ``match``)."""
    seen: list[str] = []
    with pytest.raises(error, match=match):
        async with client.watch(PODS, **watch) as w:
            async for ev in w:
                seen.append(ev.type)
    return seen


@pytest.mark.asyncio
async def test_wire_watch_one_read_of_many_events_is_one_batch(
    wire: Client, server: Server
) -> None:
    lines = [_line("MODIFIED", f"p{i}") for i in range(50)]
    server.scripts.append(_writes(HEAD, b"".join(_chunk(x) for x in lines) + _chunk(b"")))
    async with wire.watch(PODS) as w:
        batches = [batch async for batch in w.line_batches()]
    # httpx's path gives one h11 Data event, hence one batch, per chunk.
    assert batches == [[x.rstrip(b"\n") for x in lines]]


@pytest.mark.asyncio
async def test_wire_watch_sends_the_clients_request(wire: Client, server: Server) -> None:
    server.scripts.append(_writes(HEAD + _chunk(b"")))
    async with wire.watch(PODS, namespace="ns", resource_version="7", timeout_seconds=60) as w:
        assert [ev async for ev in w] == []
    head = server.heads[0].decode().lower()
    assert head.startswith(
        "get /api/v1/namespaces/ns/pods?watch=true&resourceversion=7"
        "&allowwatchbookmarks=true&timeoutseconds=60 http/1.1\r\n"
    )
    for header in ("host: 127.0.0.1:", "authorization: bearer t0k", "accept: application/json"):
        assert f"\r\n{header}" in head
    assert "\r\nuser-agent: pycm" in head


A = _line("ADDED", "a")
B = _line("ADDED", "b")
AB = A + B


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "parts",
    [
        pytest.param(
            [
                *(HEAD[:9], HEAD[9:30], HEAD[30:] + b"%x" % len(A), b";ext=v\r\n"),
                *(A[:5], A[5:] + b"\r", b"\n"),
                *(_chunk(B[:5]), _chunk(B[5:]) + b"0\r\nT: 1\r\n", b"\r\n"),
            ],
            id="chunked-split-everywhere",
        ),
        pytest.param(
            [
                b"HTTP/1.1 100 Continue\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunk(AB),
                b"0\r\n\r\n",
            ],
            id="100-continue-first",
        ),
        pytest.param(
            [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(AB) + A[:3], A[3:] + B],
            id="content-length",
        ),
        pytest.param([b"HTTP/1.0 200 OK\r\n\r\n" + A, B], id="close-delimited"),
        pytest.param([HEAD + _chunk(A) + _chunk(B) + b"0\r\n\r\n"], id="with-the-head"),
    ],
)
async def test_wire_watch_reads_every_framing(
    wire: Client, server: Server, parts: list[bytes]
) -> None:
    server.scripts.append(_writes(*parts))
    assert await _names(wire) == ["a", "b"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("script", "error", "match"),
    [
        pytest.param(_status(410, "Expired"), Expired, "no", id="410"),
        pytest.param(_status(401, "Unauthorized"), Unauthorized, "no", id="401"),
        pytest.param(_status(403, "Forbidden"), Forbidden, "no", id="403"),
        pytest.param(_status(503, "ServiceUnavailable"), ServerError, "no", id="503"),
        pytest.param(
            _writes(b"HTTP/1.1 200 OK\r\n"), TransportError, "RemoteProtocolError", id="cut-head"
        ),
        pytest.param(
            _writes(b"HTTP/9 OK\r\n\r\n"), TransportError, "RemoteProtocolError", id="bad-head"
        ),
        pytest.param(_writes(b""), TransportError, "disconnected", id="no-answer"),
        pytest.param(
            _writes(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
            TransportError,
            "without a pending proposal",
            id="unrequested-upgrade",
        ),
    ],
)
async def test_wire_watch_open_failures_raise_the_mapped_error(
    wire: Client, server: Server, script: Script, error: type[Exception], match: str
) -> None:
    server.scripts.append(script)
    with pytest.raises(error, match=match):
        await _names(wire)


@pytest.mark.asyncio
async def test_wire_watch_5xx_with_retry_after_is_retried(wire: Client, server: Server) -> None:
    server.scripts.append(_status(500, "InternalError", b"Retry-After: 1\r\n"))
    server.scripts.append(_writes(HEAD, _chunk(_line("ADDED", "a")) + _chunk(b"")))
    assert await _names(wire) == ["a"]
    assert len(server.heads) == 2


@pytest.mark.asyncio
async def test_wire_watch_error_event_raises_expired(wire: Client, server: Server) -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    error = orjson.dumps({"type": "ERROR", "object": gone}) + b"\n"
    server.scripts.append(_writes(HEAD, _chunk(_line("ADDED", "a")) + _chunk(error)))
    assert await _types_until_raises(wire, Expired, "too old") == ["ADDED"]


@pytest.mark.asyncio
async def test_wire_watch_undecodable_line_raises(wire: Client, server: Server) -> None:
    server.scripts.append(_writes(HEAD, _chunk(b"not json\n") + _chunk(b"")))
    with pytest.raises(KubeError, match="undecodable"):
        await _names(wire)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "rest",
    [
        pytest.param(b"", id="between-chunks"),
        pytest.param(b"ff\r\n{", id="mid-chunk"),
        pytest.param(b"zz\r\n", id="bad-size-line"),
    ],
)
async def test_wire_watch_broken_stream_raises_transport_error(
    wire: Client, server: Server, rest: bytes
) -> None:
    server.scripts.append(_writes(HEAD, _chunk(_line("ADDED", "a")) + rest))
    assert await _types_until_raises(wire, TransportError, "watch stream broken") == ["ADDED"]


@pytest.mark.asyncio
async def test_wire_watch_read_timeout_raises_timeout(
    wire: Client, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The read timeout is timeoutSeconds plus the margin: 1 - 0.95 s here.
    monkeypatch.setattr(client_module, "WATCH_READ_MARGIN", -0.95)
    server.scripts.append(_writes(HEAD, _chunk(_line("ADDED", "a")), end=False))
    assert await _types_until_raises(wire, Timeout, "timed out", timeout_seconds=1) == ["ADDED"]
    await asyncio.wait_for(server.closed[0].wait(), 5)


@pytest.mark.asyncio
async def test_wire_watch_connection_refused_raises_connect_error(server: Server) -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    config = ClientConfig(server=f"http://127.0.0.1:{port}", qps=-1)
    async with Client(config, bus=Bus(), registry=CollectorRegistry()) as client:
        with pytest.raises(TransportError, match=r"^ConnectError"):
            await _names(client)


@pytest.mark.asyncio
async def test_wire_watch_leaving_the_block_closes_the_connection(
    wire: Client, server: Server
) -> None:
    server.scripts.append(_writes(HEAD, _chunk(_line("ADDED", "a")), end=False))
    async with wire.watch(PODS) as w:
        assert (await anext(w)).type == "ADDED"
        assert not server.closed[0].is_set()
    await asyncio.wait_for(server.closed[0].wait(), 5)


@pytest.mark.asyncio
async def test_wire_watch_cancelled_while_waiting_closes_the_connection(
    wire: Client, server: Server
) -> None:
    server.scripts.append(_writes(HEAD, end=False))
    started = asyncio.Event()

    async def watch() -> Any:
        async with wire.watch(PODS) as w:
            started.set()
            return [ev async for ev in w]

    task = asyncio.ensure_future(watch())
    await started.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(server.closed[0].wait(), 5)


@pytest.mark.asyncio
async def test_wire_watch_cancelled_before_the_answer_closes_the_connection(
    wire: Client, server: Server
) -> None:
    answered = asyncio.Event()

    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered.set()

    server.scripts.append(never)
    task = asyncio.ensure_future(_names(wire))
    await answered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(server.closed[0].wait(), 5)
