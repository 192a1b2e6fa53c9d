"""A scripted HTTP server on 127.0.0.1 for the wire-transport tests: ``handle`` serves each
connection; the port is set on ``srv`` while the block runs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol


class Scripted(Protocol):
    port: int

    def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Awaitable[None]: ...


@contextlib.asynccontextmanager
async def serving(srv: Scripted) -> AsyncIterator[None]:
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] = srv.handle
    tcp = await asyncio.start_server(handle, "127.0.0.1", 0)
    srv.port = tcp.sockets[0].getsockname()[1]
    try:
        yield
    finally:
        tcp.close()
        await tcp.wait_closed()
