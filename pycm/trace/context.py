"""Span context: the current step lives in a contextvar, so children nest without being passed.

A :class:`Step` is a context manager that emits its begin event on entry and its end event (with
``dur_ns``) on exit, both carrying the same span id; events emitted inside it — child steps and
points — carry its span as ``parent_id`` and share its trace id. asyncio copies the context into
each task, so a task started inside a step belongs to that step's trace.

Ids are W3C-sized: a 32-hex-digit trace id and 16-hex-digit span ids, never all zeros.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import random
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

from pycm.trace.events import ENVELOPE_FIELDS, Event, Outcome, StepBegin, StepEnd

__all__ = [
    "SpanContext",
    "Step",
    "count_calls",
    "current_span",
    "new_span_id",
    "new_trace_id",
    "note_call",
]

SpanContext = tuple[str, str]
"""(trace_id, span_id) of the current step."""

_current: contextvars.ContextVar[SpanContext | None] = contextvars.ContextVar(
    "pycm_trace_span", default=None
)

# Ids only need to be unique, not secret: a seeded Mersenne Twister is ~10x cheaper than
# os.urandom per id, and a fresh seed per process keeps replicas from colliding.
_rng = random.Random(os.urandom(16))
_bits = _rng.getrandbits

_ERROR_TEXT_LIMIT = 200


def new_trace_id() -> str:
    return f"{_bits(128) or 1:032x}"


def new_span_id() -> str:
    return f"{_bits(64) or 1:016x}"


_calls: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "pycm_trace_calls", default=None
)


def note_call() -> None:
    """Count one API call in the innermost :func:`count_calls` block of this context, if any
    (the API client calls it per request; tasks started inside the block count too)."""
    counter = _calls.get()
    if counter is not None:
        counter[0] += 1


@contextlib.contextmanager
def count_calls() -> Iterator[list[int]]:
    """``with count_calls() as calls: ...`` — ``calls[0]`` is the API calls made inside."""
    counter = [0]
    token = _calls.set(counter)
    try:
        yield counter
    finally:
        _calls.reset(token)


def current_span() -> SpanContext | None:
    """The (trace_id, span_id) of the innermost open step in this context, if any."""
    return _current.get()


def error_text(exc: BaseException) -> str:
    """A short, single-line description of an exception for an event's ``error`` attribute."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    out = f"{name}: {text}" if text else name
    return out[:_ERROR_TEXT_LIMIT]


_set = object.__setattr__
_get_current = _current.get
_set_current = _current.set
_reset_current = _current.reset

# For each begin class: the attribute names it shares with its END, copied from the begin event
# into an end event built by Step.finish(**attrs) or when the block exits without finish().
_shared_fields: dict[type, tuple[str, ...]] = {}
# For each begin class: a generated function building its END in one keyword call from the
# begin event, the duration, the bus's instance and the attributes given to finish() (a dict
# comprehension plus ** unpacking, or stores after construction, would double the cost).
_end_makers: dict[type, Callable[[StepBegin, int, str, dict[str, Any]], StepEnd]] = {}


def _end_maker(
    begin_cls: type[StepBegin],
) -> Callable[[StepBegin, int, str, dict[str, Any]], StepEnd]:
    maker = _end_makers.get(begin_cls)
    if maker is None:
        names = _shared(begin_cls)
        envelope = (
            "trace_id=b.trace_id, span_id=b.span_id, parent_id=b.parent_id, dur_ns=dur_ns,"
            " instance=instance"
        )
        from_begin = "".join(f", {n}=b.{n}" for n in names)
        # Attributes given to finish() win over the ones copied from the begin event.
        overridable = "".join(f", {n}=a.pop({n!r}, b.{n})" for n in names)
        namespace: dict[str, Any] = {"END": begin_cls.END}
        exec(  # generated from dataclass field names only
            "def make(b, dur_ns, instance, a):\n"
            "    if a:\n"
            f"        return END({envelope}{overridable}, **a)\n"
            f"    return END({envelope}{from_begin})\n",
            namespace,
        )
        maker = _end_makers[begin_cls] = namespace["make"]
    return maker


