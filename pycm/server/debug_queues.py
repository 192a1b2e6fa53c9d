"""``GET /debug/pycm/queues``: what each controller's work queue holds, right now.

Per controller of this instance (none while it does not lead): the keys waiting for a worker
and for how long, the keys backing off (their retries, last error and when they come back) and
the keys being processed (for how long, by which worker), with exact counts; each list holds at
most ``limit`` keys (waiting oldest first, backing off soonest due first, processing longest
first). Read live from the queues (:mod:`pycm.workqueue.inspect`), not from events. ::

    {"instance": "...", "controllers": {"deployment": {
        "depth": 1, "waiting_count": 1, "backing_off_count": 1, "processing_count": 1,
        "waiting": [{"key": "default/web", "age_s": 0.2}],
        "backing_off": [{"key": "default/db", "retries": 3, "next_retry_in_s": 0.04,
                         "next_retry_at": "2025-01-01T00:00:00.040Z", "last_error": "..."}],
        "processing": [{"key": "default/api", "for_s": 1.5, "worker": 2,
                        "task": "deployment: worker 2"}]}}}

A priority queue's entry also has ``depth_by_priority`` and a ``priority`` on each waiting and
backing-off key, its waiting keys highest priority first (pycm.workqueue.inspect).

Query parameters: ``controller=NAME`` (only that one; 404 when this instance runs no such
controller), ``limit=N`` (keys per list, 1-10000, default 100). Anything else is a 400. The route
sits behind the same authentication and authorization as ``/debug/pycm/state``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pycm.workqueue.inspect import DEFAULT_LIMIT, InspectableQueue, inspect_queue

__all__ = ["MAX_LIMIT", "QUEUES_PATH", "LastError", "queues_route"]

QUEUES_PATH = "/debug/pycm/queues"
MAX_LIMIT = 10_000
_PARAMS = frozenset({"controller", "limit"})

LastError = Callable[[str, str], str]
"""``last_error(controller, key)``: the key's last failure while it backs off ("" unknown)."""


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _rfc3339(wall_ns: int) -> str:
    at = dt.datetime.fromtimestamp(wall_ns / 1e9, tz=dt.UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def queues_route(
    queues: Callable[[], Mapping[str, InspectableQueue]],
    *,
    instance: str = "",
    last_error: LastError | None = None,
) -> Route:
    """The route; ``queues()`` gives the running controllers' queues by controller name."""

    async def handle(request: Request) -> Response:
        params = request.query_params
        unknown = sorted(set(params.keys()) - _PARAMS)
        if unknown:
            return _error(400, f"unknown query parameters {unknown}; known: controller, limit")
        if len(params.getlist("controller")) > 1 or len(params.getlist("limit")) > 1:
            return _error(400, "controller and limit may be given once")
        limit = DEFAULT_LIMIT
        if "limit" in params:
            try:
                limit = int(params["limit"])
            except ValueError:
                return _error(400, "limit must be an integer")
            if not 1 <= limit <= MAX_LIMIT:
                return _error(400, f"limit must be within 1-{MAX_LIMIT}")
        running = queues()
        names = sorted(running)
        if "controller" in params:
            name = params["controller"]
            if name not in running:
                known = ", ".join(names) if names else "none (this instance is not leading)"
                return _error(404, f"no controller {name!r} runs here; running: {known}")
            names = [name]
        out: dict[str, Any] = {}
        for name in names:
            errors = _errors_of(last_error, name)
            contents = inspect_queue(running[name], limit=limit, last_error=errors).to_dict()
            for entry in contents["backing_off"]:
                entry["next_retry_at"] = _rfc3339(entry.pop("next_retry_at_ns"))
            del contents["queue"]
            out[name] = contents
        body = {"instance": instance, "controllers": out}
        return Response(
            orjson.dumps(body), media_type="application/json", headers={"Cache-Control": "no-store"}
        )

    return Route(QUEUES_PATH, handle, methods=["GET"])


def _errors_of(last_error: LastError | None, name: str) -> Callable[[str], str] | None:
    if last_error is None:
        return None
    return lambda key: last_error(name, key)
