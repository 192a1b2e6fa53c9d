"""One watch served as newline-delimited JSON: ``{"type": ..., "object": ...}`` per line.

Every event already queued when one is written goes into the same chunk (up to
``JOIN_BYTES``), and the chunk is sent once the queue is empty, as kube-apiserver does: its
``WatchServer.HandleHTTP`` (k8s.io/apiserver/pkg/endpoints/handlers/watch.go) encodes each event
into the response writer and calls ``flusher.Flush()`` only ``if len(ch) == 0``, i.e. when no
further event is waiting. Chunk boundaries carry no meaning in HTTP/1.1 (a transfer coding that
any intermediary may re-chunk), so clients see the same lines either way; what changes is that a
replayed backlog reaches them in a few large reads instead of one small chunk per event. The cap
keeps backpressure: each chunk waits for the transport to drain before the next is built, and
nothing beyond one chunk is encoded ahead of a slow client.

The stream ends when the watcher is closed (overflow, ``drop_watches``, shutdown), when
``timeoutSeconds`` pass, or when the client goes away; it always unregisters the watcher.
BOOKMARKs (``allowWatchBookmarks``) are sent every ``bookmark_interval`` seconds, and only when
nothing is queued, so a bookmark's resourceVersion never runs ahead of an undelivered event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from pycm.sim.negotiation import METADATA, TABLE, Output
from pycm.sim.resources import Resource
from pycm.sim.store import Store
from pycm.sim.tables import partial_metadata, table
from pycm.sim.watch import BOOKMARK, ERROR, Watcher

__all__ = ["JOIN_BYTES", "error_stream", "event_line", "watch_stream"]

JOIN_BYTES = 256 * 1024
"""A chunk takes further queued events until it holds at least this many bytes (about 45 pods
of 5.7 KB): large enough that a client reads a backlog in 64 KiB socket reads, small enough
that a slow client holds back at most one chunk of encoded events."""


def event_line(type_: str, obj: Any) -> bytes:
    # The newline appended by orjson itself: no second copy of a pod-sized line.
    return orjson.dumps({"type": type_, "object": obj}, option=orjson.OPT_APPEND_NEWLINE)


async def error_stream(status: dict[str, Any]) -> AsyncIterator[bytes]:
    """A watch that fails at once (410 Expired): one ERROR event carrying the Status."""
    yield event_line(ERROR, status)


def _encoder(
    res: Resource, store: Store, out: Output, include_object: str
) -> Callable[[tuple[str, Any]], bytes]:
    """The line of one queued ``(type, object)`` in the negotiated output."""
    if out.mode == METADATA:
        return lambda item: event_line(item[0], partial_metadata(item[1], out.api_version))
    if out.mode == TABLE:

        def as_table(item: tuple[str, Any]) -> bytes:
            type_, obj = item
            rv_meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            now_s = store.clock.wall_ns() / 1e9
            rows = table(res.kind, [obj], now_s, include_object, rv_meta, out.api_version)
            return event_line(type_, rows)

        return as_table
    return lambda item: event_line(item[0], item[1])


async def watch_stream(
    watcher: Watcher,
    res: Resource,
    store: Store,
    out: Output,
    *,
    include_object: str = "Metadata",
    timeout_seconds: int | None = None,
    bookmark_interval: float | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> AsyncIterator[bytes]:
    encode = _encoder(res, store, out, include_object)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds if timeout_seconds else None
    next_bookmark = loop.time() + bookmark_interval if bookmark_interval else None
    try:
        while not stopping():
            now = loop.time()
            if deadline is not None and now >= deadline:
                return
            waits = [t - now for t in (deadline, next_bookmark) if t is not None]
            item = await watcher.next(max(0.0, min(waits)) if waits else None)
            if item is None:
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
                        yield event_line(BOOKMARK, mark)
                continue
            chunk = encode(item)
            if watcher.pending:  # more already queued: join them (see the module docstring)
                lines = [chunk]
                size = len(chunk)
                while size < JOIN_BYTES and (more := watcher.pop()) is not None:
                    line = encode(more)
                    lines.append(line)
                    size += len(line)
                chunk = b"".join(lines)
            yield chunk
    finally:
        watcher.stop()
