"""The reconcile gate: open only while the last successful renew is younger than RenewDeadline
by the local monotonic clock."""

from __future__ import annotations

import asyncio

import pytest

from pycm.leaderelection.gate import RenewGate
from pycm.util.clock import FakeClock


def test_gate_is_closed_until_renewed_and_again_past_the_renew_deadline() -> None:
    clock = FakeClock()
    gate = RenewGate(clock, renew_deadline=10.0)
    assert not gate.is_open() and gate.age() is None
    clock.advance(1.0)
    gate.renewed(clock.monotonic() - 0.5)  # the attempt began half a second ago
    assert gate.is_open() and gate.age() == pytest.approx(0.5)
    clock.advance(9.4)
    assert gate.is_open()
    clock.advance(0.1)  # 10.0 s since the attempt began: the deadline itself is closed
    assert not gate.is_open()
    gate.renewed(clock.monotonic())
    assert gate.is_open()
    gate.close()
    assert not gate.is_open() and gate.age() is None


@pytest.mark.asyncio
async def test_wait_open_returns_only_after_the_next_renew() -> None:
    clock = FakeClock()
    gate = RenewGate(clock, renew_deadline=10.0)
    gate.renewed(clock.monotonic())
    await asyncio.wait_for(gate.wait_open(), 1)  # open: at once
    clock.advance(30.0)  # a pause past the deadline
    waiter = asyncio.create_task(gate.wait_open(), name="waiter")
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done()
    gate.close()  # leadership ended: still closed, the waiter keeps waiting
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done()
    gate.renewed(clock.monotonic())
    await asyncio.wait_for(waiter, 1)
