"""Fixtures for the pycm.server tests.

- fakes for the two protocols the chain decides with: :class:`FakeTokenReviewer` (a token
  table, counting calls) and :class:`FakeAuthorizer` (allowed user names, recording every
  decision's attributes), and :class:`FakePoster` (a ReviewPoster that records and answers);
- ``serve``: start a real SecureServer on 127.0.0.1:0 with those, stopped at teardown;
- ``client_for``: an httpx client that trusts a server's certificate (optionally presenting a
  client certificate), closed at teardown.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
import pytest_asyncio
import trustme
from prometheus_client import CollectorRegistry
from starlette.routing import BaseRoute

from pycm.server import (
    DelegatingAuthenticator,
    HealthRegistry,
    SecureServer,
    SecureServingConfig,
    build_routes,
)
from pycm.server.subjectaccessreview import Decision, RequestAttributes
from pycm.server.user import UserInfo
from pycm.trace.bus import Bus


class FakeTokenReviewer:
    """Tokens → users; any other token is invalid. ``calls`` lists every token reviewed."""

    def __init__(self, users: dict[str, UserInfo]) -> None:
        self.users = users
        self.calls: list[str] = []

    async def review(self, token: str, *, client: str = "") -> UserInfo | None:
        self.calls.append(token)
        return self.users.get(token)


class FakeAuthorizer:
    """Allows the named users; records the attributes of every decision asked for."""

    def __init__(self, allowed: Sequence[str] = (), reason: str = "") -> None:
        self.allowed = set(allowed)
        self.reason = reason
        self.calls: list[RequestAttributes] = []
        self.error: Exception | None = None

    async def authorize(self, attrs: RequestAttributes) -> Decision:
        self.calls.append(attrs)
        if self.error is not None:
            raise self.error
        return Decision(attrs.user.name in self.allowed, self.reason)


@dataclass
class FakePoster:
    """A ReviewPoster: records (path, body) and answers with ``answer(body)``; fails on demand."""

    answer: Callable[[dict[str, Any]], dict[str, Any]]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: Exception | None = None

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((resource_path, body))
        if self.error is not None:
            raise self.error
        return self.answer(body)


ALICE = UserInfo(name="alice", uid="u-alice", groups=("devs",))


@dataclass
class Served:
    server: SecureServer
    url: str
    health: HealthRegistry
    registry: CollectorRegistry
    reviewer: FakeTokenReviewer
    authorizer: FakeAuthorizer
    bus: Bus


class Serve(Protocol):
    async def __call__(
        self,
        *,
        config: SecureServingConfig | None = None,
        routes: Sequence[BaseRoute] = (),
        allowed: Sequence[str] = ("alice",),
        reviewer: Any = None,
        authorizer: Any = None,
        configz: dict[str, Any] | None = None,
    ) -> Served: ...


@pytest.fixture
def bus() -> Bus:
    return Bus()


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest_asyncio.fixture
async def exit_stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as stack:
        yield stack


@pytest_asyncio.fixture
async def serve(bus: Bus, exit_stack: AsyncExitStack) -> Serve:
    async def start(
        *,
        config: SecureServingConfig | None = None,
        routes: Sequence[BaseRoute] = (),
        allowed: Sequence[str] = ("alice",),
        reviewer: Any = None,
        authorizer: Any = None,
        configz: dict[str, Any] | None = None,
    ) -> Served:
        registry = CollectorRegistry()
        health = HealthRegistry(bus=bus)
        app = build_routes(health=health, metrics_registry=registry, configz=configz, routes=routes)
        reviewer = reviewer or FakeTokenReviewer({"alice-token": ALICE})
        authorizer = authorizer or FakeAuthorizer(allowed)
        server = SecureServer(
            app,
            config or SecureServingConfig(bind_address="127.0.0.1", port=0),
            authenticator=DelegatingAuthenticator(reviewer),
            authorizer=authorizer,
            bus=bus,
        )
        host, port = await server.start()
        exit_stack.push_async_callback(server.stop)
        return Served(server, f"https://{host}:{port}", health, registry, reviewer, authorizer, bus)

    return start


ClientFor = Callable[..., httpx.AsyncClient]


@pytest_asyncio.fixture
async def client_for(exit_stack: AsyncExitStack) -> ClientFor:
    def make(
        ca_file: str | Path, *, client_cert: trustme.LeafCert | None = None, **kwargs: Any
    ) -> httpx.AsyncClient:
        context = ssl.create_default_context(cafile=str(ca_file))
        if client_cert is not None:
            client_cert.configure_cert(context)
        client = httpx.AsyncClient(verify=context, timeout=10.0, **kwargs)
        exit_stack.push_async_callback(client.aclose)
        return client

    return make


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
