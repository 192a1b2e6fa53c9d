"""The ring of recent errors: what any domain reports with ``state.error(event, text)``.

A domain of its own (the snapshot's ``errors`` section), so that the state's engine names no
table; :meth:`~pycm.trace.state.core.StateCore.error` appends to it.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol, cast

from pycm.trace.state.domain import Moment, Stream
from pycm.trace.state.schema import ErrorEntry

__all__ = ["MAX_ERRORS", "SECTION", "StateView", "attach", "dump", "load"]

MAX_ERRORS = 200
SECTION = "errors"


class StateView(Stream, Protocol):
    """The state as this domain sees it."""

    errors: deque[ErrorEntry]


def attach(state: StateView) -> None:
    state.errors = deque(maxlen=MAX_ERRORS)


def dump(state: StateView, at: Moment) -> list[ErrorEntry]:
    return [cast(ErrorEntry, dict(e)) for e in state.errors]


def load(state: StateView, data: Any) -> None:
    state.errors.extend(cast(ErrorEntry, dict(e)) for e in data or ())
