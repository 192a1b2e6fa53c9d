"""What the emulator's HTTP/1.1 layer (uvicorn with httptools) does on the wire: a malformed
request gets a 400 and the connection closes, pipelined requests on one keep-alive connection
are answered in order, a watch is chunked JSON, and a client that goes away ends its watch."""

from __future__ import annotations

import asyncio
from urllib.parse import urlparse

import pytest

from pycm.sim.server import Emulator
from tests.sim.conftest import wait_for


async def _open(emu: Emulator) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    url = urlparse(emu.url)
    return await asyncio.open_connection(url.hostname, url.port)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NOT A REQUEST\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: sim\r\nBad Header\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: sim\r\nContent-Length: x\r\n\r\n",
    ],
    ids=["request-line", "header-without-colon", "content-length"],
)
async def test_malformed_request_gets_400_and_the_connection_closes(
    emu: Emulator, request_bytes: bytes
) -> None:
    reader, writer = await _open(emu)
    try:
        writer.write(request_bytes)
        async with asyncio.timeout(5):
            answer = await reader.read()  # to EOF: the server closes
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:80]
    finally:
        writer.close()


@pytest.mark.asyncio
async def test_pipelined_requests_on_one_connection_are_answered_in_order(emu: Emulator) -> None:
    reader, writer = await _open(emu)
    try:
        auth = f"Authorization: Bearer {emu.admin_token}\r\n"
        writer.write(
            b"GET /healthz HTTP/1.1\r\nHost: sim\r\n\r\n"
            + f"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: sim\r\n{auth}\r\n".encode()
        )
        async with asyncio.timeout(5):
            first = await reader.readuntil(b"\r\n\r\n")
            assert first.startswith(b"HTTP/1.1 200 ")
            length = int(first.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            assert await reader.readexactly(length) == b"ok"
            second = await reader.readuntil(b"\r\n\r\n")
            assert second.startswith(b"HTTP/1.1 200 ")
            length = int(second.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            assert b'"kind":"Namespace"' in await reader.readexactly(length)
        assert not reader.at_eof()
    finally:
        writer.close()


@pytest.mark.asyncio
async def test_watch_is_chunked_json_and_a_departed_client_ends_it(emu: Emulator) -> None:
    reader, writer = await _open(emu)
    try:
        writer.write(
            f"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: sim\r\n"
            f"Authorization: Bearer {emu.admin_token}\r\n\r\n".encode()
        )
        async with asyncio.timeout(5):
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
        assert head.startswith(b"http/1.1 200 ")
        assert b"transfer-encoding: chunked\r\n" in head
        assert b"content-type: application/json\r\n" in head
        assert b"content-length" not in head
        assert emu.store.watcher_count == 1
    finally:
        writer.close()
    # Nothing is queued for this watch: only noticing the closed connection ends it.
    await asyncio.to_thread(wait_for, lambda: emu.store.watcher_count == 0, 5.0, "watch end")
