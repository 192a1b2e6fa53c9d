"""A lean HTTP/1.1 client for request-rate figures: keep-alive connections over asyncio streams,
requests written as prepared bytes, responses read by their Content-Length.

Why not httpx: on this machine an httpx request costs the client about 2 ms of CPU, so 16 in
flight saturate the client before the server — measured, the emulator and a minimal endpoint on
the same stack both answered ~450 requests/s (ratio ~0.88), whatever the emulator did. This
client costs tens of µs a request, so a request-rate figure measures the server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

__all__ = ["Connections", "request"]

_HEAD_END = b"\r\n\r\n"


def request(
    method: str,
    path: str,
    token: str,
    body: bytes = b"",
    content_type: str = "application/json",
) -> bytes:
    """One HTTP/1.1 request as bytes (bearer token, a body of ``content_type``, keep-alive)."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        f"Accept: application/json\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def send(self, raw: bytes, status: int) -> bytes:
        """Send ``raw``; the response's body (RuntimeError unless its status is ``status``)."""
        self._writer.write(raw)
        head = await self._reader.readuntil(_HEAD_END)
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RuntimeError(f"a response without Content-Length: {head[:200]!r}")
        body = await self._reader.readexactly(length)
        got = int(head.split(b" ", 2)[1])
        if got != status:
            raise RuntimeError(f"{raw.split(b' ', 2)[:2]!r}: status {got}, want {status}: {body!r}")
        return body

    def close(self) -> None:
        self._writer.close()


class Connections:
    """``count`` keep-alive connections to ``url`` (http://host:port), one request in flight on
    each; use as ``async with``."""

    def __init__(self, url: str, count: int) -> None:
        self._url = url
        self._count = count
        self._connections: list[_Connection] = []

    async def __aenter__(self) -> Connections:
        host, port = self._url.removeprefix("http://").rsplit(":", 1)
        for _ in range(self._count):
            reader, writer = await asyncio.open_connection(host, int(port))
            self._connections.append(_Connection(reader, writer))
        return self

    async def __aexit__(self, *_: object) -> None:
        for connection in self._connections:
            connection.close()
        self._connections = []

    async def run(self, requests: Iterable[bytes], status: int) -> float:
        """Seconds to send every request (each answered ``status``), all connections busy."""
        pending = iter(requests)

        async def worker(connection: _Connection) -> None:
            for raw in pending:
                await connection.send(raw, status)

        start = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for i, connection in enumerate(self._connections):
                tg.create_task(worker(connection), name=f"bench-rawhttp-{i}")
        return time.perf_counter() - start

    async def one(self, raw: bytes, status: int) -> bytes:
        """The body of one request's response (sent on the first connection)."""
        return await self._connections[0].send(raw, status)
