"""List pages over the wire transport (pycm.kube.wire) keep their connection for the next
request, against a scripted keep-alive HTTP/1.1 server on 127.0.0.1: a body read to its end
leaves the connection idle for the next request; a ``Connection: close`` answer, an unfinished
body or a connection the server closed is not used again, and a GET that finds its idle
connection closed under it is sent again on a new one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import orjson
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.kube import PODS, Client
from pycm.kube.config import ClientConfig
from pycm.kube.wire import MAX_IDLE
from pycm.trace.bus import Bus
from tests.kube.loopback import serving

# What the server does with a request: the bytes it answers, or None to close without a word.
Answer = Callable[[int, int], bytes | None]


def _page(name: str, close: bool = False) -> bytes:
    body = orjson.dumps(
        {"kind": "PodList", "metadata": {}, "items": [{"metadata": {"name": name}}]}
    )
    extra = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@dataclass
class KeepAliveServer:
    """Serves requests one after another on each connection with ``answer(connection,
    request_on_it)``; records (connection, request line) for each request."""

    answer: Answer = lambda conn, n: _page(f"c{conn}r{n}")
    requests: list[tuple[int, bytes]] = field(default_factory=list)
    connections: int = 0
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.connections
        self.connections += 1
        try:
            for n in range(1000):
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append((conn, head.split(b"\r\n", 1)[0]))
                data = self.answer(conn, n)
                if data is None:
                    return
                writer.write(data)
                await writer.drain()
                if b"Connection: close" in data:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@pytest_asyncio.fixture
async def server() -> AsyncIterator[KeepAliveServer]:
    srv = KeepAliveServer()
    async with serving(srv):
        yield srv


@pytest_asyncio.fixture
async def client(server: KeepAliveServer) -> AsyncIterator[Client]:
    config = ClientConfig(server=f"http://127.0.0.1:{server.port}", qps=-1, token="t0k")
    kube = Client(config, bus=Bus(), registry=CollectorRegistry())
    assert kube._watch_http is not None  # lists take the wire path
    try:
        yield kube
    finally:
        await kube.aclose()


async def _name(client: Client) -> str:
    body = await client.list_raw(PODS, namespace="ns", limit=1)
    return str(orjson.loads(body)["items"][0]["metadata"]["name"])


@pytest.mark.asyncio
async def test_wire_list_pages_one_after_another_share_one_connection(
    client: Client, server: KeepAliveServer
) -> None:
    assert [await _name(client) for _ in range(3)] == ["c0r0", "c0r1", "c0r2"]
    assert server.connections == 1
    assert [line for _, line in server.requests] == [
        b"GET /api/v1/namespaces/ns/pods?limit=1 HTTP/1.1"
    ] * 3


@pytest.mark.asyncio
async def test_wire_answer_saying_close_is_not_reused(
    client: Client, server: KeepAliveServer
) -> None:
    server.answer = lambda conn, n: _page(f"c{conn}r{n}", close=True)
    assert [await _name(client) for _ in range(3)] == ["c0r0", "c1r0", "c2r0"]


@pytest.mark.asyncio
async def test_wire_connection_the_server_closed_while_idle_is_replaced(
    client: Client, server: KeepAliveServer
) -> None:
    # The server closes each connection right after its first answer (no Connection header).
    server.answer = lambda conn, n: _page(f"c{conn}r{n}") if n == 0 else None
    names = []
    for _ in range(3):
        names.append(await _name(client))
        await asyncio.sleep(0.05)  # (the close arrives while the connection is idle)
    assert names == ["c0r0", "c1r0", "c2r0"]


@pytest.mark.asyncio
async def test_wire_get_on_a_connection_closed_unanswered_is_sent_again(
    client: Client, server: KeepAliveServer
) -> None:
    # The second request on the first connection is read and left unanswered (closed): a
    # keep-alive connection the server gave up just as the client reused it.
    server.answer = lambda conn, n: None if (conn, n) == (0, 1) else _page(f"c{conn}r{n}")
    assert [await _name(client) for _ in range(2)] == ["c0r0", "c1r0"]
    assert [conn for conn, _ in server.requests] == [0, 0, 1]


@pytest.mark.asyncio
async def test_wire_keeps_at_most_max_idle_connections(
    client: Client, server: KeepAliveServer
) -> None:
    many = MAX_IDLE + 2
    # Concurrent pages each need a connection of their own ...
    names = await asyncio.gather(*(_name(client) for _ in range(many)))
    assert sorted(names) == sorted(f"c{i}r0" for i in range(many))
    # ... and afterwards MAX_IDLE of them serve the next pages.
    again = await asyncio.gather(*(_name(client) for _ in range(MAX_IDLE)))
    assert server.connections == many
    assert all(not name.endswith("r0") for name in again)
