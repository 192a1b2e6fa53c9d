"""The event-stream routes: ``GET /debug/pycm/events`` (SSE) and ``GET /debug/pycm/state``.

``/debug/pycm/events`` streams the bus as Server-Sent Events, one event per trace event:
``event: trace``, ``id: <seq>``, ``data: <the codec's JSON line>`` — the same bytes as a
``--trace-file`` line. Query parameters:

- ``since=<seq>`` (or the standard ``Last-Event-ID`` header): resume after a reconnect — the
  ring backfills what it still holds; what it no longer holds arrives as a ``bus.lagged``
  event with the count;
- ``kinds=a,b`` — only these kinds (exact wire names, or a ``prefix.*``);
- ``limit=N`` — end the stream after N trace events (tests, scripted captures);
- ``snapshot=0`` — no snapshots;
- ``objects=deployments/default/web,...`` — each snapshot carries these objects' histories
  (its ``objects``; at most 16, ``resource/namespace/name`` each; a bad one is a 400).

Every ``snapshot_interval`` seconds (and first, before any trace event) an ``event: snapshot``
carries the reducer's state, so a new viewer is complete at once. Each viewer is an ordinary
bounded bus subscriber: a slow browser lags and is told; it never slows the manager.
These routes sit behind the same authentication and authorization as /metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import orjson
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pycm.trace.bus import Bus, Subscription
from pycm.trace.codec import encode
from pycm.trace.objref import ObjectRef, RefError, parse_ref
from pycm.trace.state import Snapshot as StateSnapshot
from pycm.trace.state.object_steps import ObjectHistorySnapshot

__all__ = ["EVENTS_PATH", "STATE_PATH", "OpenStreams", "debug_routes"]

EVENTS_PATH = "/debug/pycm/events"
STATE_PATH = "/debug/pycm/state"
SUBSCRIBER_QUEUE = 8192
BATCH = 512
PING_INTERVAL = 15.0  # an idle stream sends a comment so proxies keep it open

Snapshot = Callable[[], StateSnapshot]  # the typed, versioned state (docs/state.md)
History = Callable[[ObjectRef], ObjectHistorySnapshot | None]  # an object's, if it has one
MAX_OBJECTS = 16  # objects= per stream


def _bad_request(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=400)


def _object_refs(text: str) -> list[ObjectRef]:
    refs = [parse_ref(part) for part in text.split(",") if part.strip()]
    if len(refs) > MAX_OBJECTS:
        raise RefError(f"at most {MAX_OBJECTS} objects")
    return refs


def _histories(history: History, refs: list[ObjectRef]) -> dict[str, ObjectHistorySnapshot]:
    out: dict[str, ObjectHistorySnapshot] = {}
    for ref in refs:
        found = history(ref)
        if found is not None:
            out[ref.path] = found
    return out


def _kind_filter(text: str) -> Callable[[str], bool] | None:
    names = [k.strip() for k in text.split(",") if k.strip()]
    if not names:
        return None
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))

    def accept(kind: str) -> bool:
        return kind in exact or (bool(prefixes) and kind.startswith(prefixes))

    return accept


class OpenStreams:
    """The event streams being served, so a stopping manager can end them before it stops
    its server (an open stream would otherwise hold the graceful shutdown to its timeout)."""

    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def add(self, subscription: Subscription) -> None:
        self._subscriptions.add(subscription)

    def discard(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def close_all(self) -> None:
        for subscription in list(self._subscriptions):
            subscription.close()

    def __len__(self) -> int:
        return len(self._subscriptions)


def debug_routes(
    bus: Bus,
    snapshot: Snapshot | None = None,
    *,
    snapshot_interval: float = 5.0,
    streams: OpenStreams | None = None,
    history: History | None = None,
) -> list[Route]:
    async def state(request: Request) -> Response:
        if snapshot is None:
            return JSONResponse({"error": "no state reducer in this process"}, status_code=404)
        return Response(orjson.dumps(snapshot()), media_type="application/json")

    async def events(request: Request) -> Response:
        params = request.query_params
        since_text = params.get("since") or request.headers.get("last-event-id")
        try:
            since = int(since_text) if since_text else None
            limit = int(params["limit"]) if "limit" in params else None
        except ValueError:
            return _bad_request("since and limit must be integers")
        if (since is not None and since < 0) or (limit is not None and limit < 1):
            return _bad_request("since must be >= 0 and limit >= 1")
        accept = _kind_filter(params.get("kinds", ""))
        try:
            refs = _object_refs(params.get("objects", ""))
        except RefError as exc:
            return _bad_request(f"objects: {exc}")
        send_snapshots = snapshot is not None and params.get("snapshot", "1") not in ("0", "false")
        subscription = bus.subscribe(
            name=f"sse {request.client.host if request.client else ''}",
            maxsize=SUBSCRIBER_QUEUE,
            since=since,
        )

        if streams is not None:
            streams.add(subscription)

        async def stream() -> AsyncIterator[ServerSentEvent]:
            sent = 0
            loop = asyncio.get_running_loop()
            next_snapshot = loop.time()
            try:
                while True:
                    if send_snapshots and loop.time() >= next_snapshot:
                        assert snapshot is not None
                        snap = snapshot()
                        if refs and history is not None:
                            snap["objects"] = _histories(history, refs)
                        yield ServerSentEvent(data=orjson.dumps(snap).decode(), event="snapshot")
                        next_snapshot = loop.time() + snapshot_interval
                    for event in subscription.drain(BATCH):
                        if (
                            accept is not None
                            and not accept(event.KIND)
                            and event.KIND != "bus.lagged"
                        ):
                            continue
                        yield ServerSentEvent(
                            data=encode(event).decode(), event="trace", id=str(event.seq or "")
                        )
                        sent += 1
                        if limit is not None and sent >= limit:
                            return
                    if subscription.closed:
                        return  # the manager is stopping
                    wait = PING_INTERVAL
                    if send_snapshots:
                        wait = min(wait, max(0.0, next_snapshot - loop.time()))
                    try:
                        await asyncio.wait_for(subscription.wait(), timeout=wait)
                    except TimeoutError:
                        if not subscription.pending:
                            yield ServerSentEvent(comment="ping")
            finally:
                subscription.close()
                if streams is not None:
                    streams.discard(subscription)

        async def body() -> AsyncIterator[bytes]:
            async for message in stream():
                yield message.encode()

        # sse-starlette frames the messages; the transport is Starlette's StreamingResponse
        # (which ends the stream when the client goes away). EventSourceResponse would start a
        # process-wide shutdown-watcher task that no one owns and that polls forever.
        return StreamingResponse(
            body(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return [Route(EVENTS_PATH, events, methods=["GET"]), Route(STATE_PATH, state, methods=["GET"])]
