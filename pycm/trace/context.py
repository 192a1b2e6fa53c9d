"""Span context: the current step lives in a contextvar, so children nest without being passed.

A step (:class:`pycm.trace.step.Step`, made by ``Bus.step``) emits its begin event on entry and
its end event (with ``dur_ns``) on exit, both carrying the same span id; events emitted inside
it — child steps and points — carry its span as ``parent_id`` and share its trace id. asyncio
copies the context into each task, so a task started inside a step belongs to that step's trace
— right for a helper task, wrong for a long-lived loop (workers, the lease renewer, servers)
started during start-up: each of its steps would join the start-up trace. Such loops start in
:func:`root_context` (or under :class:`detached`), so each unit of their work is a trace root.

Ids are W3C-sized: a 32-hex-digit trace id and 16-hex-digit span ids, never all zeros.

A root reconcile (pycm.controller.worker) draws no ids: they are derived, when something reads
them, from its bus's id key and the seq of its begin record (:func:`new_id_key`,
:func:`reconcile_ids`), and its contextvar value holds that record in place of the ids
(``[calls, begin record]``; :func:`current_span` and the bus resolve it). Every reader
derives the same ids from the same record. (A bus's key is drawn again in a forked child.)
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
from typing import Any

from pycm.trace.events import Outcome, StepEnd

__all__ = [
    "SpanContext",
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

IdKey = tuple[str, int, int]
"""A bus's key for the ids of its reconcile records (:func:`new_id_key`)."""

SpanValue = tuple[str, str] | tuple[str, str, list[Any]] | list[Any]
"""What the span contextvar holds: (trace_id, span_id), plus — inside a step that counts API
calls (a reconcile, and the steps nested in it) — the counter, ``calls[0]`` calls so far. One
contextvar for both: a reconcile sets and resets one, not two (each set/reset pair is ~1.6k
instructions). A root reconcile holds one list, ``[calls, begin record]``: its own counter (so
``calls[0]`` counts), and, in place of its ids, the record they are derived from when read
(:func:`span_ids`; the record's layout is pycm.trace.records's). One allocation, not a tuple and a
list."""

_current: contextvars.ContextVar[SpanValue | None] = contextvars.ContextVar(
    "pycm_trace_span", default=None
)

_ERROR_TEXT_LIMIT = 200

# Ids only need to be unique, not secret: a Mersenne Twister seeded from os.urandom. They are
# drawn and formatted in batches, all in C: one getrandbits for the batch, bytes.hex with a
# separator every id, split — then each id is a list pop (~0.1k instructions, ~0.4k with its
# share of the batch), where drawing and formatting each id alone costs ~2.8k (getrandbits,
# to_bytes, hex: three allocations). A batch holding 16 zero digits in a row is drawn again,
# so no id, nor a root trace id's low half (its span id), is ever all zeros.
_rng = random.Random(os.urandom(16))
_bits = _rng.getrandbits
_ZERO_SPAN = "0" * 16
_BATCH = 256  # ids a batch: 8 KiB of hex for trace ids

_trace_ids: list[str] = []
_span_ids: list[str] = []
take_trace_id = _trace_ids.pop
"""``take_trace_id()``: the next pooled trace id; IndexError when the pool is empty (then call
:func:`new_trace_id`, which refills it). For hot paths that inline it."""
take_span_id = _span_ids.pop
"""``take_span_id()``: as :data:`take_trace_id`, for span ids (:func:`new_span_id`)."""


def _refill(pool: list[str], nbytes: int) -> None:
    while True:
        text = _bits(8 * nbytes * _BATCH).to_bytes(nbytes * _BATCH).hex(" ", nbytes)
        if _ZERO_SPAN not in text:
            pool.extend(text.split(" "))
            return


def _reseed() -> None:
    _rng.seed(os.urandom(16))
    # Ids drawn before the fork are the parent's to hand out.
    _trace_ids.clear()
    _span_ids.clear()


if hasattr(os, "register_at_fork"):
    # A forked child would otherwise draw the same ids as its parent.
    os.register_at_fork(after_in_child=_reseed)


def new_trace_id() -> str:
    """A random 32-hex-digit trace id, never all zeros (nor its low half)."""
    try:
        return take_trace_id()
    except IndexError:
        _refill(_trace_ids, 16)
        return take_trace_id()


def new_span_id() -> str:
    """A random 16-hex-digit span id, never all zeros."""
    try:
        return take_span_id()
    except IndexError:
        _refill(_span_ids, 8)
        return take_span_id()


_MASK_64 = (1 << 64) - 1


