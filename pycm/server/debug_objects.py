"""``GET /debug/pycm/objects/<resource>/<namespace>/<name>``: one object's history and why.

The body is a :class:`~pycm.trace.why.ObjectReport` (docs/state.md, "ObjectReport"): the last
steps that touched the object in this manager's state (watch events in, reconciles, writes out,
events recorded; :mod:`pycm.trace.state.objects`) and the chain of causes of its newest step
(:mod:`pycm.trace.why`). ``resource/name`` names a cluster-scoped object. A malformed reference
is a 400, a resource that is neither built in nor seen in the state a 404 (one-line JSON
``{"error": ...}``); an object no step touched is a 200 with no steps. No query parameters
(any is a 400). The route sits behind the same authentication and authorization as
``/debug/pycm/state``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pycm.trace.objref import RefError, UnknownResource, parse_ref
from pycm.trace.why import object_report

if TYPE_CHECKING:
    from pycm.trace.state import State

__all__ = ["OBJECTS_PATH", "objects_route"]

OBJECTS_PATH = "/debug/pycm/objects"


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def objects_route(state: Callable[[], State | None], *, instance: str = "") -> Route:
    """The route; ``state()`` is the manager's reducer state (None: no reducer)."""

    async def handle(request: Request) -> Response:
        current = state()
        if current is None:
            return _error(404, "no state reducer in this process")
        if not current.histories:
            return _error(404, "object histories are off here (pycm run --object-histories=false)")
        if request.query_params:
            return _error(400, "no query parameters are accepted")
        try:
            ref = parse_ref(request.path_params["ref"], known=current.objects.resources())
        except UnknownResource as exc:
            return _error(404, str(exc))
        except RefError as exc:
            return _error(400, str(exc))
        report = object_report(current, ref, source=instance)
        return Response(orjson.dumps(report), media_type="application/json")

    return Route(OBJECTS_PATH + "/{ref:path}", handle, methods=["GET"])
