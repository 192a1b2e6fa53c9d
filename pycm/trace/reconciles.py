"""How a reconcile is traced: :class:`ReconcileRecorder`, one per controller, appends its begin
and end to the bus as compact records (layouts in pycm.trace.records).

The worker (pycm.controller.worker.Controller.process) calls it around every sync; it is the
only writer of reconcile records, and nothing outside pycm.trace touches the bus's fields.
Every reconcile pays for this, and against a no-op sync a step object, two context managers
and built events cost a quarter of the sync, so a reconcile is traced the way ``Bus.step``
traces a step, without its machinery: the begin and the end are each one tuple appended to the
bus (readers get the same frozen events, built when read;
tests/controller/test_worker_events.py holds them field by field), the monotonic clock (bound
once per recorder) is read once at either end and the readings are what the records keep (the
begin's wall time and the duration are derived when read, with the bus's wall offset the begin
holds: ``Bus.offset_at``), what a controller's root reconciles repeat is one tuple they share
(its head: ``Bus.reconcile_head``), a root reconcile draws no ids (they are derived from the
bus's id key and the begin's seq when read: pycm.trace.context.reconcile_ids), and delivery is
the bus's own one call (``EventLog._put``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pycm.trace.bus import Bus
from pycm.trace.causes import Trigger
from pycm.trace.context import SpanValue, error_text, new_span_id, span_ids
from pycm.trace.events import Outcome
from pycm.trace.kinds import ReconcileResult
from pycm.trace.records import RECONCILE_BEGIN, RECONCILE_END, RECONCILE_FAILED, Record

__all__ = ["ReconcileRecorder", "failure"]

# The values the records hold (plain str: a record of plain values is one the GC untracks;
# see pycm.trace.records): a result's, and an end's outcome.
SUCCESS: str = ReconcileResult.SUCCESS._value_
ERROR: str = Outcome.ERROR._value_
CANCELLED: str = Outcome.CANCELLED._value_


def failure(exc: BaseException) -> tuple[str, str]:
    """(outcome value, error) of a reconcile that ``exc`` ended, as a step's end has them."""
    if isinstance(exc, asyncio.CancelledError):
        return CANCELLED, ""
    return ERROR, error_text(exc)


class ReconcileRecorder:
    """The reconcile records of one controller (``controller``, watching ``resource``) on
    ``bus``: :meth:`begin` before the sync, then one of :meth:`end_ok` (the plain success,
    the hot path), :meth:`end_requeued`, :meth:`end_error` or :meth:`end_raised`. It keeps
    its controller's head (renewed by the bus: :meth:`renew_head`) and the bus's clock
    reading, bound once."""

    __slots__ = ("__weakref__", "bus", "controller", "head", "monotonic_ns", "resource")

    def __init__(self, bus: Bus, controller: str, resource: str) -> None:
        self.bus = bus
        self.controller = controller
        self.resource = resource
        # The bus's monotonic clock, bound once.
        self.monotonic_ns: Callable[[], int] = bus.clock.monotonic_ns
        # What every root reconcile record of this controller repeats (pycm.trace.records).
        self.head: Record = bus.reconcile_head(self, controller, resource)

    def renew_head(self) -> None:
        """Take a new reconcile head from the bus (its instance or id key changed)."""
        self.head = self.bus.reconcile_head(self, self.controller, self.resource)

    def begin(
        self,
        key: str,
        wait_ns: int,
        retries: int,
        trigger: Trigger | None,
        parent: SpanValue | None,
    ) -> Record:
        """Append the begin of a reconcile of ``key`` (queued ``wait_ns``, retried ``retries``
        times so far, caused by ``trigger``) inside the span ``parent`` (None: the root of a
        trace of its own, the workers' case), and return its record: the end's calls take it,
        and its head's ids (``record[2][1]``) are a nested reconcile's span ids."""
        # Bound callables are read into locals before the call: a method call on an instance
        # attribute (not a method of the class) is a generic lookup in Python 3.11.
        monotonic_ns = self.monotonic_ns
        start_ns = monotonic_ns()
        bus = self.bus
        bus._seq = seq = bus._seq + 1
        # Bus.emit's stamping (as Step does), of the begin's record. A root shares its
        # controller's head: its ids are derived from the bus's key in it and the seq when read.
        begin = (
            RECONCILE_BEGIN,
            seq,
            self.head if parent is None else self.nested_head(parent),
            start_ns,
            bus._wall_offset if start_ns < bus._offset_due else bus.offset_at(start_ns),
            key,
            wait_ns,
            retries,
            trigger,
        )
        put = bus._put  # the delivery (EventLog), read afresh for each record
        put(begin)
        return begin

    def end_ok(self, begin: Record, action: str, uid: str, api_calls: int) -> None:
        """Append the end of ``begin``'s reconcile that succeeded (its result ``success``,
        outcome ok)."""
        monotonic_ns = self.monotonic_ns
        bus = self.bus
        bus._seq = seq = bus._seq + 1
        end = (RECONCILE_END, seq, begin, monotonic_ns(), SUCCESS, action, uid, api_calls, 0.0)
        put = bus._put
        put(end)

    def end_requeued(
        self,
        begin: Record,
        result: str,
        action: str,
        uid: str,
        api_calls: int,
        requeue_after_ms: float,
    ) -> None:
        """Append the end of ``begin``'s reconcile that asked to be requeued (``result``, the
        value of requeue or requeue_after; outcome ok)."""
        self._end(begin, RECONCILE_END, result, action, uid, api_calls, requeue_after_ms, ())

    def end_error(self, begin: Record, result: str, error: str, api_calls: int) -> None:
        """Append the end of ``begin``'s reconcile whose sync raised and was handled
        (``result``'s value; outcome error, with the error's text)."""
        self._end(begin, RECONCILE_FAILED, result, "", "", api_calls, 0.0, (ERROR, error))

    def end_raised(self, begin: Record, exc: BaseException) -> None:
        """Append the end of ``begin``'s reconcile that ``exc`` ended: cancelled, or its
        handling failed (outcome cancelled or error, as a step's end has them)."""
        self._end(begin, RECONCILE_FAILED, SUCCESS, "", "", 0, 0.0, failure(exc))

    def _end(
        self,
        begin: Record,
        tag: int,
        result: str,
        action: str,
        uid: str,
        api_calls: int,
        requeue_after_ms: float,
        failed: tuple[str, ...],
    ) -> None:
        # The layouts: a failed end's outcome and error follow the common nine.
        end_ns = self.monotonic_ns()
        bus = self.bus
        bus._seq = seq = bus._seq + 1
        record = (tag, seq, begin, end_ns, result, action, uid, api_calls, requeue_after_ms)
        bus.deliver(record + failed if failed else record)

    def nested_head(self, parent: SpanValue) -> tuple[Any, ...]:
        """The head of a reconcile nested in the span ``parent`` (in place of :attr:`head`):
        ids of its own in that trace, the parent's span id as its parent."""
        trace_id, parent_id = span_ids(parent)
        bus = self.bus
        return (bus.instance, (trace_id, new_span_id()), parent_id, self.controller, self.resource)
