"""The worker's span holder: one list per worker task that each of its root reconciles fills
and empties, in place of a span contextvar set and reset per reconcile.

A root reconcile's span is the list ``[calls, begin record]`` (pycm.trace.context): its API-call
counter, and the record its ids are derived from. Setting a contextvar to a new such list and
resetting it around each reconcile costs a context copy and a token each time (~2k
instructions, a fifth of a no-op sync's tracing). A worker instead sets the variable once, when
it starts (:func:`install_holder`), to a list of its own — the *holder* — and each reconcile
it runs fills it (``holder[0] = 0; holder[1] = begin``) and empties it (``holder[1] = None``,
:func:`close_span`). Every reader of the span (pycm.trace.context's ``current_span`` and
``note_call``, a step's parent, a point's, the cause table's write path) reads an empty holder
as no span at all (:func:`live_span`), so each sees what it saw when the variable was set and
reset.

Why it stays right:

- *Across awaits*: the holder is in the worker task's context, which asyncio restores at each
  step of the task; tasks the reconcile starts (``gather``) copy the context and share the
  holder, so their API calls count in the reconcile and their writes name it, as before.
- *Concurrent workers*: each worker task installs its own holder in its own context (the
  workers start in ``root_context()``), so two workers never share one.
- *A reconcile inside a reconcile* (a process() call within a sync) finds the holder filled:
  it is the parent, and the nested reconcile sets and resets the variable as before.
- A reconcile that finds no holder (``Controller.process`` called outside a worker: tests, a
  bench) sets and resets the variable as before.

The one difference: a task that a reconcile starts and that *outlives* it reads the holder
after the reconcile ended — no span (or, if the worker has begun its next reconcile by then,
that one). pycm's own reconciles start none (their helper tasks are awaited within the sync);
a plugin whose detached task must stay in the reconcile's trace starts it in a copy of the
context made with :func:`detach_holder`.
"""

from __future__ import annotations

import contextvars
from contextvars import Token
from typing import Any

from pycm.trace.context import SpanValue, _current

__all__ = ["SpanToken", "close_span", "detach_holder", "install_holder", "live_span"]

SpanToken = Token[SpanValue | None] | list[Any]
"""What closes a reconcile's span: the contextvar's token (the variable was set), or the
worker's holder (it was filled: :func:`close_span` empties it)."""


def install_holder() -> list[Any]:
    """Set this context's span to a new, empty holder (the start of a worker task, whose
    context is its own) and return it."""
    holder: list[Any] = [0, None]
    _current.set(holder)
    return holder


def close_span(token: SpanToken) -> None:
    """Close a reconcile's span: empty the holder it filled, or reset the variable."""
    if type(token) is list:
        token[1] = None
    else:
        _current.reset(token)  # type: ignore[arg-type]


def live_span(span: SpanValue | None) -> SpanValue | None:
    """``span`` (a value of the span variable), None when it is an empty holder."""
    if type(span) is list and span[1] is None:
        return None
    return span


def detach_holder() -> contextvars.Context:
    """A copy of this context whose span is a snapshot of the current reconcile's (a list of
    its own, not the worker's holder), for ``create_task(..., context=...)`` of a task that may
    outlive the reconcile and must stay in its trace."""
    ctx = contextvars.copy_context()
    span = ctx.get(_current)
    if type(span) is list:
        ctx.run(_current.set, list(span))
    return ctx
