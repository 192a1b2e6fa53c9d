"""Which function folds which event kind: the handlers each domain module registers.

A domain module declares its handlers with :func:`handles` next to the records they update, so
adding a kind touches that one module; a kind the state deliberately does not fold is named once
with :func:`not_folded` (a test checks that every registered kind is one or the other).
A second domain that also reads a kind another one folds (the object histories read reconciles
and API calls) registers with :func:`also_handles`: it runs after the kind's handler.
:class:`~pycm.trace.state.core.State` builds its dispatch table with :func:`dispatch_table`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pycm.trace.events import Event

if TYPE_CHECKING:
    from pycm.trace.state.core import State
    from pycm.trace.state.startup import InstanceRecord

__all__ = [
    "ALSO",
    "HANDLERS",
    "NOT_FOLDED",
    "Handler",
    "also_handles",
    "dispatch_table",
    "handles",
    "not_folded",
]

_E = TypeVar("_E", bound=Event)

# (state, event, the record of the event's instance) -> None. Handlers raise TypeError,
# ValueError or AttributeError on attributes of the wrong type; the state counts those events
# as malformed.
Handler = Callable[["State", Any, "InstanceRecord"], None]
TypedHandler = Callable[["State", _E, "InstanceRecord"], None]

HANDLERS: dict[type[Event], Handler] = {}
NOT_FOLDED: dict[type[Event], str] = {}  # kind -> why the state ignores it
ALSO: dict[type[Event], list[Handler]] = {}  # kind -> handlers run after its own


def handles(kind: type[_E]) -> Callable[[TypedHandler[_E]], TypedHandler[_E]]:
    """Register the decorated function as the one handler of ``kind`` (stack for several)."""

    def register(fn: TypedHandler[_E]) -> TypedHandler[_E]:
        if kind in HANDLERS or kind in NOT_FOLDED:
            raise TypeError(f"{kind.__name__} already has a handler or is declared not folded")
        HANDLERS[kind] = fn
        return fn

    return register


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

        def both(state: State, ev: Any, inst: InstanceRecord) -> None:
            first(state, ev, inst)
            second(state, ev, inst)

        return both

    def every(state: State, ev: Any, inst: InstanceRecord) -> None:
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