_NO_ATTRS: dict[str, Any] = {}


def _shared(begin_cls: type[StepBegin]) -> tuple[str, ...]:
    names = _shared_fields.get(begin_cls)
    if names is None:
        begin_names = {f.name for f in dataclasses.fields(begin_cls)}
        names = tuple(
            f.name
            for f in dataclasses.fields(begin_cls.END)
            if f.name in begin_names and f.name not in ENVELOPE_FIELDS
        )
        _shared_fields[begin_cls] = names
    return names


class Step:
    """One traced step: use as ``with bus.step(Begin(...)) as s: ...; s.finish(attr=...)``.

    Without ``finish`` the step ends with ``END`` carrying the attributes it shares with the
    begin event (outcome ok); an exception ends it with outcome error (or cancelled for
    ``CancelledError``) and the exception's text, and propagates.

    This class is on every hot path (each reconcile, each API call's parent): it avoids
    allocations beyond the two events and keeps attribute stores to the minimum.
    """

    __slots__ = (
        "_attrs",
        "_emit",
        "_end",
        "_instance",
        "_monotonic_ns",
        "_start_ns",
        "_token",
        "begin",
    )

    def __init__(
        self,
        begin: StepBegin,
        emit: Callable[[Event], None],
        monotonic_ns: Callable[[], int],
        instance: str = "",
    ) -> None:
        self.begin = begin
        self._emit = emit
        self._monotonic_ns = monotonic_ns
        self._instance = instance
        self._end: StepEnd | None = None
        self._attrs = _NO_ATTRS

    @property
    def trace_id(self) -> str:
        return self.begin.trace_id

    @property
    def span_id(self) -> str:
        return self.begin.span_id

    @property
    def parent_id(self) -> str:
        return self.begin.parent_id

    def __enter__(self) -> Step:
        begin = self.begin
        parent = _get_current()
        if parent is None:
            # One random draw gives a root both its trace id and (the low half) its span id.
            trace_id = f"{_bits(128) or 1:032x}"
            span_id = trace_id[16:]
            if span_id == "0000000000000000":
                span_id = "0000000000000001"
        else:
            trace_id = parent[0]
            span_id = f"{_bits(64) or 1:016x}"
            _set(begin, "parent_id", parent[1])
        _set(begin, "trace_id", trace_id)
        _set(begin, "span_id", span_id)
        emit = self._emit
        emit(begin)
        self._token = _set_current((trace_id, span_id))
        self._start_ns = self._monotonic_ns()
        return self

    def finish(self, end: StepEnd | None = None, /, **attrs: Any) -> None:
        """Set the end event: a ready one, or ``END`` built (at exit) from ``attrs`` plus the
        attributes it shares with the begin event (an unknown attribute is a TypeError when the
        step exits)."""
        if end is None:
            self._attrs = attrs
        else:
            self._end = end

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        dur_ns = self._monotonic_ns() - self._start_ns
        _reset_current(self._token)
        begin = self.begin
        end = self._end
        if end is None:
            maker = _end_makers.get(type(begin)) or _end_maker(type(begin))
            end = maker(begin, dur_ns, self._instance, self._attrs)
        else:
            _set(end, "trace_id", begin.trace_id)
            _set(end, "span_id", begin.span_id)
            _set(end, "parent_id", begin.parent_id)
            _set(end, "dur_ns", dur_ns)
        if exc is not None:
            outcome = (
                Outcome.CANCELLED if isinstance(exc, asyncio.CancelledError) else Outcome.ERROR
            )
            if end.outcome is Outcome.OK:
                _set(end, "outcome", outcome)
            if not end.error and outcome is Outcome.ERROR:
                _set(end, "error", error_text(exc))
        self._emit(end)