def new_id_key() -> IdKey:
    """A key for the ids of one bus's reconciles: (the trace ids' high half as 16 hex digits,
    an odd 64-bit multiplier, a 64-bit addend), from os.urandom, so unpredictable across runs.

    A reconcile whose begin record has seq ``s`` has the span id ``(s * mult + add) mod 2**64``
    as 16 hex digits, and the trace id ``high + span id`` (a root's span id is its trace id's
    low half, as :func:`new_root_ids` gives). An odd multiplier makes the low half a bijection
    of the seq, so the bus's seqs (unique, increasing) give unique ids; the high half is random
    per key, so two buses' ids differ too. Exactly one seq mod 2**64 maps to a zero low half:
    the key is drawn again until that seq is past 2**63, which a bus never reaches, so no span
    id is all zeros (nor, with a nonzero high half, any trace id). The low half is that Weyl
    step passed through splitmix64's finalizer (:func:`root_low`, a bijection that keeps 0 at
    0, so both facts hold): the Weyl step alone spreads consecutive seqs evenly only for a
    "good" multiplier — with one near a small fraction of 2**64 (1, 2**63 + 1, ...) runs of
    consecutive reconciles fell on the same side of the tail sampler's ratio bound, which
    kept all or none of them. Within a run the ids are not secret: they need only be unique
    (as W3C asks), not unguessable from one another."""
    while True:
        bits = int.from_bytes(os.urandom(24))
        high = f"{bits >> 128:016x}"
        mult = (bits >> 64) & _MASK_64 | 1
        add = bits & _MASK_64
        zero_seq = (-add * pow(mult, -1, 1 << 64)) & _MASK_64
        if high != _ZERO_SPAN and zero_seq >= 1 << 63:
            return high, mult, add


# splitmix64's finalizer's multipliers (root_low; pycm.otel.sink inlines the same steps).
MIX_1 = 0xBF58476D1CE4E5B9
MIX_2 = 0x94D049BB133111EB


def root_low(key: IdKey, seq: int) -> int:
    """The span id, as a number, of the root reconcile whose begin record has ``seq``: the
    key's Weyl step, mixed by splitmix64's finalizer (see :func:`new_id_key`)."""
    z = (seq * key[1] + key[2]) & _MASK_64
    z = ((z ^ (z >> 30)) * MIX_1) & _MASK_64
    z = ((z ^ (z >> 27)) * MIX_2) & _MASK_64
    return z ^ (z >> 31)


def reconcile_ids(key: IdKey, seq: int) -> SpanContext:
    """(trace_id, span_id) of the reconcile whose begin record has ``seq``."""
    low = f"{root_low(key, seq):016x}"
    return key[0] + low, low


def record_ids(begin: tuple[Any, ...]) -> SpanContext:
    """(trace_id, span_id) of a reconcile's begin record (its layout is pycm.trace.records's: the
    seq at [1], the head at [2], and in the head at [1] the bus's id key for a root, whose
    ids are derived, else the pair)."""
    ids = begin[2][1]
    if len(ids) == 3:
        return reconcile_ids(ids, begin[1])
    pair: SpanContext = ids
    return pair


def span_ids(span: SpanValue) -> SpanContext:
    """(trace_id, span_id) of a span contextvar value, derived for a root reconcile's."""
    if type(span) is list:
        return record_ids(span[1])  # a root reconcile's [calls, begin record]
    return span[0], span[1]


def new_root_ids() -> SpanContext:
    """(trace_id, span_id) for a root span: the span id is the trace id's low half."""
    trace_id = new_trace_id()
    return trace_id, trace_id[16:]


def note_call() -> None:
    """Count one API call in the innermost counting step of this context, if any (the API
    client calls it per request; tasks started inside the step count too)."""
    span = _current.get()
    if span is not None:
        if type(span) is list:  # a root reconcile's own counter
            span[0] += 1
        elif len(span) == 3:
            span[2][0] += 1


# The raw operations, bound once, for a hot path that opens a span without a Step (the
# worker's reconcile: pycm.controller.worker) and must leave the context as a Step would.
get_span = _current.get
set_span = _current.set
"""``token = set_span((trace_id, span_id, calls))`` opens a span that counts API calls in
``calls[0]`` (``(trace_id, span_id)``: one that does not); ``reset_span(token)`` closes it."""
reset_span = _current.reset


def current_span() -> SpanContext | None:
    """The (trace_id, span_id) of the innermost open step in this context, if any."""
    span = _current.get()
    return None if span is None else span_ids(span)


def root_context() -> contextvars.Context:
    """A copy of this context without the current span, for ``create_task(..., context=...)``:
    the task's steps begin traces of their own instead of joining the creator's.

    The span is left out, not set to None (the same to every reader): the controllers' workers
    run in such a context and open a span per reconcile, and opening one where the variable is
    unset and closing it again (an insert into the context's map and a removal leaving it
    empty) measured ~800 instructions and ~17 cache misses less a reconcile than replacing a
    None twice (callgrind, bench.controllers' no-op sync)."""
    ctx = contextvars.copy_context()
    if _current not in ctx:
        return ctx
    root = contextvars.Context()
    for var, value in ctx.items():
        if var is not _current:
            root.run(var.set, value)
    return root


class detached:  # lower case: used as ``with detached(): ...``, like a function
    """No current span inside the block: steps begin new traces, tasks created inside start in
    a context with no span, and API calls made inside count in no enclosing step."""

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
