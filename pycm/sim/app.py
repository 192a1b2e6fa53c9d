"""The emulator's ASGI application.

Middleware order, outermost first: the caller's ``middleware`` (the fault engineer's slot:
pure-ASGI middleware that can delay, fail or drop any request), then Starlette's routing to the
one endpoint, :func:`pycm.sim.handlers.serve`, which runs the ``before_request`` hooks of
:class:`~pycm.sim.handlers.APIContext` (mutable at runtime, unlike the middleware list) before
authentication. ``app.state.api`` is the APIContext.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from pycm.sim.handlers import APIContext, serve

__all__ = ["build_app"]

_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def build_app(api: APIContext, middleware: Sequence[Middleware] = ()) -> Starlette:
    app = Starlette(
        routes=[Route("/{path:path}", serve, methods=_METHODS)],
        middleware=list(middleware),
    )
    app.state.api = api
    return app
