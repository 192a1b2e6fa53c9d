"""The serving mux: health endpoints, /metrics, /configz, and whatever routes are added.

``build_routes`` returns a bare Starlette :class:`~starlette.routing.Router` (no Starlette
error middleware: the handler chain's panic layer owns errors). ``routes`` is the extension
point for later endpoints (``/debug/pycm/events``, ``/debug/pycm/state``); they are matched
after the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from prometheus_client import REGISTRY, CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, Router

from pycm.server.healthz import HealthRegistry
from pycm.server.metrics import metrics_route
from pycm.util.redact import redact_mapping

__all__ = ["build_routes", "configz_route"]

Configz = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


def configz_route(configz: Configz, path: str = "/configz") -> Route:
    """``/configz``: the JSON of a mapping (read at each request, so later entries show), or of
    what a callable returns. KCM's shape is ``{"<component>": {...config...}}``. Every string
    in it passes the one redaction rule (:func:`pycm.util.redact.redact_mapping`, by the name of
    its key) whatever the caller put there, so a secret never leaves through /configz."""

    async def handle(request: Request) -> Response:
        value = configz() if callable(configz) else configz
        body = orjson.dumps(redact_mapping(dict(value)), default=str, option=orjson.OPT_SORT_KEYS)
        return Response(body, media_type="application/json")

    return Route(path, handle, methods=["GET"])


def build_routes(
    *,
    health: HealthRegistry,
    metrics_registry: CollectorRegistry | None = REGISTRY,
    configz: Configz | None = None,
    routes: Sequence[BaseRoute] = (),
) -> Router:
    """The mux: /healthz, /livez, /readyz (+ per-check paths), /metrics when a registry is
    given, /configz when a config is given, then ``routes``."""
    mux: list[BaseRoute] = list(health.routes())
    if metrics_registry is not None:
        mux.append(metrics_route(metrics_registry))
    if configz is not None:
        mux.append(configz_route(configz))
    mux.extend(routes)
    return Router(routes=mux)
