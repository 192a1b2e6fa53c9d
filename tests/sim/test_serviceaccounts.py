"""ServiceAccount tokens: TokenRequest issues bound tokens that authenticate as the account
until they expire or the account is deleted — through httpx and the official client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from kubernetes import client

from pycm.sim.objects import parse_rfc3339
from pycm.sim.server import Emulator, run_emulator
from pycm.util.clock import FakeClock

SA = "/api/v1/namespaces/kube-system/serviceaccounts"
REQUEST = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}


async def _token(http: httpx.AsyncClient, name: str, **spec: Any) -> httpx.Response:
    return await http.post(f"{SA}/{name}/token", json={**REQUEST, "spec": spec})


async def _whoami(emu: Emulator, token: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=emu.url, timeout=10) as anon:
        return await anon.get(
            "/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {token}"}
        )


@pytest.mark.asyncio
async def test_token_request_issues_a_token_that_authenticates_as_the_account(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    sa = (await http.post(SA, json={"metadata": {"name": "deployment-controller"}})).json()
    r = await _token(http, "deployment-controller", expirationSeconds=1200)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["kind"] == "TokenRequest"
    assert body["spec"]["expirationSeconds"] == 1200
    now = emu.store.clock.wall_ns() / 1e9
    assert abs(parse_rfc3339(body["status"]["expirationTimestamp"]) - (now + 1200)) <= 2
    token = body["status"]["token"]
    assert (await _whoami(emu, token)).status_code == 200
    review = await http.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        },
    )
    user = review.json()["status"]["user"]
    assert user["username"] == "system:serviceaccount:kube-system:deployment-controller"
    assert user["uid"] == sa["metadata"]["uid"]
    assert set(user["groups"]) == {
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "system:authenticated",
    }
    # The default lifetime is kube's hour.
    default = (await _token(http, "deployment-controller")).json()
    assert default["spec"]["expirationSeconds"] == 3600


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "spec", "code", "reason"),
    [
        ("ghost", {}, 404, "NotFound"),
        ("sa", {"expirationSeconds": 599}, 422, "Invalid"),
        ("sa", {"expirationSeconds": "3600"}, 422, "Invalid"),
        ("sa", {"expirationSeconds": (1 << 32) + 1}, 422, "Invalid"),
    ],
)
async def test_token_request_refusals(
    http: httpx.AsyncClient, name: str, spec: dict[str, Any], code: int, reason: str
) -> None:
    await http.post(SA, json={"metadata": {"name": "sa"}})
    r = await _token(http, name, **spec)
    assert (r.status_code, r.json()["reason"]) == (code, reason), r.text
    if code == 422:
        assert r.json()["details"]["causes"][0]["field"] == "spec.expirationSeconds"


@pytest.mark.asyncio
async def test_a_tokens_account_deleted_or_replaced_revokes_it(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    await http.post(SA, json={"metadata": {"name": "sa"}})
    token = (await _token(http, "sa")).json()["status"]["token"]
    assert (await _whoami(emu, token)).status_code == 200
    assert (await http.delete(f"{SA}/sa")).status_code == 200
    assert (await _whoami(emu, token)).status_code == 401
    # A new account of the same name is another object: the bound token stays dead.
    await http.post(SA, json={"metadata": {"name": "sa"}})
    assert (await _whoami(emu, token)).status_code == 401
    fresh = (await _token(http, "sa")).json()["status"]["token"]
    assert (await _whoami(emu, fresh)).status_code == 200


@pytest_asyncio.fixture
async def clocked() -> AsyncIterator[tuple[Emulator, FakeClock]]:
    clock = FakeClock()
    async with run_emulator(clock=clock, tls=False, kubelet=False) as emulator:
        yield emulator, clock


@pytest.mark.asyncio
async def test_a_token_expires_at_its_expiration_timestamp(
    clocked: tuple[Emulator, FakeClock],
) -> None:
    emu, clock = clocked
    headers = {"Authorization": f"Bearer {emu.admin_token}"}
    async with httpx.AsyncClient(base_url=emu.url, headers=headers, timeout=10) as http:
        await http.post(SA, json={"metadata": {"name": "sa"}})
        token = (await _token(http, "sa", expirationSeconds=600)).json()["status"]["token"]
    clock.advance(599)
    assert (await _whoami(emu, token)).status_code == 200
    clock.advance(1)
    assert (await _whoami(emu, token)).status_code == 401


def test_official_client_creates_a_token_and_discovery_lists_the_subresource(
    api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account("kube-system", {"metadata": {"name": "official"}})
    try:
        issued = core.create_namespaced_service_account_token(
            "official", "kube-system", {"spec": {"expirationSeconds": 900}}
        )
        assert issued.status.token
        assert issued.spec.expiration_seconds == 900
        resources = {r.name: r for r in core.get_api_resources().resources}
        token = resources["serviceaccounts/token"]
        assert (token.kind, token.verbs, token.group) == (
            "TokenRequest",
            ["create"],
            "authentication.k8s.io",
        )
        assert resources["serviceaccounts"].short_names == ["sa"]
    finally:
        core.delete_namespaced_service_account("official", "kube-system")
