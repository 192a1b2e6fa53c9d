"""One controller's init and run, checked and contained: the init traced
(``controller.init``), a failure in it one line naming the controller; its run checked to be
a coroutine function, an exception out of it one line that stops the manager, a run that
returns while the manager runs a warning. A plugin's init and run are third-party code."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from pycm.app.errors import ManagerError
from pycm.controller import ControllerContext, ControllerDescriptor, Runnable
from pycm.kube.restmapper import NoKindMatchError
from pycm.trace.bus import Bus
from pycm.trace.kinds import ControllerInitBegan

__all__ = ["checked_runnable", "init_controller"]

log = logging.getLogger("pycm.app")


async def init_controller(
    ctx: ControllerContext,
    descriptor: ControllerDescriptor,
    *,
    who: str,
    bus: Bus,
    fail: Callable[[str], None],
    stopping: Callable[[], bool],
) -> Runnable | None:
    """One controller's init, traced and checked: its run function (contained), or None
    ("not started"). A NoKindMatchError propagates (the caller decides: fail or wait);
    any other failure is a ManagerError naming the controller (``who``)."""
    failed = f"{who} failed to start: "
    # A builder in this init defaults to its descriptor's retries (None: for ever).
    ctx.max_retries = descriptor.max_retries
    with bus.step(ControllerInitBegan(controller=descriptor.name)) as step:
        try:
            runnable = await descriptor.init(ctx)
        except NoKindMatchError:
            raise
        except Exception as exc:  # a plugin's init is third-party code
            raise ManagerError(f"{failed}{type(exc).__name__}: {exc}") from None
        if runnable is not None and not callable(runnable):
            raise ManagerError(
                f"{failed}init returned a value of type {type(runnable).__name__}, "
                "not an async run function or None"
            )
        step.finish(started=runnable is not None)
    if runnable is None:
        return None
    return checked_runnable(runnable, who, fail, stopping)


def checked_runnable(
    runnable: Runnable, who: str, fail: Callable[[str], None], stopping: Callable[[], bool]
) -> Runnable:
    """``runnable`` checked and contained: a plain function (``def run()`` where ``async def``
    was meant) is a start-up error, not a TypeError from deep in the task machinery; an
    exception out of the running controller stops the manager with one line naming it (its
    traceback at -v=4), as a failed init does; a run that returns while the manager runs (a
    controller that set itself up and returned, where it should wait until cancelled) is a
    warning, for it does no more work and nothing else would say so."""

    def run() -> Coroutine[Any, Any, None]:
        coro: object = runnable()  # typed, but a plugin is third-party code
        if not asyncio.iscoroutine(coro):
            what = "None" if coro is None else f"a value of type {type(coro).__name__}"
            raise ManagerError(
                f"{who} failed to start: run() returned {what}, not a coroutine (async def?)"
            )
        return _contained(coro, who, fail, stopping)

    return run


async def _contained(
    coro: Coroutine[Any, Any, None],
    who: str,
    fail: Callable[[str], None],
    stopping: Callable[[], bool],
) -> None:
    try:
        await coro
    except Exception as exc:  # a controller's run is third-party code; cancellation passes
        log.debug("%s failed", who, exc_info=exc)
        fail(f"{who} failed: {type(exc).__name__}: {exc}")
        return
    if not stopping():
        log.warning(
            "%s returned while the manager runs: it does no more work (a run should wait "
            "until it is cancelled)",
            who,
        )
