"""What a domain of the state is: the :class:`Domain` protocol, and what every domain may use.

A domain (``startup``, ``leases``, ``informers``, ...) is a module that owns some tables of the
state, the handlers that fold its event kinds into them (:mod:`~pycm.trace.state.registry`)
and its section of the snapshot. The module itself is the :class:`Domain`: it names its
section, attaches its tables to a fresh state, dumps them and loads them back. The state's
engine (:mod:`~pycm.trace.state.core`) knows domains only through this protocol and the one
tuple :data:`~pycm.trace.state.domains.DOMAINS`; a domain module never imports the state's
class. Its handlers see the state as its own ``StateView`` protocol (its tables, plus
:class:`Stream`), which :class:`~pycm.trace.state.domains.State` satisfies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pycm.trace.events import Event

if TYPE_CHECKING:
    from pycm.trace.objref import ObjectRef

__all__ = ["Domain", "Moment", "Stream"]


class Stream(Protocol):
    """The state's own part that every domain's handlers may use."""

    applied: int  # events applied so far: a record's ``touched`` (least recently touched first)

    def error(self, event: Event, text: str) -> None:
        """Add an entry to the ring of recent errors."""
        ...


@dataclass(frozen=True, slots=True)
class Moment:
    """What a snapshot is taken at: the newest event ts, the rates' window, and the objects
    whose histories it carries."""

    now: int
    window_s: int
    objects: Iterable[ObjectRef]


class Domain(Protocol):
    """A domain of the state (a module: see the module's doc)."""

    SECTION: str  # its key in the snapshot

    def attach(self, state: Any) -> None:
        """Give a fresh state this domain's (empty) tables."""
        ...

    def dump(self, state: Any, at: Moment) -> Any:
        """This domain's section of a snapshot."""
        ...

    def load(self, state: Any, data: Any) -> None:
        """Refill this domain's tables from its section (None: the snapshot has none)."""
        ...
