"""The reconcile gate: safety beyond client-go for a leader that was paused.

client-go's elector learns it lost the lease only when a renew round fails, up to RenewDeadline
after the round began. A process stopped (SIGSTOP, a VM freeze, a long GC) past its lease wakes
up believing it leads: its workers would take keys while another replica already acts — two
writers. The gate closes that window from the local monotonic clock alone: it is open only
while the last successful acquire or renew began less than RenewDeadline ago. Workers check it
before taking each next key (:mod:`pycm.controller.worker`), so after a pause they start nothing
until the elector has renewed (or the process exits on the loss).

Normal operation never closes it: renewals come every RetryPeriod, and a renew round that keeps
failing ends leadership RetryPeriod + RenewDeadline after the last success at the latest — the
gate closes RetryPeriod before that. A renew attempt that finds another holder closes it at once.

The same gate fences every write of a leader-elected controller: its client
(:class:`pycm.kube.client.WriteFence`) checks it before each mutating request and again as the
request's headers and body are written, and refuses the write
(:class:`pycm.kube.errors.FencedError`) while it is closed — so a reconcile that was running
when the pause began sends nothing more after it either. What it cannot see: a write already
on the wire, and a clock that runs slow. Safety needs the gate to close before
another replica can take the lease: ``RenewDeadline / rate < LeaseDuration − (send-to-commit
latency)`` in real seconds, for a local clock running at ``rate`` × real time (docs/operations.md).
"""

from __future__ import annotations

import asyncio

from pycm.util.clock import Clock

__all__ = ["RenewGate"]


class RenewGate:
    """Open iff leading and ``clock.monotonic() - renewed_at < renew_deadline``.

    ``renewed_at`` is when the last successful acquire/renew attempt *began* (the write landed
    after it, so the age is never understated); None while not leading."""

    def __init__(self, clock: Clock, renew_deadline: float) -> None:
        self._clock = clock
        self.renew_deadline = renew_deadline
        self.renewed_at: float | None = None
        # Waiters of wait_open, woken on each renew (and on close, to re-check and wait again).
        self._waiters: set[asyncio.Future[None]] = set()

    def renewed(self, attempt_began: float) -> None:
        self.renewed_at = attempt_began
        self._wake()

    def close(self) -> None:
        """Leadership ended (or never began): closed until the next acquisition."""
        self.renewed_at = None
        self._wake()

    def age(self) -> float | None:
        """Seconds since the last successful renew began, or None when not leading."""
        if self.renewed_at is None:
            return None
        return self._clock.monotonic() - self.renewed_at

    def is_open(self) -> bool:
        age = self.age()
        return age is not None and age < self.renew_deadline

    async def wait_open(self) -> None:
        """Return once the gate is open (at once if it is)."""
        while not self.is_open():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)
            try:
                await waiter
            finally:
                self._waiters.discard(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
