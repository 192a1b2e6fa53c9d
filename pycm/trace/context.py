"""Span context: the current step lives in a contextvar, so children nest without being passed.

A step (:class:`pycm.trace.bus.Step`, made by ``Bus.step``) emits its begin event on entry and
its end event (with ``dur_ns``) on exit, both carrying the same span id; events emitted inside
it — child steps and points — carry its span as ``parent_id`` and share its trace id. asyncio
copies the context into each task, so a task started inside a step belongs to that step's trace
— right for a helper task, wrong for a long-lived loop (workers, the lease renewer, servers)
started during start-up: each of its steps would join the start-up trace. Such loops start in
:func:`root_context` (or under :class:`detached`), so each unit of their work is a trace root.

Ids are W3C-sized: a 32-hex-digit trace id and 16-hex-digit span ids, never all zeros.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random

from pycm.trace.events import Outcome, StepEnd

__all__ = [
    "SpanContext",
    "count_calls",
    "current_span",
    "detached",
    "error_text",
    "new_root_ids",
    "new_span_id",
    "new_trace_id",
    "note_call",
    "root_context",
]

SpanContext = tuple[str, str]
"""(trace_id, span_id) of the current step."""

_current: contextvars.ContextVar[SpanContext | None] = contextvars.ContextVar(
    "pycm_trace_span", default=None
)

_ERROR_TEXT_LIMIT = 200

# Ids only need to be unique, not secret: a Mersenne Twister seeded from os.urandom draws them
# several times cheaper than os.urandom per id (batches of os.urandom do not help: cutting a
# batch into strings costs what drawing each id does). ``to_bytes().hex()`` formats an id ~1.4x
# cheaper than an f-string; ``or 1`` keeps it from being all zeros.
_rng = random.Random(os.urandom(16))
_bits = _rng.getrandbits
_ZERO_SPAN = "0" * 16
_ONE_SPAN = "0" * 15 + "1"


def _reseed() -> None:
    _rng.seed(os.urandom(16))


if hasattr(os, "register_at_fork"):
    # A forked child would otherwise draw the same ids as its parent.
    os.register_at_fork(after_in_child=_reseed)


def new_root_ids() -> SpanContext:
    """(trace_id, span_id) for a root span: one draw, the span id is the trace id's low half."""
    trace_id = (_bits(128) or 1).to_bytes(16).hex()
    span_id = trace_id[16:]
    return trace_id, (_ONE_SPAN if span_id == _ZERO_SPAN else span_id)


def new_trace_id() -> str:
    return (_bits(128) or 1).to_bytes(16).hex()


def new_span_id() -> str:
    return (_bits(64) or 1).to_bytes(8).hex()


_calls: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "pycm_trace_calls", default=None
)


def note_call() -> None:
    """Count one API call in the innermost :func:`count_calls` block of this context, if any
    (the API client calls it per request; tasks started inside the block count too)."""
    counter = _calls.get()
    if counter is not None:
        counter[0] += 1


class count_calls:  # lower case: it reads as the function it replaced
    """``with count_calls() as calls: ...`` — ``calls[0]`` is the API calls made inside.

    A class, not a generator context manager: every reconcile opens one, and a generator's
    frame and contextlib's wrapper cost several times the contextvar switch itself.
    """

    __slots__ = ("_token",)

    def __enter__(self) -> list[int]:
        counter = [0]
        self._token = _calls.set(counter)
        return counter

    def __exit__(self, *_: object) -> None:
        _calls.reset(self._token)


# The raw operations, bound once, for a hot path that opens a span without a Step (the
# worker's reconcile: pycm.controller.worker) and must leave the context as a Step would.
get_span = _current.get
set_span = _current.set
reset_span = _current.reset
count_calls_into = _calls.set
"""``token = count_calls_into(counter)``: count this context's API calls in ``counter[0]``
until ``stop_counting(token)`` (what :class:`count_calls` does, without a context manager)."""
stop_counting = _calls.reset
draw_bits = _bits
"""``draw_bits(k)``: k random bits for an id (see ``new_root_ids`` for the formatting)."""
ZERO_SPAN_ID = _ZERO_SPAN
ONE_SPAN_ID = _ONE_SPAN


def current_span() -> SpanContext | None:
    """The (trace_id, span_id) of the innermost open step in this context, if any."""
    return _current.get()


def root_context() -> contextvars.Context:
    """A copy of this context with no current span, for ``create_task(..., context=...)``: the
    task's steps begin traces of their own instead of joining the creator's."""
    ctx = contextvars.copy_context()
    ctx.run(_current.set, None)
    return ctx


class detached:  # lower case: used as ``with detached(): ...``, like count_calls
    """No current span inside the block: steps begin new traces, and tasks created inside
    start in a context with no span."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _current.set(None)

    def __exit__(self, *_: object) -> None:
        _current.reset(self._token)


def error_text(exc: BaseException) -> str:
    """A short, single-line description of an exception for an event's ``error`` attribute."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    out = f"{name}: {text}" if text else name
    return out[:_ERROR_TEXT_LIMIT]


def mark_failed(end: StepEnd, exc: BaseException) -> None:
    """Give a step's end event (still its mutable twin) the outcome of ``exc``: cancelled for
    ``CancelledError``, else error with the exception's text, unless the step set them."""
    outcome = Outcome.CANCELLED if isinstance(exc, asyncio.CancelledError) else Outcome.ERROR
    if end.outcome is Outcome.OK:
        end.outcome = outcome  # type: ignore[misc]  # the twin is mutable
    if not end.error and outcome is Outcome.ERROR:
        end.error = error_text(exc)  # type: ignore[misc]
