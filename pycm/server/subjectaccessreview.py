"""May this user do this: the Authorizer protocol, the request attributes it decides on, and
the delegating, caching implementation (k8s.io/apiserver ``authorization/webhook``).

A controller manager asks the API server with an ``authorization.k8s.io/v1``
SubjectAccessReview. Allowed answers are cached for ``allowed_ttl`` and denied ones for
``denied_ttl`` (KCM's defaults: 10 s and 10 s); a failed call is not cached and raises
:class:`AuthorizationError` — the request then gets a 500, as in kube's authorization filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pycm.server.tokenreview import ReviewPoster
from pycm.server.ttl_cache import TTLCache
from pycm.server.user import UserInfo
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_AUTHZ_ALLOWED_TTL",
    "DEFAULT_AUTHZ_DENIED_TTL",
    "SUBJECTACCESSREVIEWS_PATH",
    "AlwaysAllowAuthorizer",
    "AuthorizationError",
    "Authorizer",
    "Decision",
    "DelegatingAuthorizer",
    "RequestAttributes",
]

SUBJECTACCESSREVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
DEFAULT_AUTHZ_ALLOWED_TTL = 10.0  # KCM --authorization-webhook-cache-authorized-ttl
DEFAULT_AUTHZ_DENIED_TTL = 10.0  # KCM --authorization-webhook-cache-unauthorized-ttl


class AuthorizationError(Exception):
    """No decision could be had (the API call failed or answered nonsense)."""


@dataclass(frozen=True, slots=True)
class RequestAttributes:
    """What a request does, by whom (apiserver ``authorizer.Attributes``). For a non-resource
    request only ``user``, ``verb`` and ``path`` matter."""

    user: UserInfo
    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    """Decide on one request; raise :class:`AuthorizationError` when no decision can be had."""

    async def authorize(self, attrs: RequestAttributes) -> Decision: ...


class AlwaysAllowAuthorizer:
    """Allows everything (insecure serving, tests)."""

    async def authorize(self, attrs: RequestAttributes) -> Decision:
        return Decision(True, "")


class DelegatingAuthorizer:
    """An :class:`Authorizer` that asks the API server with a SubjectAccessReview, cached."""

    def __init__(
        self,
        poster: ReviewPoster,
        *,
        allowed_ttl: float = DEFAULT_AUTHZ_ALLOWED_TTL,
        denied_ttl: float = DEFAULT_AUTHZ_DENIED_TTL,
        maxsize: int = 8192,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._poster = poster
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._cache: TTLCache[tuple[Any, ...], Decision] = TTLCache(maxsize=maxsize, clock=clock)

    async def authorize(self, attrs: RequestAttributes) -> Decision:
        key = _cache_key(attrs)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            answer = await self._poster.create(SUBJECTACCESSREVIEWS_PATH, review_body(attrs))
        except Exception as exc:  # any transport or API error: no decision, not cached
            raise AuthorizationError(f"SubjectAccessReview failed: {exc}") from exc
        status = answer.get("status")
        if not isinstance(status, dict):
            raise AuthorizationError("SubjectAccessReview answer has no status")
        allowed = bool(status.get("allowed"))
        if allowed and status.get("denied"):
            raise AuthorizationError("SubjectAccessReview answered both allowed and denied")
        # As kube's webhook authorizer: not allowed (denied or no opinion) is a denial here,
        # whatever evaluationError says.
        decision = Decision(allowed, str(status.get("reason") or ""))
        self._cache.put(key, decision, self._allowed_ttl if allowed else self._denied_ttl)
        return decision


def review_body(attrs: RequestAttributes) -> dict[str, Any]:
    """The SubjectAccessReview a request's attributes become."""
    user = attrs.user
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if attrs.resource_request:
        spec["resourceAttributes"] = {
            "namespace": attrs.namespace,
            "verb": attrs.verb,
            "group": attrs.api_group,
            "version": attrs.api_version,
            "resource": attrs.resource,
            "subresource": attrs.subresource,
            "name": attrs.name,
        }
    else:
        spec["nonResourceAttributes"] = {"path": attrs.path, "verb": attrs.verb}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def _cache_key(attrs: RequestAttributes) -> tuple[Any, ...]:
    user = attrs.user
    extra = tuple(sorted(user.extra.items()))
    return (
        user.name,
        user.uid,
        user.groups,
        extra,
        attrs.verb,
        attrs.path if not attrs.resource_request else "",
        attrs.resource_request,
        attrs.api_group,
        attrs.api_version,
        attrs.resource,
        attrs.subresource,
        attrs.namespace,
        attrs.name,
    )
