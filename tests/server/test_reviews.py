"""DelegatingTokenReviewer and DelegatingAuthorizer over a fake ReviewPoster: the bodies they
post, how answers map, and the TTL caches (on a fake clock)."""

from __future__ import annotations

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
async def test_token_reviewer_failure_raises_and_is_not_cached(clock: FakeClock) -> None:
    poster = FakePoster(_token_answer, error=ConnectionError("refused"))
    reviewer = DelegatingTokenReviewer(poster, clock=clock)
    with pytest.raises(TokenReviewError, match="refused"):
        await reviewer.review("alice-token")
    poster.error = None
    assert (await reviewer.review("alice-token")) is not None
    assert len(poster.calls) == 2


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
