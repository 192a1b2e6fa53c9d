"""Fixtures for the pycm.kube tests: a recording MockTransport, a fresh bus and registry."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.kube.client import Client
from pycm.kube.config import ClientConfig
from pycm.trace.bus import Bus
from pycm.trace.kinds import ApiRequestCompleted
from pycm.util.clock import FakeClock

SERVER = "http://127.0.0.1:6443"
HOST = "127.0.0.1:6443"


class AutoClock(FakeClock):
    """A fake clock whose sleeps move time forward by themselves (and record their lengths)."""

    def __init__(self) -> None:
        super().__init__(start=1000.0)
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(max(0.0, seconds))
        await super().sleep(0)


Handler = Callable[[httpx.Request], httpx.Response]


@dataclass
class Recorder:
    """Records every request and answers from a queue of responses (or a default)."""

    responses: list[httpx.Response] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)
    default: Callable[[httpx.Request], httpx.Response] | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.responses:
            return self.responses.pop(0)
        if self.default is not None:
            return self.default(request)
        return httpx.Response(200, json={"kind": "Pod", "metadata": {"name": "x"}})

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]

    def body(self, i: int = -1) -> Any:
        return orjson.loads(self.requests[i].content)


def status(code: int, reason: str, message: str = "boom", **details: Any) -> httpx.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    body |= {"reason": reason, "message": message}
    if details:
        body["details"] = details
    return httpx.Response(code, json=body)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def bus() -> Bus:
    return Bus(instance="test")


@pytest.fixture
def clock() -> AutoClock:
    return AutoClock()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_client(
    recorder: Recorder, bus: Bus, registry: CollectorRegistry, clock: AutoClock
) -> Callable[..., Client]:
    made: list[Client] = []

    def make(**changes: Any) -> Client:
        config = ClientConfig(server=SERVER, qps=-1, token="t0k")
        config = config.with_overrides(**changes)
        client = Client(
            config,
            transport=httpx.MockTransport(recorder),
            bus=bus,
            registry=registry,
            clock=clock,
        )
        made.append(client)
        return client

    make.made = made  # type: ignore[attr-defined]
    return make


@pytest_asyncio.fixture
async def client(make_client: Callable[..., Client]) -> AsyncIterator[Client]:
    c = make_client()
    yield c
    await c.aclose()


def api_events(bus: Bus) -> list[ApiRequestCompleted]:
    return [e for e in bus.recent() if isinstance(e, ApiRequestCompleted)]
