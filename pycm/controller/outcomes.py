"""How a reconcile that did not end in a plain success ends: requeued (after a delay, or rate
limited), retried with backoff, or dropped — the rows of the reconcile contract
(:mod:`pycm.controller.reconcile`) other than the first, which the worker handles inline
(``Controller.process``, the hot path, keeps its coroutine small: see there).

Each of these ends also writes the reconcile's end record, closes its span and counts it, and
names the reconcile as the cause of the key's next one (a requeue or a retry: its trigger).
"""

from __future__ import annotations

import logging
from contextvars import Token
from typing import Any, Protocol

from pycm.controller.bound_metrics import BoundMetrics
from pycm.controller.reconcile import Result, TerminalError
from pycm.kube.errors import ApiError, Conflict, FencedError
from pycm.trace.causes import Trigger, cause_of_record
from pycm.trace.context import SpanValue, error_text, reset_span
from pycm.trace.kinds import ReconcileResult
from pycm.trace.reconciles import ReconcileRecorder
from pycm.util.clock import Clock
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = ["OutcomeHandler", "SpanToken", "is_api_error"]

# The worker's log (its name is what users filter on: the handling moved here from it).
log = logging.getLogger("pycm.controller.worker")

# The enum members, bound once: reading one off its class goes through EnumType.__getattr__.
_SUCCESS = ReconcileResult.SUCCESS
_REQUEUE = ReconcileResult.REQUEUE
_REQUEUE_AFTER = ReconcileResult.REQUEUE_AFTER
_ERROR = ReconcileResult.ERROR

SpanToken = Token[SpanValue | None]
"""What closes a reconcile's span (the span contextvar's token)."""


class Owner(Protocol):
    """The subset of :class:`~pycm.controller.worker.Controller` the handling reads afresh
    each time (its queue may be swapped for a priority queue, its max_retries set)."""

    name: str
    queue: RateLimitingQueue[str]
    max_retries: int | None


