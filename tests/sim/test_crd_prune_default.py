"""Pruning unknown fields and applying ``default:`` from a custom resource's structural schema."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.crd.default import apply_defaults
from pycm.sim.crd.prune import prune
from pycm.sim.crd.schema import compile_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "image": {"type": "string"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"a": {"type": "string"}}}
                    },
                },
                "policy": {
                    "type": "object",
                    "default": {},
                    "properties": {"mode": {"type": "string", "default": "Auto"}},
                },
                "note": {"type": "string", "nullable": True, "default": "n"},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def test_prune_drops_unknown_fields_at_every_depth_and_names_them_in_order() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Site",
        "metadata": {"name": "a", "bogus": 1},
        "spec": {
            "image": "x",
            "typo": 1,
            "extra": {"anything": {"goes": True}},
            "labels": {"free": "keys"},
            "ports": [{"port": 80, "protocl": "UDP"}],
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"a": "b", "c": 1},
                "d": 2,
            },
        },
        "top": 1,
    }
    found = prune(obj, compile_schema(SCHEMA))
    assert found == [
        "metadata.bogus",
        "spec.typo",
        "spec.ports[0].protocl",
        "spec.template.spec.c",
        "spec.template.d",
        "top",
    ]
    assert obj["spec"] == {
        "image": "x",
        "extra": {"anything": {"goes": True}},
        "labels": {"free": "keys"},
        "ports": [{"port": 80}],
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"a": "b"},
        },
    }
    assert obj["metadata"] == {"name": "a"} and "top" not in obj


def test_prune_clean_object_is_left_alone() -> None:
    obj = {"apiVersion": "v", "kind": "K", "metadata": {"name": "a"}, "spec": {"image": "x"}}
    assert prune(obj, compile_schema(SCHEMA)) == []
    assert obj == {
        "apiVersion": "v",
        "kind": "K",
        "metadata": {"name": "a"},
        "spec": {"image": "x"},
    }


def test_prune_object_without_properties_keeps_nothing() -> None:
    schema = compile_schema({"type": "object", "properties": {"spec": {"type": "object"}}})
    obj: dict[str, Any] = {"spec": {"a": 1}}
    assert prune(obj, schema) == ["spec.a"]
    assert obj == {"spec": {}}


def test_defaults_fill_absent_fields_and_nested_defaults() -> None:
    obj: dict[str, Any] = {"spec": {"ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}]}}
    apply_defaults(obj, compile_schema(SCHEMA))
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP"},
        {"port": 81, "protocol": "UDP"},
    ]
    # A default object is walked in turn: its own unset fields get their defaults.
    assert obj["spec"]["policy"] == {"mode": "Auto"}
    assert obj["spec"]["note"] == "n"


@pytest.mark.parametrize(
    ("given", "want"),
    [
        pytest.param({"replicas": None}, 1, id="null-non-nullable-defaulted"),
        pytest.param({"replicas": 5}, 5, id="set-kept"),
    ],
)
def test_defaults_null_in_non_nullable_field_is_defaulted(given: dict[str, Any], want: int) -> None:
    obj: dict[str, Any] = {"spec": dict(given)}
    apply_defaults(obj, compile_schema(SCHEMA))
    assert obj["spec"]["replicas"] == want


def test_defaults_null_in_nullable_field_is_kept() -> None:
    obj: dict[str, Any] = {"spec": {"note": None}}
    apply_defaults(obj, compile_schema(SCHEMA))
    assert obj["spec"]["note"] is None


def test_defaults_null_without_default_is_dropped() -> None:
    obj: dict[str, Any] = {"spec": {"image": None}}
    apply_defaults(obj, compile_schema(SCHEMA))
    assert "image" not in obj["spec"]


def test_defaults_are_copies_not_shared() -> None:
    schema = compile_schema(SCHEMA)
    a: dict[str, Any] = {"spec": {}}
    b: dict[str, Any] = {"spec": {}}
    apply_defaults(a, schema)
    apply_defaults(b, schema)
    a["spec"]["policy"]["mode"] = "Manual"
    assert b["spec"]["policy"] == {"mode": "Auto"}
