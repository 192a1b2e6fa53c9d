"""Bearer tokens checked by the API server: the TokenReviewer protocol and its delegating,
caching implementation (k8s.io/apiserver ``authentication/token/webhook`` + ``token/cache``).

A controller manager does not validate tokens itself: it POSTs an ``authentication.k8s.io/v1``
TokenReview and believes the answer (``--authentication-kubeconfig``). Answers are cached for
``cache_ttl`` (KCM's default 10 s) under the token's SHA-256, so the raw token is not kept as a
key; "not authenticated" is cached as long as "authenticated". A failed call is not cached and
raises :class:`TokenReviewError` — the request is then unauthorized, as in kube.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol

from pycm.server.ttl_cache import TTLCache
from pycm.server.user import UserInfo
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_AUTHN_CACHE_TTL",
    "TOKENREVIEWS_PATH",
    "DelegatingTokenReviewer",
    "ReviewPoster",
    "TokenReviewError",
    "TokenReviewer",
]

TOKENREVIEWS_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
DEFAULT_AUTHN_CACHE_TTL = 10.0  # KCM --authentication-token-webhook-cache-ttl


class TokenReviewError(Exception):
    """The token could not be reviewed (the API call failed or answered nonsense)."""


class TokenReviewer(Protocol):
    """Who owns a bearer token: the user, or None when the token is not valid."""

    async def review(self, token: str) -> UserInfo | None: ...


class ReviewPoster(Protocol):
    """The subset of an API client the delegating reviewers use: create an object, return what
    the server answered (reviews are create-only and answered in the response body)."""

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]: ...


class DelegatingTokenReviewer:
    """A :class:`TokenReviewer` that asks the API server with a TokenReview, through a cache."""

    def __init__(
        self,
        poster: ReviewPoster,
        *,
        audiences: Sequence[str] = (),
        cache_ttl: float = DEFAULT_AUTHN_CACHE_TTL,
        maxsize: int = 4096,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._poster = poster
        self._audiences = tuple(audiences)
        self._ttl = cache_ttl
        # token sha256 -> (user or None); holds both answers, never errors.
        self._cache: TTLCache[bytes, tuple[UserInfo | None]] = TTLCache(
            maxsize=maxsize, clock=clock
        )

    async def review(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None:
            return cached[0]
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        try:
            answer = await self._poster.create(TOKENREVIEWS_PATH, body)
        except Exception as exc:  # any transport or API error: unauthorized, not cached
            raise TokenReviewError(f"TokenReview failed: {exc}") from exc
        user = _user_from_status(answer.get("status"))
        self._cache.put(key, (user,), self._ttl)
        return user


def _user_from_status(status: object) -> UserInfo | None:
    if not isinstance(status, dict):
        raise TokenReviewError("TokenReview answer has no status")
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    if not isinstance(user, dict) or not user.get("username"):
        raise TokenReviewError("TokenReview authenticated a user without a name")
    extra_raw = user.get("extra") or {}
    extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in dict(extra_raw).items()}
    return UserInfo(
        name=str(user["username"]),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=extra,
    )
