"""One watch served as newline-delimited JSON: ``{"type": ..., "object": ...}`` per line.

Each event is its own chunk (uvicorn writes it at once), as kube-apiserver's Go net/http writes
about one HTTP/1.1 chunk per event. Every event already queued when the stream wakes is sent
before it waits again (one wait per batch, each event still its own chunk). A typed watch
serves the encoding the store made at commit (``StoreEvent.encoded``) inside the same envelope
``orjson`` would write; metadata-only and Table watches encode what they render. The stream
ends when the watcher is closed (overflow, ``drop_watches``, shutdown), when
``timeoutSeconds`` pass, or when the client goes away; it always unregisters the watcher.
BOOKMARKs (``allowWatchBookmarks``) are sent every ``bookmark_interval`` seconds, and only when
nothing is queued, so a bookmark's resourceVersion never runs ahead of an undelivered event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.responses import StreamingResponse
from starlette.types import Send

from pycm.sim.negotiation import METADATA, TABLE, Output
from pycm.sim.resources import Resource
from pycm.sim.store import Store
from pycm.sim.tables import partial_metadata, table
from pycm.sim.watch import ADDED, BOOKMARK, DELETED, ERROR, MODIFIED, Entry, Watcher

__all__ = ["WatchResponse", "encoded_line", "error_stream", "event_line", "send_watch"]


def event_line(type_: str, obj: Any) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


# What orjson writes before and after the object of {"type": t, "object": obj} (compact, keys
# in insertion order), so an object's own encoding can be spliced in between.
_ENVELOPES = {t: b'{"type":"' + t.encode() + b'","object":' for t in (ADDED, MODIFIED, DELETED)}
_END = b"}\n"


def encoded_line(type_: str, encoded: bytes) -> bytes:
    """``event_line(type_, obj)`` from ``encoded = orjson.dumps(obj)``, without encoding again."""
    envelope = _ENVELOPES.get(type_)
    if envelope is None:
        envelope = b'{"type":' + orjson.dumps(type_) + b',"object":'
    return b"".join((envelope, encoded, _END))


async def error_stream(status: dict[str, Any]) -> AsyncIterator[bytes]:
    """A watch that fails at once (410 Expired): one ERROR event carrying the Status."""
    yield event_line(ERROR, status)


class WatchResponse(StreamingResponse):
    """A watch's response: Starlette's streaming response (headers, the end of the body, and
    ending the stream when the client disconnects), whose body is sent by :func:`send_watch`
    straight to ``send``, one ASGI body message (one chunk) per event, with no iterator between
    the watcher's queue and the server."""

    def __init__(self, watcher: Watcher, run: Callable[[Send], Awaitable[None]]) -> None:
        super().__init__((), media_type="application/json")  # the body comes from ``run``
        self._watcher = watcher
        self._run = run

    async def stream_response(self, send: Send) -> None:
        try:
            start = {"type": "http.response.start", "status": self.status_code}
            await send({**start, "headers": self.raw_headers})
            await self._run(send)
        finally:
            # Unregistered even when cancelled (client gone) before ``run`` began.
            self._watcher.stop()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def send_watch(
    send: Send,
    watcher: Watcher,
    res: Resource,
    store: Store,
    out: Output,
    *,
    include_object: str = "Metadata",
    timeout_seconds: float | None = None,
    bookmark_interval: float | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    """Send the watch's events as ASGI body messages until it ends (see the module's doc)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds if timeout_seconds else None
    next_bookmark = loop.time() + bookmark_interval if bookmark_interval else None
    render = _renderer(res, store, out, include_object)
    pop = watcher.pop_entry
    try:
        while not stopping():
            now = loop.time()
            if deadline is not None and now >= deadline:
                return
            waits = [t - now for t in (deadline, next_bookmark) if t is not None]
            if await watcher.wait(max(0.0, min(waits)) if waits else None):
                # Everything queued now, one chunk each; a close empties the queue, so the
                # drain ends with it. Stop and deadline are checked between events as before.
                while (entry := pop()) is not None:
                    body = render(entry)
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    if stopping() or (deadline is not None and loop.time() >= deadline):
                        return
                continue
            if watcher.closed:
                return
            now = loop.time()
            if next_bookmark is not None and bookmark_interval and now >= next_bookmark:
                next_bookmark = now + bookmark_interval
                if watcher.pending == 0:
                    mark = {
                        "kind": res.kind,
                        "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(store.resource_version)},
                    }
                    line = event_line(BOOKMARK, mark)
                    await send({"type": "http.response.body", "body": line, "more_body": True})
    finally:
        watcher.stop()


def _renderer(
    res: Resource, store: Store, out: Output, include_object: str
) -> Callable[[Entry], bytes]:
    """How this watch turns a queued entry into its line."""
    if out.mode == METADATA:
        return lambda e: event_line(e[0], partial_metadata(e[1], out.api_version))
    if out.mode == TABLE:

        def table_line(entry: Entry) -> bytes:
            type_, obj, _ = entry
            rv_meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            now_s = store.clock.wall_ns() / 1e9
            rows = table(
                res.strategy.printer, [obj], now_s, include_object, rv_meta, out.api_version
            )
            return event_line(type_, rows)

        return table_line

    def typed_line(entry: Entry) -> bytes:
        type_, obj, encoded = entry
        return event_line(type_, obj) if encoded is None else encoded_line(type_, encoded)

    return typed_line
