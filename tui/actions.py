"""Extra keys a host program adds to `pycm top`: ``pycm demo``'s chaos controls.

The TUI knows nothing of processes or the emulator (it sees only the trace): the host passes
:class:`Action` objects — a key, a description for the footer and help, and a coroutine
function that does the work and returns a line to show. Actions run as Textual workers, one at
a time per key, and their outcome (or error) appears as a notification.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["Action"]


@dataclass(frozen=True, slots=True)
class Action:
    key: str
    description: str
    run: Callable[[], Awaitable[str]]
