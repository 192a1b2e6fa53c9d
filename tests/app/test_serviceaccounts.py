"""The service-account token source of --use-service-account-credentials, against the
emulator over HTTP: get-or-create of the account, caching until 80 % of the lifetime, reset
on 401, the ten-minute floor under clock skew, and retries with backoff."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from starlette.requests import Request
from starlette.responses import Response

from pycm.app.serviceaccounts import (
    ServiceAccountTokenSource,
    get_or_create_service_account,
    username_for,
)
from pycm.kube import Client, load_config
from pycm.kube.errors import KubeError
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus, Subscription
from pycm.trace.kinds import ControllerTokenRequested
from pycm.util.clock import FakeClock

SA_PATH = "/api/v1/namespaces/kube-system/serviceaccounts"


@dataclass
class Rig:
    emu: Emulator
    clock: FakeClock
    root: Client
    bus: Bus
    events: Subscription
    requests: list[tuple[str, str]]

    def source(self, name: str = "deployment-controller", clock: Any = None) -> Any:
        return ServiceAccountTokenSource(
            self.root,
            "kube-system",
            name,
            controller="deployment",
            clock=clock or self.clock,
            bus=self.bus,
        )

    def token_requests(self) -> int:
        return sum(1 for m, p in self.requests if m == "POST" and p.endswith("/token"))

    def token_events(self) -> list[ControllerTokenRequested]:
        return [e for e in self.events.drain() if isinstance(e, ControllerTokenRequested)]


@pytest_asyncio.fixture
async def rig() -> AsyncIterator[Rig]:
    clock = FakeClock()
    async with run_emulator(clock=clock, tls=False, kubelet=False) as emu:
        requests: list[tuple[str, str]] = []

        async def record(request: Request) -> Response | None:
            requests.append((request.method, request.url.path))
            return None

        emu.before_request.insert(0, record)
        root = await Client.connect(await load_config(kubeconfig=str(emu.kubeconfig_path)))
        bus = Bus()
        try:
            yield Rig(emu, clock, root, bus, bus.subscribe(name="t"), requests)
        finally:
            await root.aclose()


async def _user_of(rig: Rig, token: str) -> str:
    user = rig.emu.authenticator.authenticate(token)
    assert user is not None
    return user.name


def test_usernames_follow_kube() -> None:
    assert username_for("kube-system", "deployment-controller") == (
        "system:serviceaccount:kube-system:deployment-controller"
    )


@pytest.mark.asyncio
async def test_account_is_created_once_then_reused(rig: Rig) -> None:
    created = await get_or_create_service_account(rig.root, "kube-system", "x-controller")
    again = await get_or_create_service_account(rig.root, "kube-system", "x-controller")
    assert created["metadata"]["uid"] == again["metadata"]["uid"]
    assert [m for m, p in rig.requests if p.startswith(SA_PATH)] == ["GET", "POST", "GET"]
    # A namespace that does not exist yet is made first.
    await get_or_create_service_account(rig.root, "controllers", "y-controller")
    assert ("POST", "/api/v1/namespaces") in rig.requests


@pytest.mark.asyncio
async def test_token_is_cached_until_80_percent_of_its_lifetime(rig: Rig) -> None:
    source = rig.source()
    token = await source.token()
    assert await _user_of(rig, token) == ("system:serviceaccount:kube-system:deployment-controller")
    (event,) = rig.token_events()
    assert (event.attempt, event.expires_in_s, event.refresh_in_s) == (1, 3600.0, 2880.0)
    assert token not in repr(source) and token not in repr(event)
    rig.clock.advance(2879)
    assert await source.token() == token
    assert rig.token_requests() == 1
    rig.clock.advance(1)
    fresh = await source.token()
    assert fresh != token and rig.token_requests() == 2


@pytest.mark.asyncio
async def test_reset_after_a_401_fetches_a_new_token(rig: Rig) -> None:
    source = rig.source()
    first = await source.token()
    source.reset()
    second = await source.token()
    assert second != first and rig.token_requests() == 2


@pytest.mark.asyncio
async def test_concurrent_callers_share_one_token_request(rig: Rig) -> None:
    source = rig.source()
    tokens = await asyncio.gather(*(source.token() for _ in range(5)))
    assert len(set(tokens)) == 1 and rig.token_requests() == 1


@pytest.mark.asyncio
async def test_a_skewed_clock_pins_the_lifetime_to_ten_minutes(rig: Rig) -> None:
    # The manager's wall clock runs 3500 s ahead of the server's: the token seems to have
    # 100 s left, which would mean a TokenRequest every 80 s.
    skewed = FakeClock(wall_start_ns=rig.clock.wall_ns() + 3500 * 10**9)
    await rig.source(clock=skewed).token()
    (event,) = rig.token_events()
    assert (event.expires_in_s, event.refresh_in_s) == (600.0, 480.0)


async def _auto_advance(clock: FakeClock, slept: list[float]) -> None:
    while True:
        await asyncio.sleep(0.01)
        deadline = clock.next_deadline()
        if deadline is not None:
            slept.append(round(deadline - clock.monotonic(), 3))
            clock.advance(deadline - clock.monotonic())


@pytest.mark.asyncio
async def test_failures_are_retried_with_backoff_then_reported(rig: Rig) -> None:
    slept: list[float] = []
    advancer = asyncio.create_task(_auto_advance(rig.clock, slept))
    try:
        rig.emu.faults.add(kind="error", status=500, count=2, resource="serviceaccounts/token")
        token = await rig.source().token()
        assert token
        events = rig.token_events()
        assert [(e.attempt, bool(e.error)) for e in events] == [(1, True), (2, True), (3, False)]
        assert slept == [0.5, 1.0]

        slept.clear()
        rig.emu.faults.add(kind="error", status=500, count=10, resource="serviceaccounts/token")
        with pytest.raises(KubeError, match="failed to get a token for kube-system/other"):
            await rig.source("other").token()
        assert slept == [0.5, 1.0, 2.0]
        assert [e.attempt for e in rig.token_events()] == [1, 2, 3, 4]
    finally:
        advancer.cancel()
        await asyncio.gather(advancer, return_exceptions=True)


@pytest.mark.asyncio
async def test_a_client_on_a_revoked_token_gets_401_once_then_a_fresh_token(rig: Rig) -> None:
    from pycm.kube.errors import Unauthorized
    from pycm.kube.resources import PODS

    source = rig.source("revoked-controller")
    anonymous = rig.root.config.with_overrides(token=None, token_file=None, token_source=source)
    async with Client(anonymous, bus=rig.bus) as client:
        await client.list(PODS, namespace="default")
        first = await source.token()
        r = await rig.root.request(
            "DELETE", "/api/v1/namespaces/kube-system/serviceaccounts/revoked-controller"
        )
        assert r.code == 200
        with pytest.raises(Unauthorized):
            await client.list(PODS, namespace="default")
        # The 401 dropped the cached token: the account is made again, a new token issued.
        await client.list(PODS, namespace="default")
        assert await source.token() != first
