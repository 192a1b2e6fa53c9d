"""Fixtures for the pycm.workqueue tests: a fake clock, a private bus and a private registry."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.metrics import QueueMetrics


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


@pytest.fixture
def bus(clock: FakeClock) -> Bus:
    return Bus(instance="test", clock=clock)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry) -> QueueMetrics:
    return QueueMetrics(registry)


async def settle(rounds: int = 10) -> None:
    """Let ready tasks run a few loop iterations (no time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
