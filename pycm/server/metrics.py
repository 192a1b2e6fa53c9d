"""/metrics: the Prometheus text exposition (format 0.0.4) of an injected CollectorRegistry."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["CONTENT_TYPE", "metrics_route"]

# What KCM's legacy registry serves to a scraper that does not negotiate (text format 0.0.4).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


def metrics_route(registry: CollectorRegistry = REGISTRY, path: str = "/metrics") -> Route:
    """The route serving ``registry``. A process that serves it drops prometheus_client's
    ``*_created`` series (a gauge more for every counter, histogram and summary child, in the
    0.0.4 text format): KCM's registry has none, and a scraper would store them all. (The
    switch is the library's, for the whole process; it is read when a metric is collected.)"""
    disable_created_metrics()  # type: ignore[no-untyped-call]  # (unannotated in the library)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE)

    return Route(path, metrics, methods=["GET"])
