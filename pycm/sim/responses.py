"""The REST handlers' JSON responses: a body, its Warning headers, an error's v1 Status."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from pycm.sim import errors
from pycm.sim.pruning import warning_headers

__all__ = ["error_response", "json_response", "with_warnings"]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def with_warnings(response: Response, pruned: list[str]) -> Response:
    """``response`` with a Warning header for each unknown field dropped from the body."""
    for name, value in warning_headers(pruned):
        response.headers.append(name, value)
    return response


def error_response(err: errors.APIError) -> Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.status(), err.code, headers)
