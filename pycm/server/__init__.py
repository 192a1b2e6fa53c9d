"""Serving: secure (HTTPS, delegated authn/authz) and insecure servers, the pure-ASGI handler
chain, health checks, /metrics and /configz.

Public surface:

- runnables: :class:`SecureServer` (with :class:`SecureServingConfig`), :class:`InsecureServer`
  — ``await start() -> (host, port)``, ``await stop()``;
- the mux: :func:`build_routes` over a :class:`HealthRegistry` (``add(name, check)`` at any
  time), a prometheus ``CollectorRegistry``, a configz mapping and extra ``routes``;
- the chain: :func:`build_handler_chain` / :func:`build_insecure_handler_chain` (order in
  :mod:`pycm.server.chain`);
- who and may-they: :class:`UserInfo`; :class:`TokenReviewer` / :class:`DelegatingTokenReviewer`
  (TokenReview), :class:`Authorizer` / :class:`DelegatingAuthorizer` (SubjectAccessReview),
  both over a :class:`ReviewPoster` (the one method of an API client they use) —
  :class:`ClientReviewPoster` is it on a ``pycm.kube.Client``, :func:`delegating_pair` builds both;
  the TokenReviews unknown tokens cause are bounded per client by a :class:`ReviewRateLimiter`;
  :class:`DelegatingAuthenticator` (client cert, then bearer token),
  :class:`AnonymousAuthenticator`, :class:`AlwaysAllowAuthorizer`;
- a mounted dashboard: :class:`DashboardDoor` (the reviews lent to it) and
  :data:`DASHBOARD_PATHS` (always allowed: the dashboard is its own door); the dashboard's
  session cookie is a credential when :class:`DelegatingAuthenticator` gets ``session_users``.

Exceptions::

    Exception
     ├── AuthenticationError   credentials presented and invalid → 401
     ├── TokenReviewError      a TokenReview could not be had (or was rate-limited) → 401
     └── AuthorizationError    a SubjectAccessReview could not be had → 500

Test doubles: :class:`AnonymousAuthenticator` and :class:`AlwaysAllowAuthorizer`; any object
with ``async review(token)`` / ``async authorize(attrs)`` fits the protocols.
"""

from pycm.server.authentication import (
    AnonymousAuthenticator,
    AuthenticationError,
    DelegatingAuthenticator,
    RequestAuthenticator,
    get_user,
)
from pycm.server.chain import (
    DEFAULT_ALWAYS_ALLOW_GROUPS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    LAYERS,
    build_handler_chain,
    build_insecure_handler_chain,
)
from pycm.server.dashboard_door import DASHBOARD_PATHS, DashboardDoor
from pycm.server.healthz import HealthCheckFn, HealthRegistry
from pycm.server.kube_poster import ClientReviewPoster, delegating_pair
from pycm.server.request_info import RequestInfo, get_request_info
from pycm.server.review_limiter import ReviewRateLimiter
from pycm.server.routes import build_routes
from pycm.server.serving import InsecureServer, SecureServer, SecureServingConfig
from pycm.server.subjectaccessreview import (
    AlwaysAllowAuthorizer,
    AuthorizationError,
    Authorizer,
    Decision,
    DelegatingAuthorizer,
    RequestAttributes,
)
from pycm.server.tokenreview import (
    DelegatingTokenReviewer,
    ReviewPoster,
    TokenReviewer,
    TokenReviewError,
)
from pycm.server.user import ANONYMOUS, UserInfo

__all__ = [
    "ANONYMOUS",
    "DASHBOARD_PATHS",
    "DEFAULT_ALWAYS_ALLOW_GROUPS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "LAYERS",
    "AlwaysAllowAuthorizer",
    "AnonymousAuthenticator",
    "AuthenticationError",
    "AuthorizationError",
    "Authorizer",
    "ClientReviewPoster",
    "DashboardDoor",
    "Decision",
    "DelegatingAuthenticator",
    "DelegatingAuthorizer",
    "DelegatingTokenReviewer",
    "HealthCheckFn",
    "HealthRegistry",
    "InsecureServer",
    "RequestAttributes",
    "RequestAuthenticator",
    "RequestInfo",
    "ReviewPoster",
    "ReviewRateLimiter",
    "SecureServer",
    "SecureServingConfig",
    "TokenReviewError",
    "TokenReviewer",
    "UserInfo",
    "build_handler_chain",
    "build_insecure_handler_chain",
    "build_routes",
    "delegating_pair",
    "get_request_info",
    "get_user",
]
