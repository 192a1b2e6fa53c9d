"""A single-waiter wake-up: one consumer task parks until its producer says "something came".

The shape of every buffer with one reader (a handler's notifications, the informer's FIFO, a
bus subscription, a dashboard viewer): the producer appends and calls :meth:`Wakeup.wake`; the
consumer, finding nothing, awaits :meth:`Wakeup.wait` and then looks again. It is cheaper than an
:class:`asyncio.Event` on the producer's per-item path: with nobody parked, a wake is one
attribute test, and no flag has to be cleared by the consumer.

A wake with nobody waiting is not remembered: the consumer must check its buffer before it
waits (in the same loop turn), which every one of these loops does.
"""

from __future__ import annotations

import asyncio

__all__ = ["Wakeup"]


class Wakeup:
    """One task's wake-up call. Invariant: ``waiter`` is the future of the task parked in
    :meth:`wait`, or None when no task is parked (or it was already woken)."""

    __slots__ = ("waiter",)

    def __init__(self) -> None:
        # Public so that a producer's per-item path can skip the call when nobody waits:
        # ``if wakeup.waiter is not None: wakeup.wake()``.
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        """Wake the parked task, if any (a no-op otherwise)."""
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        """Park until the next :meth:`wake`. Cancelling the waiting task leaves nobody parked."""
        waiter = asyncio.get_running_loop().create_future()
        self.waiter = waiter
        try:
            await waiter
        finally:
            if self.waiter is waiter:
                self.waiter = None

    async def wait_for(self, seconds: float) -> bool:
        """Park until the next :meth:`wake` (True) or until ``seconds`` pass (False)."""
        waiter = asyncio.get_running_loop().create_future()
        self.waiter = waiter
        try:
            await asyncio.wait_for(waiter, seconds)
        except TimeoutError:
            return False
        finally:
            if self.waiter is waiter:
                self.waiter = None
        return True
