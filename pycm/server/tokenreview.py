"""Bearer tokens checked by the API server: the TokenReviewer protocol and its delegating,
caching implementation (k8s.io/apiserver ``authentication/token/webhook`` + ``token/cache``).

A controller manager does not validate tokens itself: it POSTs an ``authentication.k8s.io/v1``
TokenReview and believes the answer (``--authentication-kubeconfig``). Answers are cached for
``cache_ttl`` (KCM's default 10 s) under the token's SHA-256, so the raw token is not kept as a
key; "not authenticated" is cached as long as "authenticated". A failed call raises
:class:`TokenReviewError` — the request is then unauthorized, as in kube — and the failure is
cached too, for ``error_cache_ttl`` (2 s): kube's token cache keeps a failed review for its
failure TTL (10 s for a controller manager), pycm for less, so an API server that failed once
is asked again soon but not by every request meanwhile.

What reviews cost the API server is bounded: concurrent reviews of one token are one call
(kube's singleflight), and calls for tokens not in the cache pass a
:class:`~pycm.server.review_limiter.ReviewRateLimiter` keyed by the client's address — a review
it refuses is not sent, and the request is unauthorized (``TokenReviewError``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any, Protocol

from pycm.server.review_limiter import ReviewRateLimiter
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
DEFAULT_ERROR_CACHE_TTL = 2.0  # a failed review (kube: the failure TTL, 10 s here)


class TokenReviewError(Exception):
    """The token could not be reviewed (the API call failed or answered nonsense)."""


class TokenReviewer(Protocol):
    """Who owns a bearer token: the user, or None when the token is not valid. ``client`` is
    the address the request came from ("" when unknown), for rate limits."""

    async def review(self, token: str, *, client: str = "") -> UserInfo | None: ...


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
        error_cache_ttl: float = DEFAULT_ERROR_CACHE_TTL,
        maxsize: int = 4096,
        limiter: ReviewRateLimiter | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._poster = poster
        self._audiences = tuple(audiences)
        self._ttl = cache_ttl
        self._error_ttl = error_cache_ttl
        self.limiter = limiter if limiter is not None else ReviewRateLimiter(clock=clock)
        # token sha256 -> the user, None (not authenticated) or the review's error message.
        self._cache: TTLCache[bytes, tuple[UserInfo | str | None]] = TTLCache(
            maxsize=maxsize, clock=clock
        )
        # token sha256 -> the review under way (kube's singleflight): callers join it.
        self._in_flight: dict[bytes, asyncio.Future[UserInfo | None]] = {}
        self.sent = 0  # TokenReviews posted

    async def review(self, token: str, *, client: str = "") -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None:
            if isinstance(cached[0], str):
                raise TokenReviewError(cached[0])
            return cached[0]
        joined = self._in_flight.get(key)
        if joined is not None:
            try:
                return await asyncio.shield(joined)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not joined.cancelled() or (task is not None and task.cancelling()):
                    raise  # this caller was cancelled
            return await self.review(token, client=client)  # the one it joined was
        if not self.limiter.try_accept(client):
            raise TokenReviewError("too many token reviews for this client; not reviewed")
        future: asyncio.Future[UserInfo | None] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            user = await self._post(token)
        except TokenReviewError as exc:
            self._cache.put(key, (str(exc),), self._error_ttl)
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" log when nobody joined
            raise
        except BaseException:  # cancelled: those who joined ask again themselves
            future.cancel()
            raise
        else:
            self._cache.put(key, (user,), self._ttl)
            future.set_result(user)
            return user
        finally:
            del self._in_flight[key]

    async def _post(self, token: str) -> UserInfo | None:
        self.sent += 1
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        try:
            answer = await self._poster.create(TOKENREVIEWS_PATH, body)
        except Exception as exc:  # any transport or API error: unauthorized
            raise TokenReviewError(f"TokenReview failed: {exc}") from exc
        return _user_from_status(answer.get("status"))


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
