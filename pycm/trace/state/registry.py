"""Which function folds which event kind: the handlers each domain module registers.

A domain module declares its handlers with :func:`handles` next to the records they update, so
adding a kind touches that one module; a kind the state deliberately does not fold is named once
with :func:`not_folded` (a test checks that every registered kind is one or the other).
A second domain that also reads a kind another one folds (the object histories read reconciles
and API calls) registers with :func:`also_handles`: it runs after the kind's handler.
A kind with no handler of its own takes the one registered with :func:`handles_rest` for its
nearest such base (a step kind added after the state: the steps in flight).
The state's engine (:mod:`~pycm.trace.state.core`) builds its dispatch table with
:func:`dispatch_table`.

Handlers are typed here by the event only: each takes the state as its own domain's view of it
(a protocol of that domain module), which this module, below every domain, does not name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pycm.trace.events import Event

__all__ = [
    "ALSO",
    "HANDLERS",
    "HANDLERS_OF_REST",
    "NOT_FOLDED",
    "Handler",
    "also_handles",
    "dispatch_table",
    "handler_of_rest",
    "handles",
    "handles_rest",
    "not_folded",
]

_E = TypeVar("_E", bound=Event)

# (state, event, the record of the event's instance) -> None. Handlers raise TypeError,
# ValueError or AttributeError on attributes of the wrong type; the state counts those events
# as malformed.
Handler = Callable[[Any, Any, Any], None]
TypedHandler = Callable[[Any, _E, Any], None]

HANDLERS: dict[type[Event], Handler] = {}
NOT_FOLDED: dict[type[Event], str] = {}  # kind -> why the state ignores it
ALSO: dict[type[Event], list[Handler]] = {}  # kind -> handlers run after its own
HANDLERS_OF_REST: dict[type[Event], Handler] = {}  # base -> the handler of its other subclasses


def handles(kind: type[_E]) -> Callable[[TypedHandler[_E]], TypedHandler[_E]]:
    """Register the decorated function as the one handler of ``kind`` (stack for several)."""

    def register(fn: TypedHandler[_E]) -> TypedHandler[_E]:
        if kind in HANDLERS or kind in NOT_FOLDED:
            raise TypeError(f"{kind.__name__} already has a handler or is declared not folded")
        HANDLERS[kind] = fn
        return fn

    return register


def handles_rest(base: type[_E]) -> Callable[[TypedHandler[_E]], TypedHandler[_E]]:
    """Register the decorated function as the handler of every subclass of ``base`` that has
    none of its own (nor is declared not folded)."""

    def register(fn: TypedHandler[_E]) -> TypedHandler[_E]:
        if base in HANDLERS_OF_REST:
            raise TypeError(f"the rest of {base.__name__} already has a handler")
        HANDLERS_OF_REST[base] = fn
        return fn

    return register


def handler_of_rest(kind: type) -> Handler | None:
    """The :func:`handles_rest` handler for ``kind`` (None: no base of it registered one)."""
    for base in kind.__mro__:
        fn = HANDLERS_OF_REST.get(base)
        if fn is not None:
            return fn
    return None


def not_folded(kind: type[Event], reason: str) -> None:
    """Declare that the state ignores ``kind`` on purpose, and why."""
    if kind in HANDLERS or kind in NOT_FOLDED:
        raise TypeError(f"{kind.__name__} already has a handler or is declared not folded")
    NOT_FOLDED[kind] = reason


def also_handles(kind: type[_E]) -> Callable[[TypedHandler[_E]], TypedHandler[_E]]:
    """Register the decorated function to run after ``kind``'s own handler (another domain
    reading the same events)."""

    def register(fn: TypedHandler[_E]) -> TypedHandler[_E]:
        ALSO.setdefault(kind, []).append(fn)
        return fn

    return register


def _chain(first: Handler, rest: list[Handler]) -> Handler:
    if len(rest) == 1:
        second = rest[0]

        def both(state: Any, ev: Any, inst: Any) -> None:
            first(state, ev, inst)
            second(state, ev, inst)

        return both

    def every(state: Any, ev: Any, inst: Any) -> None:
        first(state, ev, inst)
        for fn in rest:
            fn(state, ev, inst)

    return every


HISTORIES_MODULE = "pycm.trace.state.objects"


def dispatch_table(*, histories: bool = True) -> dict[type, Handler]:
    """Kind -> the one function to call: its handler, followed by the :data:`ALSO` ones.
    ``histories=False`` leaves out the object histories' handlers (their module's)."""

    def wanted(fn: Handler) -> bool:
        return histories or fn.__module__ != HISTORIES_MODULE

    table: dict[type, Handler] = {k: fn for k, fn in HANDLERS.items() if wanted(fn)}
    for kind, also in ALSO.items():
        rest = [fn for fn in also if wanted(fn)]
        if not rest:
            continue
        own = table.get(kind)
        if own is None:
            own, rest = rest[0], rest[1:]
        table[kind] = _chain(own, rest) if rest else own
    return table
