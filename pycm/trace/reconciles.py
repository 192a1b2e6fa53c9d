"""How a reconcile is traced: :class:`ReconcileRecorder`, one per controller, holds what its
begin and end records need (the bus, the controller's head, the bus's clock) and appends the
ends other than the plain success; compact records, layouts in pycm.trace.records.

The worker (pycm.controller.worker.Controller.process) writes a reconcile's begin and its
plain-success end itself, from the recorder's parts, as the recorder's own ends are written
(stamped with the bus's next seq, delivered by ``EventLog._put``): the hot path, where two
Python calls were ~1.2k instructions a reconcile (callgrind), an eighth of its tracing. It is
the one place outside pycm.trace that touches the bus's fields (``_seq``, ``_put`` and the
wall offset's two), and only there.

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
from pycm.trace.context import SpanValue, error_text, new_span_id, span_ids
from pycm.trace.events import Outcome
from pycm.trace.kinds import ReconcileResult
from pycm.trace.records import RECONCILE_END, RECONCILE_FAILED, Record

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
    ``bus``: the begin (``head``, or :meth:`nested_head` inside a step) and the plain
    success's end are the worker's to write (the module's docstring), the other ends are
    :meth:`end_requeued`, :meth:`end_error` and :meth:`end_raised`. It keeps its controller's
    head (renewed by the bus: :meth:`renew_head`) and the bus's clock reading, bound once."""

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
