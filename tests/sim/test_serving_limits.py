"""The emulator's connection limits (pycm.util.serving_limits through pycm.sim.server): the
request-head and TLS-handshake timeouts, the head-size bound (431), the connection cap, and a
request whose huge body is left unread closing its connection."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from urllib.parse import urlparse

import pytest
import pytest_asyncio

from pycm.sim.server import Emulator, run_emulator
from pycm.util.serving_limits import LINGER, ServingLimits

TIMEOUT = 0.3
SLACK = 2.0
LIMITS = ServingLimits(
    max_connections=3, tls_handshake_timeout=TIMEOUT, read_header_timeout=TIMEOUT
)


@pytest_asyncio.fixture
async def tls_emu() -> AsyncIterator[Emulator]:
    async with run_emulator(tls=True, kubelet=False, limits=LIMITS) as emu:
        yield emu


async def _open(
    emu: Emulator, *, tls: bool = True
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    url = urlparse(emu.url)
    context = None
    if tls:
        assert emu.ca_pem is not None
        context = ssl.create_default_context(cadata=emu.ca_pem.decode())
    return await asyncio.open_connection(url.hostname, url.port, ssl=context)


async def _until_closed(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """What the server sent until it closed, and how long that took."""
    start = time.monotonic()
    data = b""
    with contextlib.suppress(ConnectionResetError, ssl.SSLError):
        async with asyncio.timeout(10):
            while chunk := await reader.read(65536):
                data += chunk
    return data, time.monotonic() - start


def _close(writer: asyncio.StreamWriter) -> None:
    writer.transport.abort()


@pytest.mark.asyncio
async def test_emulator_partial_request_closed_after_the_head_timeout(tls_emu: Emulator) -> None:
    reader, writer = await _open(tls_emu)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: sim\r\n")
        answer, waited = await _until_closed(reader)
    finally:
        _close(writer)
    assert answer == b""
    assert TIMEOUT * 0.8 <= waited <= TIMEOUT + SLACK


@pytest.mark.asyncio
async def test_emulator_handshake_never_completed_dropped_after_the_timeout(
    tls_emu: Emulator,
) -> None:
    reader, writer = await _open(tls_emu, tls=False)  # TCP only: no ClientHello is sent
    try:
        answer, waited = await _until_closed(reader)
    finally:
        _close(writer)
    assert answer == b""
    assert TIMEOUT * 0.8 <= waited <= TIMEOUT + SLACK


@pytest.mark.asyncio
async def test_emulator_oversized_head_gets_431_and_closes(tls_emu: Emulator) -> None:
    reader, writer = await _open(tls_emu)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: sim\r\nX-Big: " + b"a" * 100 * 1024)
        answer, waited = await _until_closed(reader)
    finally:
        _close(writer)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    assert waited < TIMEOUT  # answered at once, not timed out


@pytest.mark.asyncio
async def test_emulator_huge_unread_body_answered_then_closed_after_the_linger() -> None:
    async with run_emulator(tls=True, kubelet=False) as emu:  # the default 32 s head timeout
        reader, writer = await _open(emu)
        try:
            writer.write(
                b"POST /api/v1/namespaces HTTP/1.1\r\nHost: sim\r\n"
                + f"Authorization: Bearer {emu.admin_token}\r\n".encode()
                + b"Content-Type: application/json\r\n"
                + b"Content-Length: 9223372036854775807\r\n\r\n{"
            )
            async with asyncio.timeout(1):
                head = await reader.readuntil(b"\r\n\r\n")  # at once, not after the body
            _, waited = await _until_closed(reader)
        finally:
            _close(writer)
    assert head.startswith(b"HTTP/1.1 413 "), head[:80]
    assert LINGER * 0.8 <= waited <= LINGER + SLACK


@pytest.mark.asyncio
async def test_emulator_connections_past_the_cap_closed_while_one_within_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ServingLimits(max_connections=2)
    async with run_emulator(tls=False, kubelet=False, limits=limits) as emu:
        kept = [await _open(emu, tls=False) for _ in range(2)]
        try:
            await asyncio.sleep(0.1)  # both admitted
            reader, writer = await _open(emu, tls=False)
            try:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: sim\r\n\r\n")
                answer, _ = await _until_closed(reader)
            finally:
                _close(writer)
            assert answer == b""  # closed without an answer
            assert "refusing connections: 2 open" in caplog.text
            reader, writer = kept[0]
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
            answer, _ = await _until_closed(reader)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
        finally:
            for _, writer in kept:
                _close(writer)
