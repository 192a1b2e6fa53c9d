"""The registry: one place for kinds, flat attributes only, steps paired."""

from __future__ import annotations

import enum

import pytest

from pycm.trace.events import REGISTRY, Event, StepBegin, StepEnd, event_base, kind


def test_registry_pairs_every_step_begin_with_a_registered_end() -> None:
    begins = [i for i in REGISTRY.values() if i.role == "begin"]
    assert begins, "the registry defines steps"
    for info in begins:
        assert issubclass(info.cls, StepBegin)
        end = info.cls.END
        assert REGISTRY[end.KIND].cls is end
        assert REGISTRY[end.KIND].step == info.step
        assert info.kind == f"{info.step}.begin" and end.KIND == f"{info.step}.end"


def test_registry_wire_names_are_unique_and_dotted() -> None:
    for name, info in REGISTRY.items():
        assert info.cls.KIND == name
        assert "." in name and name == name.lower()


def test_kind_rejects_a_duplicate_wire_name() -> None:
    with pytest.raises(TypeError, match="declared twice"):

        @kind("queue.add")
        class Again(Event):
            pass


def test_kind_rejects_non_flat_attributes() -> None:
    with pytest.raises(TypeError, match="flat scalars"):

        @kind("test.not_flat")
        class Nested(Event):
            body: dict[str, str] | None = None


def test_kind_rejects_a_begin_without_step_and_end() -> None:
    with pytest.raises(TypeError, match="STEP and END"):

        @kind("test.lonely.begin")
        class Lonely(StepBegin):
            pass


class Colour(enum.StrEnum):
    RED = "red"


def test_kind_accepts_enums_and_optional_scalars() -> None:
    @event_base
    class _Base(Event):
        pass

    @kind("test.flat_ok")
    class FlatOk(_Base):
        colour: Colour = Colour.RED
        maybe: int | None = None

    try:
        assert REGISTRY["test.flat_ok"].enums == {"colour": Colour}
        assert FlatOk(maybe=3).maybe == 3
    finally:
        del REGISTRY["test.flat_ok"]


def test_step_end_default_outcome_is_ok() -> None:
    ends = [i.cls for i in REGISTRY.values() if i.role == "end"]
    assert all(issubclass(c, StepEnd) for c in ends)
    assert all(c().outcome.value == "ok" for c in ends)  # type: ignore[attr-defined]
