"""The handler registry: every kind is folded by exactly one handler or declared not folded."""

from __future__ import annotations

import pytest

from pycm.trace import kinds as k
from pycm.trace.codec import UnknownEvent
from pycm.trace.events import REGISTRY, Event, StepBegin, StepEnd
from pycm.trace.state import State
from pycm.trace.state.registry import ALSO, HANDLERS, NOT_FOLDED, _chain, handles, not_folded


def test_registry_every_registered_kind_has_a_handler_or_is_declared_not_folded() -> None:
    unhandled = sorted(
        name
        for name, info in REGISTRY.items()
        if info.cls not in HANDLERS and info.cls not in NOT_FOLDED
    )
    assert unhandled == []


def test_registry_no_kind_is_both_handled_and_declared_not_folded() -> None:
    assert set(HANDLERS) & set(NOT_FOLDED) == set()
    assert all(reason for reason in NOT_FOLDED.values())


def test_registry_every_step_kind_has_its_own_handler() -> None:
    # A step kind declared not folded would never be tracked in flight.
    steps = [i.cls for i in REGISTRY.values() if issubclass(i.cls, StepBegin | StepEnd)]
    assert steps
    assert [c.__name__ for c in steps if c not in HANDLERS] == []


def test_registry_unknown_events_have_their_handler() -> None:
    assert UnknownEvent in HANDLERS


@pytest.mark.parametrize(
    "register",
    [
        pytest.param(lambda: handles(k.ItemAdded)(lambda state, ev, inst: None), id="handles"),
        pytest.param(lambda: not_folded(k.ItemAdded, "twice"), id="not_folded"),
        pytest.param(lambda: handles(k.SpansExported)(lambda s, e, i: None), id="not-folded-kind"),
    ],
)
def test_registry_second_registration_of_a_kind_rejected(register: object) -> None:
    before = (dict(HANDLERS), dict(NOT_FOLDED))
    with pytest.raises(TypeError, match="already"):
        register()  # type: ignore[operator]
    assert (HANDLERS, NOT_FOLDED) == before


def test_registry_not_folded_kind_counts_as_applied_and_changes_nothing_else() -> None:
    state = State()
    before = state.snapshot()
    state.apply(k.SpansExported(spans_exported=3, ts=5, seq=1, instance="a"))
    after = state.snapshot()
    assert after["counters"]["applied"] == 1
    assert after["instances"]["a"]["events"] == 1
    assert (after["leases"], after["controllers"], after["errors"]) == (
        before["leases"],
        before["controllers"],
        before["errors"],
    )


def test_registry_state_dispatch_starts_from_the_registry() -> None:
    state = State()
    for kind, handler in HANDLERS.items():
        if kind not in ALSO:
            assert state._dispatch[kind] is handler
    assert issubclass(k.ItemAdded, Event)


def test_registry_also_handlers_run_after_the_kind_own_handler() -> None:
    state = State()
    calls: list[str] = []
    state._dispatch[k.ItemAdded] = _chain(
        lambda s, e, i: calls.append("own"), [lambda s, e, i: calls.append("also")]
    )
    state.apply(k.ItemAdded(queue="q", key="a/b", ts=1, seq=1))
    assert calls == ["own", "also"]
    assert ALSO[k.ReconcileStarted] and k.ReconcileStarted in HANDLERS
