"""Which function folds which event kind: the handlers each domain module registers.

A domain module declares its handlers with :func:`handles` next to the records they update, so
adding a kind touches that one module; a kind the state deliberately does not fold is named once
with :func:`not_folded` (a test checks that every registered kind is one or the other).
:class:`~pycm.trace.state.core.State` copies :data:`HANDLERS` into its dispatch table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pycm.trace.events import Event

if TYPE_CHECKING:
    from pycm.trace.state.core import State
    from pycm.trace.state.startup import InstanceRecord

__all__ = ["HANDLERS", "NOT_FOLDED", "Handler", "handles", "not_folded"]

_E = TypeVar("_E", bound=Event)

# (state, event, the record of the event's instance) -> None. Handlers raise TypeError,
# ValueError or AttributeError on attributes of the wrong type; the state counts those events
# as malformed.
Handler = Callable[["State", Any, "InstanceRecord"], None]
TypedHandler = Callable[["State", _E, "InstanceRecord"], None]

HANDLERS: dict[type[Event], Handler] = {}
NOT_FOLDED: dict[type[Event], str] = {}  # kind -> why the state ignores it


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
