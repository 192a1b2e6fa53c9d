"""set_status_condition: apimachinery's meta.SetStatusCondition semantics, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.controller import (
    Condition,
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def _ready(status: str, reason: str = "R", message: str = "", gen: int = 1) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": status,
        "observedGeneration": gen,
        "lastTransitionTime": T0,
        "reason": reason,
        "message": message,
    }


@pytest.mark.parametrize(
    ("before", "new", "after", "changed"),
    [
        pytest.param(
            [], Condition("Ready", "True", "R", "", 1), [_ready("True")], True, id="added"
        ),
        pytest.param(
            [_ready("True")],
            Condition("Ready", "True", "R", "", 1),
            [_ready("True")],
            False,
            id="same",
        ),
        pytest.param(
            [_ready("True")],
            Condition("Ready", "False", "R", "", 1),
            [_ready("False") | {"lastTransitionTime": T1}],
            True,
            id="status-changes-transition-time",
        ),
        pytest.param(
            [_ready("True")],
            Condition("Ready", "True", "Other", "m", 2),
            [_ready("True", "Other", "m", 2)],
            True,
            id="reason-message-generation-keep-transition-time",
        ),
        pytest.param(
            [_ready("True")],
            Condition("Ready", "False", "R", "", 1, last_transition_time="2025-01-01T00:00:00Z"),
            [_ready("False") | {"lastTransitionTime": "2025-01-01T00:00:00Z"}],
            True,
            id="given-transition-time-wins",
        ),
    ],
)
def test_set_status_condition_table(
    before: list[dict[str, Any]], new: Condition, after: list[dict[str, Any]], changed: bool
) -> None:
    # "added" takes now as its transition time: T0 here, like the table's rows.
    now = T0 if not before else T1
    result, did = set_status_condition(before, new, now)
    assert (result, did) == (after, changed)
    assert before == ([] if not before else [_ready("True")])  # the input is not mutated


def test_condition_helpers_find_true_remove() -> None:
    conditions = [_ready("True"), {**_ready("False"), "type": "Degraded"}]
    assert find_status_condition(conditions, "Degraded") == conditions[1]
    assert find_status_condition(conditions, "Missing") is None
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_true(conditions, "Degraded")
    assert remove_status_condition(conditions, "Ready") == ([conditions[1]], True)
    assert remove_status_condition(conditions, "Missing") == (conditions, False)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"type": "Ready", "status": "yes", "reason": "R"}, id="bad-status"),
        pytest.param({"type": "", "status": "True", "reason": "R"}, id="no-type"),
        pytest.param({"type": "Ready", "status": "True", "reason": ""}, id="no-reason"),
    ],
)
def test_condition_refuses_what_the_api_would(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        Condition(**kwargs)
