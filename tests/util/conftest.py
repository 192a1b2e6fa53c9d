"""Fixtures for the pycm.util tests."""

from __future__ import annotations

import asyncio

import pytest

from pycm.util.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0, wall_start_ns=1_700_000_000_000_000_000)


async def settle(rounds: int = 5) -> None:
    """Let ready tasks run a few loop iterations (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