class OutcomeHandler:
    """The ends of one controller's reconciles other than the plain success. ``calls`` is the
    reconcile's span value (``[api calls, begin record]``), ``token`` what closes its span,
    ``start`` the metric clock's reading at its start."""

    __slots__ = ("_bound", "_clock", "_owner", "_recorder", "_requeues", "_triggers")

    def __init__(
        self,
        owner: Owner,
        recorder: ReconcileRecorder,
        triggers: dict[str, Trigger],
        requeues: dict[str, Trigger],
        bound: BoundMetrics | None,
        clock: Clock,
    ) -> None:
        self._owner = owner
        self._recorder = recorder
        self._triggers = triggers  # the owner's: the newest trigger per waiting key
        self._requeues = requeues  # the owner's: the cause of each key's delayed add
        self._bound = bound
        self._clock = clock

    def requeued(
        self, key: str, result: Result, calls: list[Any], token: SpanToken, start: float
    ) -> ReconcileResult:
        """The end of a reconcile whose sync asked to be requeued: after a delay
        (``requeue_after``, the retries forgotten) or rate limited (``requeue``). A failure of
        the handling ends the step with its error and propagates."""
        queue = self._owner.queue
        requeue_after = result.requeue_after
        requeue_after_ms = 0.0
        try:
            if requeue_after > 0.0:
                self.requeued_by(key, calls[1], "requeue_after")
                queue.forget(key)
                queue.add_after(key, requeue_after, "requeue_after")
                outcome = _REQUEUE_AFTER
                requeue_after_ms = requeue_after * 1000
            else:
                self.requeued_by(key, calls[1], "requeue")
                queue.add_rate_limited(key)
                outcome = _REQUEUE
        except BaseException as exc:
            self._recorder.end_raised(calls[1], exc)
            self.ended(token, start, _SUCCESS)
            raise
        self._recorder.end_requeued(
            calls[1],
            outcome._value_,
            result.action,
            result.uid,
            result.api_calls or calls[0],
            requeue_after_ms,
        )
        self.ended(token, start, outcome)
        return outcome

    def failed(
        self,
        key: str,
        exc: BaseException,
        retries: int,
        calls: list[Any],
        token: SpanToken,
        start: float,
    ) -> ReconcileResult | None:
        """The end of a reconcile whose sync raised ``exc``: an Exception is handled under the
        contract and its outcome returned; anything else (cancelled) ends the step and returns
        None, for the worker to re-raise it. A failure of the handling ends the step with its
        error and propagates, as a step's would."""
        if not isinstance(exc, Exception):
            self._recorder.end_raised(calls[1], exc)
            self.ended(token, start, _SUCCESS)
            return None
        try:
            if isinstance(exc, TerminalError):
                owner = self._owner
                owner.queue.drop(key, reason="terminal error")
                log.error("%s: dropping %s: terminal error: %s", owner.name, key, exc)
                if self._bound is not None:
                    self._bound.terminal_errors_total.inc()
                    self._bound.dropped("terminal error").inc()
                outcome = _ERROR
            else:
                outcome = self._retry_or_drop(key, exc, retries, calls[1])
            error = error_text(exc)
        except BaseException as failed:
            # (The metric counts what the handling got to: nothing.)
            self._recorder.end_raised(calls[1], failed)
            self.ended(token, start, _SUCCESS)
            raise
        self._recorder.end_error(calls[1], outcome._value_, error, calls[0])
        self.ended(token, start, outcome)
        return outcome

    def ended(self, token: SpanToken, start: float, outcome: ReconcileResult) -> None:
        """After the end record of a reconcile that did not end in the worker's own success
        path (which does what this does, inline): the span closed, the metrics."""
        reset_span(token)
        metrics = self._bound
        if metrics is not None:
            metrics.active_workers.dec()
            metrics.reconcile_time_seconds.observe(self._clock.monotonic() - start)
            metrics.reconcile_total(outcome).inc()
            if outcome is _ERROR:
                metrics.reconcile_errors_total.inc()

    def requeued_by(self, key: str, begin: tuple[Any, ...], event: str) -> None:
        """The reconcile of ``begin`` asked for ``key`` again (a retry, a requeue): the next
        reconcile's cause is this one (merged with an event that already waits for it)."""
        trigger = Trigger("", "", event, object=key, cause=cause_of_record(begin))
        waiting = self._triggers.get(key)
        self._triggers[key] = trigger if waiting is None else waiting.merge(trigger)
        # The add itself comes later (a backoff, a requeue_after): a watch event may bring the
        # key back first, and that reconcile takes the trigger above; the delayed add then still
        # reconciles the key once more (as client-go's queue does), and names this cause.
        self._requeues[key] = trigger

    def _retry_or_drop(
        self, key: str, exc: Exception, retries: int, begin: tuple[Any, ...]
    ) -> ReconcileResult:
        owner = self._owner
        name = owner.name
        if isinstance(exc, Conflict):
            log.debug("%s: conflict syncing %s, requeueing: %s", name, key, exc)
            self.requeued_by(key, begin, "retry")
            owner.queue.add_rate_limited(key)
            return ReconcileResult.CONFLICT
        max_retries = owner.max_retries
        if max_retries is None or retries < max_retries:
            # An unexpected exception's traceback is logged at the key's first failure only: a
            # sync that fails the same way on every retry would repeat it up to max_retries
            # times (an API error is its message alone, as KCM's HandleError logs it, and so is
            # a write the lease fence refused: its message names the renew age and deadline).
            log.warning(
                "%s: error syncing %s (retry %d): %s",
                name,
                key,
                retries,
                exc,
                exc_info=retries == 0 and not is_api_error(exc),
            )
            self.requeued_by(key, begin, "retry")
            owner.queue.add_rate_limited(key)
        else:
            log.error(
                "%s: dropping %s out of the queue after %d retries: %s", name, key, retries, exc
            )
            owner.queue.drop(key, reason="max retries")
            if self._bound is not None:
                self._bound.dropped("max retries").inc()
        return ReconcileResult.ERROR


def is_api_error(exc: Exception) -> bool:
    return isinstance(exc, (ApiError, FencedError))
