"""The single-waiter wake-up: a wake reaches the parked task, and only one that is parked."""

from __future__ import annotations

import asyncio

import pytest

from pycm.util.wakeup import Wakeup
from tests.util.conftest import settle


@pytest.mark.asyncio
async def test_wake_resumes_the_parked_task_and_clears_the_waiter() -> None:
    wakeup = Wakeup()
    task = asyncio.create_task(wakeup.wait())
    await settle()
    assert wakeup.waiter is not None and not task.done()
    wakeup.wake()
    await settle()
    assert task.done() and task.exception() is None
    assert wakeup.waiter is None


@pytest.mark.asyncio
async def test_a_wake_with_nobody_parked_is_not_remembered() -> None:
    wakeup = Wakeup()
    wakeup.wake()  # nobody waits: a no-op
    task = asyncio.create_task(wakeup.wait())
    await settle()
    assert not task.done()  # the earlier wake did not count
    wakeup.wake()
    await settle()
    assert task.done()


@pytest.mark.asyncio
async def test_a_second_wake_before_the_task_runs_is_harmless() -> None:
    wakeup = Wakeup()
    task = asyncio.create_task(wakeup.wait())
    await settle()
    wakeup.wake()
    wakeup.wake()
    await settle()
    assert task.done() and task.exception() is None


@pytest.mark.asyncio
async def test_cancelling_the_parked_task_leaves_nobody_parked() -> None:
    wakeup = Wakeup()
    task = asyncio.create_task(wakeup.wait())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wakeup.waiter is None
    wakeup.wake()  # nothing to wake, nothing raised


@pytest.mark.asyncio
async def test_wait_for_says_whether_it_was_woken_or_timed_out() -> None:
    wakeup = Wakeup()
    assert await wakeup.wait_for(0.001) is False
    assert wakeup.waiter is None
    task = asyncio.create_task(wakeup.wait_for(30.0))
    await settle()
    wakeup.wake()
    assert await task is True
    assert wakeup.waiter is None
