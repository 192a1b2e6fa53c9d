"""Delegated authentication and authorization against the emulator's real TokenReview and
SubjectAccessReview, end to end through a secure server.

The reviews are posted through :class:`HttpxPoster`, a test adapter with the one method the
delegating reviewers need (``ReviewPoster.create``), authenticated as the emulator's admin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.server import (
    DelegatingAuthorizer,
    DelegatingTokenReviewer,
    RequestAttributes,
    UserInfo,
)
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
    """A ReviewPoster over httpx; counts the reviews it posted."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.paths: list[str] = []

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.paths.append(resource_path)
        response = await self.client.post(resource_path, json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer


@pytest_asyncio.fixture
async def emulator(tmp_path: Path) -> AsyncIterator[Emulator]:
    tokens, policy = tmp_path / "tokens.csv", tmp_path / "policy.yaml"
    tokens.write_text(TOKENS)
    policy.write_text(POLICY)
    async with run_emulator(token_auth_file=str(tokens), authz_policy_file=str(policy)) as emu:
        yield emu


@pytest_asyncio.fixture
async def poster(emulator: Emulator) -> AsyncIterator[HttpxPoster]:
    headers = {"Authorization": f"Bearer {emulator.admin_token}"}
    async with httpx.AsyncClient(base_url=emulator.url, headers=headers, timeout=10) as client:
        yield HttpxPoster(client)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("token", "expected"),
    [
        pytest.param("alice-token", ("alice", "u-alice"), id="known"),
        pytest.param("nobody-token", None, id="unknown"),
    ],
)
async def test_delegating_token_reviewer_against_emulator(
    poster: HttpxPoster, token: str, expected: tuple[str, str] | None
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
    poster: HttpxPoster, user: str, path: str, allowed: bool
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
    serve: Serve, client_for: ClientFor, poster: HttpxPoster, headers: dict[str, str], status: int
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
    serve: Serve, client_for: ClientFor, poster: HttpxPoster
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
