"""The fault kinds' registry (pycm.sim.faults.kinds.KINDS) against what docs/sim.md promises."""

from __future__ import annotations

import re
from pathlib import Path

from pycm.sim.faults.fault import Action
from pycm.sim.faults.kinds import KINDS

DOCS = Path(__file__).parents[2] / "docs" / "sim.md"


def _documented_kinds() -> list[tuple[str, bool]]:
    """(kind, is an action) for each row of docs/sim.md's table of fault kinds."""
    section = DOCS.read_text().split("## Fault injection", 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|([^|]*)\|", section, flags=re.MULTILINE)
    return [(kind, "(action)" in fields) for kind, fields in rows]


def test_fault_kinds_are_unique_and_each_is_documented_as_lasting_or_action() -> None:
    names = [kind.kind for kind in KINDS]
    assert len(set(names)) == len(names)
    assert _documented_kinds() == [(kind.kind, issubclass(kind, Action)) for kind in KINDS]
