"""Named, guarded asyncio tasks, and stopping them.

Every long-lived component of pycm runs as a named task. :func:`create_guarded_task` makes one
whose unexpected death is never silent: the exception is logged with the task's name and handed
to an ``on_failure`` callback (which typically stops the manager), and it stays retrievable from
the task. Cancellation is how pycm stops things, so a cancelled task is not a failure and is not
logged; the guard never touches the coroutine, so ``CancelledError`` is never swallowed.

:func:`cancel_and_wait` is the stopping half: cancel, wait up to a timeout (on an injectable
:class:`~pycm.util.clock.Clock`), and report what did not stop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["cancel_and_wait", "create_guarded_task"]

_T = TypeVar("_T")
_log = logging.getLogger(__name__)

# The loop holds tasks only weakly; a guarded task nobody else keeps must not be collected
# mid-flight. A task is in this set from creation until it is done.
_RUNNING: set[asyncio.Task[Any]] = set()


def create_guarded_task(
    coro: Coroutine[Any, Any, _T],
    *,
    name: str,
    logger: logging.Logger | None = None,
    on_failure: Callable[[BaseException], None] | None = None,
) -> asyncio.Task[_T]:
    """Start ``coro`` as a task named ``name`` whose failure is logged and reported.

    When the task ends with an exception, it is logged at ERROR (with traceback and the name)
    on ``logger`` (default: this module's), then ``on_failure(exc)`` is called once. A task
    that returns or is cancelled is not reported.
    """
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _RUNNING.add(task)
    task.add_done_callback(functools.partial(_report, logger=logger or _log, on_failure=on_failure))
    return task


def _report(
    task: asyncio.Task[Any],
    *,
    logger: logging.Logger,
    on_failure: Callable[[BaseException], None] | None,
) -> None:
    _RUNNING.discard(task)
    if task.cancelled():
        return
    exc = task.exception()  # also marks it retrieved: no "never retrieved" noise at GC
    if exc is None:
        return
    name = task.get_name()
    logger.error("task %s failed: %r", name, exc, exc_info=exc, extra={"task_name": name})
    if on_failure is not None:
        try:
            on_failure(exc)
        except Exception:
            logger.exception("the on_failure callback of task %s failed", name)


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[Any]],
    *,
    # Not asyncio.timeout(): running out of time is an outcome to report, not an error.
    timeout: float | None = None,  # noqa: ASYNC109
    clock: Clock = REAL_CLOCK,
) -> list[asyncio.Task[Any]]:
    """Cancel ``tasks`` and wait until they stop or ``timeout`` seconds pass.

    Returns the tasks still running, in the given order (empty when all stopped). Their
    results and exceptions are left on them for the caller. With ``timeout=None`` it waits as
    long as it takes. If the caller is cancelled meanwhile, that cancellation propagates.
    """
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    pending = {task for task in tasks if not task.done()}
    if pending:
        if timeout is None:
            await asyncio.wait(pending)
        else:
            await _wait_all(pending, timeout, clock)
    return [task for task in tasks if not task.done()]


async def _wait_all(pending: set[asyncio.Task[Any]], limit: float, clock: Clock) -> None:
    """Wait until every task in ``pending`` is done or ``clock`` says ``limit`` has passed."""
    timer = asyncio.get_running_loop().create_task(
        clock.sleep(limit), name="cancel_and_wait:timeout"
    )
    try:
        while pending and not timer.done():
            _, still = await asyncio.wait(pending | {timer}, return_when=asyncio.FIRST_COMPLETED)
            pending = still - {timer}
    finally:
        timer.cancel()
        # asyncio.wait never raises the timer's CancelledError, so ours (if any) is kept.
        await asyncio.wait({timer})
