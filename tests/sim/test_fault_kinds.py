"""The fault kinds' registry (pycm.sim.faults.kinds.KINDS) against what docs/sim.md promises."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from pycm.sim.faults.fault import Action, Fault, FaultHost, LastingFault
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


@dataclass
class _Describes(LastingFault):
    kind = "test-describes"

    def what(self) -> str:
        return "what it does"


@dataclass
class _Acts(Action):
    kind = "test-acts"

    def act(self, host: FaultHost) -> dict[str, Any]:
        return {"n": 1}

    def done(self, result: dict[str, Any]) -> str:
        return f"did {result.get('n')}"


@pytest.mark.parametrize(
    ("base", "missing"),
    [
        pytest.param(LastingFault, {"what"}, id="lasting-without-what"),
        pytest.param(Action, {"act", "done"}, id="action-without-act-and-done"),
    ],
)
def test_fault_kind_missing_its_own_methods_cannot_be_built(
    base: type[Fault], missing: set[str]
) -> None:
    incomplete = dataclass(type("Incomplete", (base,), {"kind": "incomplete"}))
    assert set(incomplete.__abstractmethods__) == missing
    with pytest.raises(TypeError, match="abstract"):
        incomplete(id="f1")


def test_fault_kinds_describe_lasting_with_bounds_and_actions_by_their_result() -> None:
    lasting = _Describes(id="f1", count=3, duration=2.0)
    assert lasting.describe() == "what it does (count 3, for 2.0s)"
    action = _Acts(id="f2")
    assert action.describe() == "did None"
    action.result = action.act(cast(FaultHost, None))
    assert action.describe() == "did 1"
    assert action.to_json(0.0)["result"] == {"n": 1}


def test_every_registered_kind_is_concrete() -> None:
    assert [kind.kind for kind in KINDS if inspect.isabstract(kind)] == []
