"""The handler chain: pure ASGI middleware, one per module, wrapped in KCM's order.

Outermost first (controller-manager ``app/serve.go`` ``BuildHandlerChain``)::

    panic_recovery    500 for any exception, server keeps going        panic.py
    request_logging   method, path, status, duration, user             logging.py
    request_body_limit  413 past a route's body bound, before authn    body_limit.py
    cache_control     "no-cache, private" unless the handler set one   cache_control.py
    request_info      verb / path / resource-or-not into scope state   request_info.py
    authentication    client cert, bearer token, else anonymous; 401   authentication.py
    authorization     always-allow paths/groups, else the Authorizer   authorization.py
    (the routes)

Authentication comes before authorization so the latter decides on a user; request info before
both so neither re-parses the path; logging outside them so 401/403 answers are logged with
their status; the body bound right inside logging, so an oversized body is refused (and logged)
before a credential is reviewed for it; panic recovery outermost so nothing escapes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from starlette.types import ASGIApp

from pycm.server.authentication import (
    AnonymousAuthenticator,
    AuthenticationMiddleware,
    RequestAuthenticator,
)
from pycm.server.authorization import AuthorizationMiddleware
from pycm.server.body_limit import DEFAULT_MAX_REQUEST_BODY, RequestBodyLimitMiddleware
from pycm.server.cache_control import CacheControlMiddleware
from pycm.server.logging import RequestLoggingMiddleware
from pycm.server.panic import PanicRecoveryMiddleware
from pycm.server.request_info import RequestInfoMiddleware
from pycm.server.subjectaccessreview import AlwaysAllowAuthorizer, Authorizer
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import HandlerChainBuilt
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_ALWAYS_ALLOW_GROUPS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "LAYERS",
    "build_handler_chain",
    "build_insecure_handler_chain",
]

# KCM's defaults for --authorization-always-allow-paths and the always-allowed groups.
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS = ("system:masters",)

LAYERS = (
    PanicRecoveryMiddleware.NAME,
    RequestLoggingMiddleware.NAME,
    RequestBodyLimitMiddleware.NAME,
    CacheControlMiddleware.NAME,
    RequestInfoMiddleware.NAME,
    AuthenticationMiddleware.NAME,
    AuthorizationMiddleware.NAME,
)


def build_handler_chain(
    app: ASGIApp,
    *,
    authenticator: RequestAuthenticator,
    authorizer: Authorizer,
    always_allow_paths: Iterable[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
    always_allow_groups: Iterable[str] = DEFAULT_ALWAYS_ALLOW_GROUPS,
    bus: Bus | None = None,
    secure: bool = True,
    logger: logging.Logger | None = None,
    clock: Clock = REAL_CLOCK,
    body_limits: Mapping[str, int] | None = None,
) -> ASGIApp:
    """Wrap ``app`` innermost first and emit HandlerChainBuilt listing the layers outermost
    first. ``body_limits``: a route's (exact path's) body bound in bytes, where it differs from
    DEFAULT_MAX_REQUEST_BODY."""
    chain: ASGIApp = AuthorizationMiddleware(
        app,
        authorizer=authorizer,
        always_allow_paths=always_allow_paths,
        always_allow_groups=always_allow_groups,
    )
    chain = AuthenticationMiddleware(chain, authenticator=authenticator)
    chain = RequestInfoMiddleware(chain)
    chain = CacheControlMiddleware(chain)
    chain = RequestBodyLimitMiddleware(chain, limits=body_limits, default=DEFAULT_MAX_REQUEST_BODY)
    chain = (
        RequestLoggingMiddleware(chain, clock=clock)
        if logger is None
        else RequestLoggingMiddleware(chain, logger=logger, clock=clock)
    )
    chain = PanicRecoveryMiddleware(chain)
    (bus or default_bus()).point(
        HandlerChainBuilt(layers=",".join(LAYERS), count=len(LAYERS), secure=secure)
    )
    return chain


def build_insecure_handler_chain(
    app: ASGIApp,
    *,
    bus: Bus | None = None,
    clock: Clock = REAL_CLOCK,
    body_limits: Mapping[str, int] | None = None,
) -> ASGIApp:
    """The same chain with an always-anonymous authenticator and an always-allow authorizer."""
    return build_handler_chain(
        app,
        authenticator=AnonymousAuthenticator(),
        authorizer=AlwaysAllowAuthorizer(),
        always_allow_paths=(),
        always_allow_groups=(),
        bus=bus,
        secure=False,
        clock=clock,
        body_limits=body_limits,
    )
