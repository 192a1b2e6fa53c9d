"""Guarded tasks report failures by name and keep quiet on cancellation; cancel_and_wait."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pycm.util.clock import FakeClock
from pycm.util.tasks import cancel_and_wait, create_guarded_task
from tests.util.conftest import settle

_LOGGER = "pycm.util.tasks"


class Boom(RuntimeError):
    pass


async def _fail(exc: BaseException) -> None:
    await asyncio.sleep(0)
    raise exc


async def _stubborn(clock: FakeClock, caught: asyncio.Event) -> None:
    """Ignores the first cancellation and keeps sleeping; a second one stops it."""
    try:
        await clock.sleep(3600)
    except asyncio.CancelledError:
        caught.set()
        await clock.sleep(3600)
        raise


@pytest.mark.asyncio
async def test_guarded_task_failure_is_logged_with_its_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=_LOGGER)
    exc = Boom("watch stream broke")
    task = create_guarded_task(_fail(exc), name="informer:pods")
    await asyncio.wait([task])

    [record] = caplog.records
    assert record.name == _LOGGER
    assert record.levelno == logging.ERROR
    assert "informer:pods" in record.getMessage()
    assert "watch stream broke" in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[1] is exc
    assert record.__dict__["task_name"] == "informer:pods"
    # The error stays on the task.
    assert task.get_name() == "informer:pods"
    assert task.exception() is exc
    with pytest.raises(Boom):
        await task


@pytest.mark.asyncio
async def test_guarded_task_failure_calls_on_failure_once_with_the_exception() -> None:
    failures: list[BaseException] = []
    exc = Boom("sync failed")
    task = create_guarded_task(_fail(exc), name="worker", on_failure=failures.append)
    await asyncio.wait([task])
    await settle()
    assert failures == [exc]


@pytest.mark.asyncio
async def test_guarded_task_failure_uses_the_given_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("pycm.test.component")
    caplog.set_level(logging.DEBUG)
    task = create_guarded_task(_fail(Boom()), name="component", logger=logger)
    await asyncio.wait([task])
    assert [r.name for r in caplog.records] == ["pycm.test.component"]


@pytest.mark.asyncio
async def test_guarded_task_cancellation_is_quiet_and_propagates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    failures: list[BaseException] = []
    clock = FakeClock()
    task = create_guarded_task(clock.sleep(3600), name="sleeper", on_failure=failures.append)
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await settle()
    assert task.cancelled()
    assert caplog.records == []
    assert failures == []


@pytest.mark.asyncio
async def test_guarded_task_cancelled_error_raised_inside_is_not_swallowed() -> None:
    failures: list[BaseException] = []
    task = create_guarded_task(
        _fail(asyncio.CancelledError()), name="self-cancelling", on_failure=failures.append
    )
    await asyncio.wait([task])
    assert task.cancelled()
    assert failures == []


@pytest.mark.asyncio
async def test_guarded_task_success_returns_result_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    failures: list[BaseException] = []

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    task = create_guarded_task(answer(), name="answer", on_failure=failures.append)
    assert await task == 42
    await settle()
    assert caplog.records == []
    assert failures == []


@pytest.mark.asyncio
async def test_guarded_task_broken_on_failure_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=_LOGGER)

    def broken(exc: BaseException) -> None:
        raise ValueError("callback bug")

    task = create_guarded_task(_fail(Boom()), name="worker", on_failure=broken)
    await asyncio.wait([task])
    await settle()
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "task worker failed" in messages[0]
    assert messages[1] == "the on_failure callback of task worker failed"


@pytest.mark.asyncio
async def test_cancel_and_wait_polite_tasks_all_stop() -> None:
    clock = FakeClock()
    tasks = [asyncio.create_task(clock.sleep(3600), name=f"sleeper-{i}") for i in range(3)]
    await settle()
    assert await cancel_and_wait(tasks, timeout=5.0, clock=clock) == []
    assert all(t.cancelled() for t in tasks)


@pytest.mark.asyncio
async def test_cancel_and_wait_without_timeout_waits_for_all() -> None:
    clock = FakeClock()
    tasks = [asyncio.create_task(clock.sleep(3600), name=f"sleeper-{i}") for i in range(2)]
    assert await cancel_and_wait(tasks) == []
    assert all(t.cancelled() for t in tasks)


@pytest.mark.asyncio
async def test_cancel_and_wait_nothing_or_finished_returns_empty() -> None:
    assert await cancel_and_wait([], timeout=1.0) == []

    async def done() -> str:
        return "ok"

    finished = asyncio.create_task(done(), name="finished")
    await finished
    assert await cancel_and_wait([finished], timeout=1.0) == []
    assert finished.result() == "ok"


@pytest.mark.asyncio
async def test_cancel_and_wait_reports_task_that_outlives_the_timeout() -> None:
    clock = FakeClock()
    caught = asyncio.Event()
    polite = asyncio.create_task(clock.sleep(3600), name="polite")
    rude = asyncio.create_task(_stubborn(clock, caught), name="stubborn")
    await settle()

    waiter = asyncio.create_task(
        cancel_and_wait([polite, rude], timeout=5.0, clock=clock), name="cancel_and_wait"
    )
    await settle()
    assert caught.is_set()
    assert polite.cancelled()
    clock.advance(4.999)
    await settle()
    assert not waiter.done()

    clock.advance(0.001)
    assert await waiter == [rude]
    assert not rude.done()

    # Clean up: the second cancellation stops it.
    rude.cancel()
    await asyncio.wait([rude])
    assert rude.cancelled()


@pytest.mark.asyncio
async def test_cancel_and_wait_caller_cancellation_propagates() -> None:
    clock = FakeClock()
    caught = asyncio.Event()
    rude = asyncio.create_task(_stubborn(clock, caught), name="stubborn")
    await settle()
    waiter = asyncio.create_task(
        cancel_and_wait([rude], timeout=60.0, clock=clock), name="cancel_and_wait"
    )
    await settle()
    assert caught.is_set()

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert waiter.cancelled()
    assert clock.sleepers == 1  # the timeout's sleep is gone; only the stubborn task sleeps

    rude.cancel()
    await asyncio.wait([rude])
    assert rude.cancelled()
