"""Helpers for the dashboard's data-path tests: events, SSE frames, a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import orjson
import uvicorn

from pycm.trace import kinds as k
from pycm.trace.events import Event

S = 1_000_000_000
T0 = 1_790_000_000 * S


def added(seq: int, instance: str = "r1", *, ts: int | None = None) -> Event:
    """A queue.add of key ``k<seq>`` (cheap, distinct, easy to check in order)."""
    return k.ItemAdded(
        queue="deployment",
        key=f"ns/k{seq}",
        depth=seq % 7,
        seq=seq,
        ts=T0 + seq * 1000 if ts is None else ts,
        instance=instance,
    )


def parse_frames(data: bytes) -> list[tuple[str, str, Any]]:
    """``(event, id, data JSON)`` of every complete SSE message in ``data`` (comments and
    retry-only blocks skipped)."""
    out = []
    for block in data.split(b"\n\n"):
        event, id_, payload = "message", "", None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                event = line[7:].decode()
            elif line.startswith(b"id: "):
                id_ = line[4:].decode()
            elif line.startswith(b"data: "):
                payload = orjson.loads(line[6:])
        if payload is not None:
            out.append((event, id_, payload))
    return out


@contextlib.asynccontextmanager
async def serving(app: Any, *, send_buffer: int | None = None) -> AsyncIterator[str]:
    """``app`` served by uvicorn on a free 127.0.0.1 port; yields its base URL. ``send_buffer``
    fixes the connections' kernel send buffer (accepted sockets inherit it from the listening
    one), so a client that stops reading pushes back within kilobytes, not megabytes."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="test uvicorn")
    try:
        for _ in range(400):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()
