"""DelegatingTokenReviewer and DelegatingAuthorizer over a fake ReviewPoster: the bodies they
post, how answers map, and the TTL caches (on a fake clock)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from pycm.server import (
    AuthorizationError,
    DelegatingAuthorizer,
    DelegatingTokenReviewer,
    RequestAttributes,
    TokenReviewError,
    UserInfo,
)
from pycm.server.review_limiter import ReviewRateLimiter, client_key
from pycm.server.subjectaccessreview import SUBJECTACCESSREVIEWS_PATH
from pycm.server.tokenreview import TOKENREVIEWS_PATH
from pycm.server.ttl_cache import TTLCache
from pycm.util.clock import FakeClock
from tests.server.conftest import FakePoster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _token_answer(body: dict[str, Any]) -> dict[str, Any]:
    if body["spec"]["token"] == "alice-token":
        user = {"username": "alice", "uid": "u-1", "groups": ["devs"], "extra": {"k": ["v"]}}
        return {**body, "status": {"authenticated": True, "user": user}}
    return {**body, "status": {"authenticated": False, "error": "invalid bearer token"}}


def _sar_answer(body: dict[str, Any]) -> dict[str, Any]:
    allowed = body["spec"]["user"] == "alice"
    return {**body, "status": {"allowed": allowed, "reason": "" if allowed else "no policy"}}


@pytest.mark.asyncio
async def test_token_reviewer_posts_a_token_review_and_maps_the_user(clock: FakeClock) -> None:
    poster = FakePoster(_token_answer)
    reviewer = DelegatingTokenReviewer(poster, clock=clock)
    user = await reviewer.review("alice-token")
    assert user == UserInfo(name="alice", uid="u-1", groups=("devs",))
    assert user is not None and dict(user.extra) == {"k": ("v",)}
    assert poster.calls == [
        (
            TOKENREVIEWS_PATH,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": "alice-token"},
            },
        )
    ]
    assert TOKENREVIEWS_PATH == "/apis/authentication.k8s.io/v1/tokenreviews"


@pytest.mark.asyncio
async def test_token_reviewer_audiences_are_sent(clock: FakeClock) -> None:
    poster = FakePoster(_token_answer)
    await DelegatingTokenReviewer(poster, audiences=["pycm"], clock=clock).review("alice-token")
    assert poster.calls[0][1]["spec"] == {"token": "alice-token", "audiences": ["pycm"]}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("token", "advance", "calls"),
    [
        pytest.param("alice-token", 9.9, 1, id="valid-within-ttl-cached"),
        pytest.param("alice-token", 10.0, 2, id="valid-after-ttl-asked-again"),
        pytest.param("bad-token", 9.9, 1, id="invalid-within-ttl-cached"),
        pytest.param("bad-token", 10.0, 2, id="invalid-after-ttl-asked-again"),
    ],
)
async def test_token_reviewer_cache_honours_the_ttl(
    clock: FakeClock, token: str, advance: float, calls: int
) -> None:
    poster = FakePoster(_token_answer)
    reviewer = DelegatingTokenReviewer(poster, cache_ttl=10.0, clock=clock)
    first = await reviewer.review(token)
    clock.advance(advance)
    second = await reviewer.review(token)
    assert first == second
    assert len(poster.calls) == calls


@pytest.mark.asyncio
async def test_token_reviewer_failure_raises_and_is_cached_for_the_error_ttl(
    clock: FakeClock,
) -> None:
    poster = FakePoster(_token_answer, error=ConnectionError("refused"))
    reviewer = DelegatingTokenReviewer(poster, error_cache_ttl=2.0, clock=clock)
    with pytest.raises(TokenReviewError, match="refused"):
        await reviewer.review("alice-token")
    poster.error = None
    clock.advance(1.9)
    with pytest.raises(TokenReviewError, match="refused"):  # the failure, from the cache
        await reviewer.review("alice-token")
    assert len(poster.calls) == 1
    clock.advance(0.1)
    assert (await reviewer.review("alice-token")) is not None
    assert len(poster.calls) == 2


@pytest.mark.asyncio
async def test_token_reviewer_distinct_bad_tokens_from_one_client_are_rate_limited(
    clock: FakeClock,
) -> None:
    poster = FakePoster(_token_answer)
    limiter = ReviewRateLimiter(client_qps=2.0, client_burst=5, clock=clock)
    reviewer = DelegatingTokenReviewer(poster, limiter=limiter, clock=clock)
    assert await reviewer.review("alice-token", client="10.0.0.9") is not None  # before
    outcomes = []
    for n in range(50):
        try:
            outcomes.append(await reviewer.review(f"bogus-{n}", client="10.0.0.1"))
        except TokenReviewError as exc:
            outcomes.append(str(exc))
    assert outcomes[:5] == [None] * 5  # reviewed: not authenticated
    assert set(outcomes[5:]) == {"too many token reviews for this client; not reviewed"}
    assert len(poster.calls) == 1 + 5
    clock.advance(1.0)  # 2 a second refill
    for n in range(50, 60):
        with contextlib.suppress(TokenReviewError):
            await reviewer.review(f"bogus-{n}", client="10.0.0.1")
    assert len(poster.calls) == 1 + 5 + 2
    # Another client has its own bucket; a cached token costs no review and is never refused.
    assert await reviewer.review("alice-token", client="10.0.0.1") is not None
    assert await reviewer.review("other-bad", client="10.0.0.2") is None
    assert len(poster.calls) == 1 + 5 + 2 + 1


@pytest.mark.asyncio
async def test_token_reviewer_many_clients_are_bounded_in_total(clock: FakeClock) -> None:
    poster = FakePoster(_token_answer)
    limiter = ReviewRateLimiter(total_qps=10.0, total_burst=20, clock=clock)
    reviewer = DelegatingTokenReviewer(poster, limiter=limiter, clock=clock)
    for n in range(100):
        with contextlib.suppress(TokenReviewError):
            await reviewer.review(f"bogus-{n}", client=f"10.0.{n // 250}.{n % 250}")
    assert len(poster.calls) == 20


@pytest.mark.asyncio
async def test_token_reviewer_concurrent_reviews_of_one_token_are_one_call(
    clock: FakeClock,
) -> None:
    release = asyncio.Event()

    class SlowPoster(FakePoster):
        async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
            await release.wait()
            return await super().create(resource_path, body)

    poster = SlowPoster(_token_answer)
    reviewer = DelegatingTokenReviewer(poster, clock=clock)
    reviews = [asyncio.create_task(reviewer.review("alice-token")) for _ in range(10)]
    await asyncio.sleep(0)
    release.set()
    users = await asyncio.gather(*reviews)
    assert {u.name if u else None for u in users} == {"alice"}
    assert len(poster.calls) == 1


@pytest.mark.parametrize(
    ("address", "key"),
    [
        pytest.param("10.1.2.3", "10.1.2.3", id="ipv4"),
        pytest.param("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64", id="ipv6-by-64"),
        pytest.param("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64", id="ipv6-same-64"),
        pytest.param("::ffff:10.1.2.3", "10.1.2.3", id="ipv4-mapped"),
        pytest.param("", "", id="unknown"),
    ],
)
def test_review_limiter_client_key(address: str, key: str) -> None:
    assert client_key(address) == key


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param({}, id="no-status"),
        pytest.param({"status": {"authenticated": True, "user": {}}}, id="no-username"),
    ],
)
async def test_token_reviewer_nonsense_answer_is_an_error(
    clock: FakeClock, answer: dict[str, Any]
) -> None:
    reviewer = DelegatingTokenReviewer(FakePoster(lambda body: answer), clock=clock)
    with pytest.raises(TokenReviewError):
        await reviewer.review("t")


def _attrs(user: str = "alice", path: str = "/metrics", verb: str = "get") -> RequestAttributes:
    return RequestAttributes(
        user=UserInfo(name=user, uid="u-1", groups=("devs", "system:authenticated")),
        verb=verb,
        path=path,
    )


@pytest.mark.asyncio
async def test_authorizer_posts_non_resource_attributes(clock: FakeClock) -> None:
    poster = FakePoster(_sar_answer)
    decision = await DelegatingAuthorizer(poster, clock=clock).authorize(_attrs())
    assert (decision.allowed, decision.reason) == (True, "")
    assert poster.calls == [
        (
            SUBJECTACCESSREVIEWS_PATH,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": "alice",
                    "groups": ["devs", "system:authenticated"],
                    "uid": "u-1",
                    "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                },
            },
        )
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("user", "allowed_ttl", "denied_ttl", "advance", "calls"),
    [
        pytest.param("alice", 10.0, 10.0, 9.9, 1, id="allowed-within-ttl-cached"),
        pytest.param("alice", 10.0, 10.0, 10.0, 2, id="allowed-after-ttl-asked-again"),
        pytest.param("bob", 10.0, 10.0, 9.9, 1, id="denied-within-ttl-cached"),
        pytest.param("bob", 10.0, 2.0, 2.0, 2, id="denied-own-ttl"),
        pytest.param("alice", 10.0, 2.0, 2.0, 1, id="allowed-not-on-denied-ttl"),
    ],
)
async def test_authorizer_cache_honours_allowed_and_denied_ttls(
    clock: FakeClock, user: str, allowed_ttl: float, denied_ttl: float, advance: float, calls: int
) -> None:
    poster = FakePoster(_sar_answer)
    authorizer = DelegatingAuthorizer(
        poster, allowed_ttl=allowed_ttl, denied_ttl=denied_ttl, clock=clock
    )
    first = await authorizer.authorize(_attrs(user))
    clock.advance(advance)
    second = await authorizer.authorize(_attrs(user))
    assert first == second
    assert first.allowed is (user == "alice")
    assert len(poster.calls) == calls


@pytest.mark.asyncio
async def test_authorizer_cache_key_distinguishes_path_and_verb(clock: FakeClock) -> None:
    poster = FakePoster(_sar_answer)
    authorizer = DelegatingAuthorizer(poster, clock=clock)
    for attrs in (_attrs(), _attrs(path="/configz"), _attrs(verb="post"), _attrs()):
        await authorizer.authorize(attrs)
    assert len(poster.calls) == 3


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("error", "answer"),
    [
        pytest.param(ConnectionError("refused"), {}, id="call-failed"),
        pytest.param(None, {}, id="no-status"),
        pytest.param(None, {"status": {"allowed": True, "denied": True}}, id="allowed-and-denied"),
    ],
)
async def test_authorizer_failure_raises_and_is_not_cached(
    clock: FakeClock, error: Exception | None, answer: dict[str, Any]
) -> None:
    poster = FakePoster(lambda body: answer, error=error)
    authorizer = DelegatingAuthorizer(poster, clock=clock)
    for _ in range(2):
        with pytest.raises(AuthorizationError):
            await authorizer.authorize(_attrs())
    assert len(poster.calls) == 2


@pytest.mark.asyncio
async def test_authorizer_denied_with_evaluation_error_is_a_denial(clock: FakeClock) -> None:
    answer = {"status": {"allowed": False, "evaluationError": "rbac: role not found"}}
    decision = await DelegatingAuthorizer(FakePoster(lambda body: answer), clock=clock).authorize(
        _attrs()
    )
    assert decision.allowed is False


def test_ttl_cache_evicts_least_recently_used_beyond_maxsize(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(maxsize=2, clock=clock)
    cache.put("a", 1, 10)
    cache.put("b", 2, 10)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3, 10)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_ttl_cache_zero_ttl_stores_nothing(clock: FakeClock) -> None:
    cache: TTLCache[str, int] = TTLCache(clock=clock)
    cache.put("a", 1, 10)
    cache.put("a", 2, 0)
    assert (cache.get("a"), len(cache)) == (None, 0)
