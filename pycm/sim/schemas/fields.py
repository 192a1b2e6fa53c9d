"""The vocabulary of the schemas: what a declared field holds (see :mod:`pycm.sim.schemas`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["CONDITION", "LEAF", "MAP", "OPAQUE", "Field", "Kept", "ListOf", "Struct", "leaves"]


class Kept(enum.Enum):
    """A field whose value is kept as it is (see :mod:`pycm.sim.schemas`)."""

    LEAF = "leaf"
    MAP = "map"
    OPAQUE = "opaque"


@dataclass(frozen=True, slots=True)
class ListOf:
    """A list whose items are each a ``item`` struct."""

    item: Struct


Struct: TypeAlias = "dict[str, Field]"
Field: TypeAlias = "Struct | ListOf | Kept"

LEAF, MAP, OPAQUE = Kept.LEAF, Kept.MAP, Kept.OPAQUE


def leaves(*names: str) -> Struct:
    """A struct of scalar fields."""
    return dict.fromkeys(names, LEAF)


# The condition most kinds' statuses hold (type, status, time, reason, message).
CONDITION: Struct = leaves("type", "status", "lastTransitionTime", "reason", "message")
