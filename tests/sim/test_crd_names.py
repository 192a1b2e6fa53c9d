"""A CRD's accepted names and its NamesAccepted / Established conditions, as kube's naming
controller sets them."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.crd.names import crd_status, is_established

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def crd(plural: str, kind: str, short: list[str] | None = None) -> dict[str, Any]:
    return {
        "spec": {
            "group": "example.com",
            "names": {
                "plural": plural,
                "singular": plural.rstrip("s"),
                "kind": kind,
                "listKind": kind + "List",
                "shortNames": short or [],
            },
            "versions": [{"name": "v1", "storage": True}],
        }
    }


def accepted(obj: dict[str, Any]) -> dict[str, Any]:
    obj["status"] = crd_status(obj, None, [], T0)
    return obj


def _conditions(status: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]


def test_crd_status_no_conflict_is_established() -> None:
    obj = crd("websites", "Website", ["ws"])
    status = crd_status(obj, None, [], T0)
    assert _conditions(status) == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    assert status["acceptedNames"] == obj["spec"]["names"]
    assert status["storedVersions"] == ["v1"]
    assert is_established({"status": status})


@pytest.mark.parametrize(
    ("new", "reason", "message"),
    [
        pytest.param(
            crd("websites", "Site"), "PluralConflict", '"websites" is already in use', id="plural"
        ),
        pytest.param(
            crd("pages", "Page", ["ws"]), "ShortNamesConflict", '"ws" is already in use', id="short"
        ),
        pytest.param(
            crd("sites", "Website"), "KindConflict", '"Website" is already in use', id="kind"
        ),
    ],
)
def test_crd_status_conflict_is_not_established(
    new: dict[str, Any], reason: str, message: str
) -> None:
    existing = accepted(crd("websites", "Website", ["ws"]))
    status = crd_status(new, None, [existing], T0)
    assert _conditions(status) == [
        ("NamesAccepted", "False", reason, message),
        ("Established", "False", "NotAccepted", "not all names are accepted"),
    ]
    assert status["acceptedNames"] == {"plural": "", "kind": ""}
    assert not is_established({"status": status})


def test_crd_status_transition_time_moves_only_on_change() -> None:
    obj = crd("websites", "Website")
    first = crd_status(obj, None, [], T0)
    again = crd_status(obj, first, [], T1)
    assert [c["lastTransitionTime"] for c in again["conditions"]] == [T0, T0]


def test_crd_status_established_stays_when_a_later_name_conflicts() -> None:
    obj = crd("websites", "Website")
    first = crd_status(obj, None, [], T0)
    other = accepted(crd("pages", "Page", ["pg"]))
    obj["spec"]["names"]["shortNames"] = ["pg"]
    status = crd_status(obj, first, [other], T1)
    assert _conditions(status)[0][:3] == ("NamesAccepted", "False", "ShortNamesConflict")
    assert is_established({"status": status})  # served under the names accepted before
    assert status["acceptedNames"]["shortNames"] == []
