"""One watch served as newline-delimited JSON: ``{"type": ..., "object": ...}`` per line.

Each event is its own chunk (uvicorn writes it at once). The stream ends when the watcher is
closed (overflow, ``drop_watches``, shutdown), when ``timeoutSeconds`` pass, or when the client
goes away; it always unregisters the watcher. BOOKMARKs (``allowWatchBookmarks``) are sent
every ``bookmark_interval`` seconds, and only when nothing is queued, so a bookmark's
resourceVersion never runs ahead of an undelivered event.
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

__all__ = ["error_stream", "event_line", "watch_stream"]


def event_line(type_: str, obj: Any) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


async def error_stream(status: dict[str, Any]) -> AsyncIterator[bytes]:
    """A watch that fails at once (410 Expired): one ERROR event carrying the Status."""
    yield event_line(ERROR, status)


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
            type_, obj = item
            if out.mode == METADATA:
                yield event_line(type_, partial_metadata(obj, out.api_version))
            elif out.mode == TABLE:
                rv_meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                now_s = store.clock.wall_ns() / 1e9
                yield event_line(
                    type_, table(res.kind, [obj], now_s, include_object, rv_meta, out.api_version)
                )
            else:
                yield event_line(type_, obj)
    finally:
        watcher.stop()
