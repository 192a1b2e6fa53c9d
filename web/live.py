"""The dashboard's data routes: ``/api/state``, ``/api/stream``, ``/api/objects``, ``/api/replay``.

Paths are relative to the dashboard prefix (``/dashboard``); ``web/app.py`` mounts them behind
the session check, so there is no authentication here. The wire protocol (message names and
JSON shapes) is the one in the dashboard brief:

- ``/api/state``: the hub's document (:meth:`web.hub.Hub.state`);
- ``/api/stream``: ``text/event-stream``; first ``hello`` (the same document), then one
  ``events`` frame per source with its recent events, then the shared broadcast — ``events``,
  ``snapshot``, ``incident``, ``status``, ``replay`` — as the hub publishes it; a ``: ping``
  comment every :data:`PING_INTERVAL_S` of silence; a viewer that falls behind gets ``lagged``
  and the stream ends (the page reconnects and starts from a fresh ``hello``);
- ``/api/objects?ref=…``: one object's history and chain of causes (web/objects.py);
- ``/api/replay``: ``{"action": "play"|"pause"|"seek"|"speed", "value": number}`` → 204; 404
  when not replaying; 400 for a bad body.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from web.auth import STILL_ALLOWED_KEY
from web.fanout import Viewer, lagged_frame, sse_comment
from web.hub import Hub
from web.objects import objects_route

__all__ = ["PING_INTERVAL_S", "RECHECK_INTERVAL_S", "RECONNECT_MS", "live_routes"]

PING_INTERVAL_S = 15.0
# An open stream asks the session check again this often: a logout (in another tab), an expired
# session or revoked access ends it within this, and the page's reconnect meets the 401.
RECHECK_INTERVAL_S = 5.0
# EventSource waits this long before it reconnects (the default is ~3 s in browsers): a viewer
# cut off for lagging, or a stream ended by a restarting server, is back quickly.
RECONNECT_MS = 1000
_ACTIONS = ("play", "pause", "seek", "speed")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


async def _end_when_denied(
    still_allowed: Callable[[], Awaitable[bool]], viewer: Viewer, interval: float
) -> None:
    """Close ``viewer`` (its stream then ends) once the request's access is denied."""
    while not (viewer.closed or viewer.cut):
        await asyncio.sleep(interval)
        if not await still_allowed():
            viewer.close()
            return


def live_routes(
    hub: Hub,
    *,
    ping_interval: float = PING_INTERVAL_S,
    recheck_interval: float = RECHECK_INTERVAL_S,
) -> list[BaseRoute]:
    """Routes relative to the dashboard prefix: GET /api/state, GET /api/stream,
    GET /api/objects, POST /api/replay. No authentication here: web/app.py puts them behind the
    session, and leaves the check in the scope (``STILL_ALLOWED_KEY``) for the stream to ask
    again every ``recheck_interval`` seconds."""

    async def state(request: Request) -> Response:
        return Response(
            orjson.dumps(hub.state()),
            media_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    async def stream(request: Request) -> Response:
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        if request.method == "HEAD":
            # The headers alone: a stream that never ends would hold the connection (and a
            # viewer) for as long as the client keeps it, with nothing to read.
            return Response(media_type="text/event-stream", headers=headers)
        client = request.client.host if request.client else ""
        still_allowed = request.scope.get("state", {}).get(STILL_ALLOWED_KEY)
        viewer = hub.broadcast.attach(f"dashboard {client}")

        async def frames() -> AsyncIterator[bytes]:
            watch = None
            if still_allowed is not None:
                watch = asyncio.create_task(
                    _end_when_denied(still_allowed, viewer, recheck_interval),
                    name=f"dashboard access {client}",
                )
            try:
                # Attached first, so nothing published while the hello is built is missed (an
                # event in both the backfill and a later frame is dropped by the page by seq).
                yield f"retry: {RECONNECT_MS}\n".encode() + hub.hello_frame()
                for backfill in hub.backfill_frames():
                    yield backfill
                while True:
                    frame = viewer.take()
                    if frame is not None:
                        yield frame
                        continue
                    if viewer.cut:
                        yield lagged_frame(viewer.dropped)
                        return
                    if viewer.closed:
                        return
                    if not await viewer.wait(ping_interval):
                        yield sse_comment("ping")
            finally:
                hub.broadcast.detach(viewer)
                if watch is not None:
                    watch.cancel()

        return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

    async def replay(request: Request) -> Response:
        control = hub.replay
        if control is None:
            return _error(404, "not replaying a recording")
        try:
            body: Any = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _error(400, "the body must be JSON")
        if not isinstance(body, dict) or body.get("action") not in _ACTIONS:
            return _error(400, f"action must be one of {', '.join(_ACTIONS)}")
        action = body["action"]
        value = body.get("value", 0)
        if action in ("seek", "speed"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                return _error(400, f"{action} needs a numeric value")
            if not math.isfinite(value) or (action == "speed" and value <= 0):
                return _error(400, f"bad {action} value {value!r}")
        if action == "play":
            control.play()
        elif action == "pause":
            control.pause()
        elif action == "seek":
            control.seek(float(value))
        else:
            control.set_speed(float(value))
        return Response(status_code=204)

    return [
        Route("/api/state", state, methods=["GET"]),
        Route("/api/stream", stream, methods=["GET"]),
        Route("/api/replay", replay, methods=["POST"]),
        objects_route(hub),
    ]
