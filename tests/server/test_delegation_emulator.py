"""Delegated authentication and authorization against the emulator's real TokenReview and
SubjectAccessReview, end to end through a secure server.

The reviews are posted, as the emulator's admin, through pycm's own API client
(:class:`~pycm.server.kube_poster.ClientReviewPoster` over ``pycm.kube.Client``) and through
:class:`HttpxPoster`, a bare test adapter of the one method the reviewers need.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.kube import Client, load_config
from pycm.server import (
    DelegatingAuthorizer,
    DelegatingTokenReviewer,
    RequestAttributes,
    UserInfo,
)
from pycm.server.kube_poster import ClientReviewPoster, delegating_pair
from pycm.server.tokenreview import ReviewPoster
from pycm.sim.server import Emulator, run_emulator
from tests.server.conftest import ClientFor, Serve, bearer

TOKENS = 'alice-token,alice,u-alice,"devs"\nbob-token,bob,u-bob\n'
POLICY = """
rules:
  - users: [alice]
    verbs: [get]
    nonResourceURLs: [/metrics]
"""


class HttpxPoster:
    """A ReviewPoster over plain httpx."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post(resource_path, json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer


@pytest_asyncio.fixture
async def emulator(tmp_path: Path) -> AsyncIterator[Emulator]:
    tokens, policy = tmp_path / "tokens.csv", tmp_path / "policy.yaml"
    tokens.write_text(TOKENS)
    policy.write_text(POLICY)
    async with run_emulator(
        tls=False, kubelet=False, token_auth_file=str(tokens), authz_policy_file=str(policy)
    ) as emu:
        yield emu


class CountingPoster:
    """Counts the review paths posted through another poster."""

    def __init__(self, inner: ReviewPoster) -> None:
        self.inner = inner
        self.paths: list[str] = []

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.paths.append(resource_path)
        return await self.inner.create(resource_path, body)


@pytest_asyncio.fixture(params=["kube-client", "httpx"])
async def poster(
    emulator: Emulator, request: pytest.FixtureRequest
) -> AsyncIterator[CountingPoster]:
    if request.param == "kube-client":
        config = await load_config(kubeconfig=str(emulator.kubeconfig_path))
        async with await Client.connect(config) as client:
            yield CountingPoster(ClientReviewPoster(client))
        return
    headers = {"Authorization": f"Bearer {emulator.admin_token}"}
    async with httpx.AsyncClient(base_url=emulator.url, headers=headers, timeout=10) as client:
        yield CountingPoster(HttpxPoster(client))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("token", "expected"),
    [
        pytest.param("alice-token", ("alice", "u-alice"), id="known"),
        pytest.param("nobody-token", None, id="unknown"),
    ],
)
async def test_delegating_token_reviewer_against_emulator(
    poster: CountingPoster, token: str, expected: tuple[str, str] | None
) -> None:
    user = await DelegatingTokenReviewer(poster).review(token)
    assert (None if user is None else (user.name, user.uid)) == expected
    if user is not None:
        assert "devs" in user.groups


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("user", "path", "allowed"),
    [
        pytest.param("alice", "/metrics", True, id="policy-allows"),
        pytest.param("alice", "/configz", False, id="other-path-denied"),
        pytest.param("bob", "/metrics", False, id="other-user-denied"),
    ],
)
async def test_delegating_authorizer_against_emulator(
    poster: CountingPoster, user: str, path: str, allowed: bool
) -> None:
    attrs = RequestAttributes(user=UserInfo(name=user), verb="get", path=path)
    decision = await DelegatingAuthorizer(poster).authorize(attrs)
    assert decision.allowed is allowed


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param(bearer("alice-token"), 200, id="allowed-user"),
        pytest.param(bearer("bob-token"), 403, id="denied-user"),
        pytest.param(bearer("forged-token"), 401, id="invalid-token"),
        pytest.param({}, 403, id="anonymous"),
    ],
)
async def test_secure_server_delegates_to_emulator(
    serve: Serve,
    client_for: ClientFor,
    poster: CountingPoster,
    headers: dict[str, str],
    status: int,
) -> None:
    served = await serve(
        reviewer=DelegatingTokenReviewer(poster), authorizer=DelegatingAuthorizer(poster)
    )
    client = client_for(served.server.cert_file)
    response = await client.get(f"{served.url}/metrics", headers=headers)
    assert response.status_code == status
    assert (await client.get(f"{served.url}/healthz", headers=headers)).status_code == (
        401 if status == 401 else 200
    )


@pytest.mark.asyncio
async def test_secure_server_delegation_cached_within_ttl(
    serve: Serve, client_for: ClientFor, poster: CountingPoster
) -> None:
    served = await serve(
        reviewer=DelegatingTokenReviewer(poster), authorizer=DelegatingAuthorizer(poster)
    )
    client = client_for(served.server.cert_file)
    for _ in range(3):
        response = await client.get(f"{served.url}/metrics", headers=bearer("alice-token"))
        assert response.status_code == 200
    assert poster.paths == [
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    ]


@pytest.mark.asyncio
async def test_delegating_pair_over_a_kube_client_decides_like_the_emulator(
    emulator: Emulator,
) -> None:
    config = await load_config(kubeconfig=str(emulator.kubeconfig_path))
    async with await Client.connect(config) as client:
        reviewer, authorizer = delegating_pair(client)
        user = await reviewer.review("alice-token")
        assert user is not None
        decision = await authorizer.authorize(RequestAttributes(user, "get", "/metrics"))
    assert (user.name, decision.allowed) == ("alice", True)


@pytest.mark.asyncio
async def test_client_review_poster_rejects_other_paths(emulator: Emulator) -> None:
    config = await load_config(kubeconfig=str(emulator.kubeconfig_path))
    async with await Client.connect(config) as client:
        with pytest.raises(ValueError, match="not a review resource"):
            await ClientReviewPoster(client).create("/api/v1/pods", {})
