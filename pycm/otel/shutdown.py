"""The span processor's bounded shutdown, off the event loop (the sink's last step).

The SDK's shutdown joins its worker thread, which may be stuck on an unreachable collector for
the export timeout; it runs here in a daemon thread the loop waits for, bounded, so neither the
loop nor the process exit waits on the network.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import Protocol, runtime_checkable

__all__ = ["SHUTDOWN_TIMEOUT", "Stoppable", "stop_processor"]

log = logging.getLogger("pycm.otel")


class Stoppable(Protocol):
    """What is stopped: any span processor (the SDK's, or pycm.otel.export's)."""

    def shutdown(self) -> None: ...


@runtime_checkable
class _BoundedShutdown(Protocol):
    """A processor whose shutdown takes a bound (pycm.otel.export.RecordBatchProcessor)."""

    def shutdown_within(self, limit_s: float) -> None: ...


SHUTDOWN_TIMEOUT = 3.0


async def stop_processor(processor: Stoppable, *, limit_s: float) -> bool:
    """Flush and shut ``processor`` down in a daemon thread, waiting at most ``limit_s`` seconds.

    The SDK's shutdown joins its worker thread, which may be stuck on an unreachable collector
    for the export timeout; a daemon thread keeps that from holding the loop (or the process
    exit: asyncio.run would wait for a default-executor thread). Returns whether it finished.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    def call(fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception:
            log.exception("OpenTelemetry span processor shutdown failed")
        finally:
            try:
                loop.call_soon_threadsafe(resolve)
            except RuntimeError:  # the loop closed meanwhile
                pass

    # A processor that takes the bound stops its exporter when it passes (else its worker may
    # go on retrying a stalled collector, in the background, for a minute).
    shutdown: Callable[[], object] = (
        partial(processor.shutdown_within, limit_s)
        if isinstance(processor, _BoundedShutdown)
        else processor.shutdown
    )
    threading.Thread(target=call, args=(shutdown,), name="pycm-otel-shutdown", daemon=True).start()
    try:
        await asyncio.wait_for(done, limit_s)
    except TimeoutError:
        log.warning("OpenTelemetry export did not finish within %.1fs; spans dropped", limit_s)
        return False
    return True
