"""The reconcile contract, on one page: what a sync returns or raises, and what the worker
(:mod:`pycm.controller.worker`) does with the key then.

=============================== ==================================================== =========
sync ended with                 the worker then                                      result
=============================== ==================================================== =========
``Result()`` / ``None``         ``forget`` (the key's retry count resets)            success
``Result(requeue_after=d)``     ``forget``, then ``add_after(key, d)``               requeue_after
``Result(requeue=True)``        ``add_rate_limited`` (backoff, no error)             requeue
a 409 Conflict                  ``add_rate_limited``, logged quietly                 conflict
:class:`TerminalError`          ``drop`` (forget, ``queue.drop`` event), counted     error
any other exception             ``add_rate_limited`` while retries < max_retries     error
                                (for ever when it is None), else ``drop`` — logged
                                once, counted, the worker lives on
cancellation                    propagates (the controller is stopping)
=============================== ==================================================== =========

The plain success is handled inline by the worker (``Controller.process``, the hot path); every
other row by :class:`pycm.controller.outcomes.OutcomeHandler`.

With a :class:`~pycm.workqueue.priority_queue.PriorityQueue` (``priority_queue=True``, or
``Controller.use_priority_queue``), ``Controller.enqueue`` gives the keys of initial-list adds
and resyncs ``LOW_PRIORITY`` and every other event the default priority, and the requeues above
keep the priority the key was taken with (as controller-runtime's controller does), so a retry
of a fresh change does not fall behind the initial list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_RETRIES", "Result", "SyncHandler", "TerminalError"]

DEFAULT_MAX_RETRIES = 15  # KCM's deployment and replicaset controllers


class TerminalError(Exception):
    """A sync failure that retrying cannot fix: the key is dropped at once."""


@dataclass(frozen=True, slots=True)
class Result:
    requeue: bool = False
    requeue_after: float = 0.0
    action: str = ""  # what the sync did, for the trace: "noop", "scaled_up", ...
    uid: str = ""
    api_calls: int = 0


SyncHandler = Callable[[str], Awaitable[Result | None]]
"""``async sync(key) -> Result | None`` — injectable, so tests call it directly."""
