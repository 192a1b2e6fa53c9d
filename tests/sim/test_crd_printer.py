"""Printer columns of a custom resource: the JSONPath kube evaluates, and the Table's cells."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.crd.jsonpath import JSONPathError, parse_json_path
from pycm.sim.crd.printer import printer_columns
from pycm.sim.objects import parse_rfc3339

DOC: dict[str, Any] = {
    "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web", "tier": "front"}},
    "spec": {"replicas": 3, "hosts": ["a.example", "b.example", "c.example"]},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True", "age": 5},
            {"type": "Synced", "status": "False", "age": 9},
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "want"),
    [
        pytest.param(".spec.replicas", [3], id="child"),
        pytest.param(".spec.missing", [], id="missing"),
        pytest.param(".spec.hosts[1]", ["b.example"], id="index"),
        pytest.param(".spec.hosts[-1]", ["c.example"], id="negative-index"),
        pytest.param(".spec.hosts[0:2]", ["a.example", "b.example"], id="slice"),
        pytest.param(".spec.hosts[*]", ["a.example", "b.example", "c.example"], id="wildcard"),
        pytest.param(".metadata.labels['app.kubernetes.io/name']", ["web"], id="quoted-key"),
        pytest.param(".metadata.labels.tier", ["front"], id="label"),
        pytest.param('.status.conditions[?(@.type=="Ready")].status', ["True"], id="filter-eq"),
        pytest.param('.status.conditions[?(@.type!="Ready")].type', ["Synced"], id="filter-ne"),
        pytest.param(".status.conditions[?(@.age>6)].type", ["Synced"], id="filter-number"),
        pytest.param("..type", ["Ready", "Synced"], id="recursive"),
        pytest.param("{.spec.replicas}", [3], id="braced"),
    ],
)
def test_json_path_finds_what_kube_finds(path: str, want: list[Any]) -> None:
    assert parse_json_path(path).find(DOC) == want


@pytest.mark.parametrize(
    "path", [".spec[", ".spec.hosts[x]", ".status.conditions[?(@.type==)]", ".spec.a b"]
)
def test_json_path_refuses_malformed(path: str) -> None:
    with pytest.raises(JSONPathError):
        parse_json_path(path)


def test_printer_columns_declared_and_cells() -> None:
    version = {
        "additionalPrinterColumns": [
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
            },
            {"name": "Hosts", "type": "string", "jsonPath": ".spec.hosts", "priority": 1},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        ]
    }
    defs, cells = printer_columns(version)
    assert [(d["name"], d["type"], d["priority"]) for d in defs] == [
        ("Name", "string", 0),
        ("Replicas", "integer", 0),
        ("Ready", "string", 0),
        ("Hosts", "string", 1),
        ("Phase", "string", 0),
    ]
    assert defs[0]["format"] == "name"
    assert cells(DOC, 0.0) == ["a", 3, "True", '["a.example","b.example","c.example"]', None]


def test_printer_columns_default_to_age() -> None:
    defs, cells = printer_columns({})
    assert [d["name"] for d in defs] == ["Name", "Age"]
    created = "2026-01-01T00:00:00Z"
    now = parse_rfc3339(created) + 3 * 3600 + 5
    assert cells({"metadata": {"name": "x", "creationTimestamp": created}}, now) == ["x", "3h"]
