# ruff: noqa: E501  (kube's messages are quoted whole, one per line, to compare at a glance)
"""Custom resources against their structural schema: kube-apiserver's causes, word for word.

Cases written from kube-openapi's validators and apiextensions-apiserver's conversion of their
results to field errors (``kubeOpenAPIResultToFieldErrors``), and ``listtype``'s duplicates.
"""

from __future__ import annotations

from typing import Any

import pytest

from pycm.sim.crd.schema import compile_schema
from pycm.sim.crd.validate_schema import validate_value


def _spec(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def _messages(schema: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    causes = validate_value(obj, compile_schema(schema))
    return [f"{c['field']}: {c['message']}" for c in causes]


# A field holding a whole object (kube's embedded resource): apiVersion, kind and metadata checked.
_EMBEDDED_TEMPLATE = {
    "template": {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }
}

CASES = [
    pytest.param(
        {"replicas": {"type": "integer"}},
        {"replicas": "3"},
        [
            'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
        ],
        id="type-integer-given-string",
    ),
    pytest.param(
        {"replicas": {"type": "integer"}}, {"replicas": 3.0}, [], id="integral-float-is-integer"
    ),
    pytest.param(
        {"ratio": {"type": "number"}},
        {"ratio": True},
        [
            'spec.ratio: Invalid value: "boolean": spec.ratio in body must be of type number: "boolean"'
        ],
        id="bool-is-not-a-number",
    ),
    pytest.param(
        {"name": {"type": "string"}},
        {"name": None},
        ['spec.name: Invalid value: "null": spec.name in body must be of type string: "null"'],
        id="null-not-nullable",
    ),
    pytest.param({"name": {"type": "string", "nullable": True}}, {"name": None}, [], id="nullable"),
    pytest.param(
        {"size": {"type": "string", "enum": ["S", "M"]}},
        {"size": "XL"},
        ['spec.size: Unsupported value: "XL": supported values: "S", "M"'],
        id="enum",
    ),
    pytest.param(
        {"level": {"type": "integer", "enum": [1, 2]}},
        {"level": 3},
        ['spec.level: Unsupported value: 3: supported values: "1", "2"'],
        id="enum-of-integers",
    ),
    pytest.param(
        {"count": {"type": "integer", "minimum": 1}},
        {"count": 0},
        ["spec.count: Invalid value: 0: spec.count in body should be greater than or equal to 1"],
        id="minimum",
    ),
    pytest.param(
        {"count": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}},
        {"count": 1},
        ["spec.count: Invalid value: 1: spec.count in body should be greater than 1"],
        id="exclusive-minimum",
    ),
    pytest.param(
        {"count": {"type": "integer", "maximum": 10}},
        {"count": 11},
        ["spec.count: Invalid value: 11: spec.count in body should be less than or equal to 10"],
        id="maximum",
    ),
    pytest.param(
        {"ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": True}},
        {"ratio": 1.5},
        ["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"],
        id="exclusive-maximum-float",
    ),
    pytest.param(
        {"step": {"type": "integer", "multipleOf": 5}},
        {"step": 7},
        ["spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"],
        id="multiple-of",
    ),
    pytest.param(
        {"name": {"type": "string", "maxLength": 3}},
        {"name": "abcd"},
        ["spec.name: Too long: may not be longer than 3"],
        id="max-length",
    ),
    pytest.param(
        {"name": {"type": "string", "minLength": 3}},
        {"name": "ab"},
        ['spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long'],
        id="min-length",
    ),
    pytest.param(
        {"name": {"type": "string", "maxLength": 2}}, {"name": "éé"}, [], id="length-in-runes"
    ),
    pytest.param(
        {"name": {"type": "string", "pattern": "^[a-z]+$"}},
        {"name": "Abc"},
        ["spec.name: Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"],
        id="pattern",
    ),
    pytest.param(
        {"when": {"type": "string", "format": "date-time"}},
        {"when": "yesterday"},
        [
            'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'
        ],
        id="format-date-time",
    ),
    pytest.param(
        {"when": {"type": "string", "format": "date-time"}},
        {"when": "2024-01-02T03:04:05Z"},
        [],
        id="format-date-time-ok",
    ),
    pytest.param(
        {"day": {"type": "string", "format": "date"}},
        {"day": "2024-02-30"},
        [
            'spec.day: Invalid value: "2024-02-30": spec.day in body must be of type date: "2024-02-30"'
        ],
        id="format-date",
    ),
    pytest.param({"n": {"type": "integer", "format": "int32"}}, {"n": 7}, [], id="format-int32"),
    pytest.param(
        {"n": {"type": "integer", "format": "int64"}},
        {"n": 2**64},
        ['spec.n: Invalid value: "number": spec.n in body must be of type integer: "number"'],
        id="beyond-int64-decodes-as-a-float",
    ),
    pytest.param(
        {"id": {"type": "string", "format": "uuid"}},
        {"id": "not-a-uuid"},
        [
            'spec.id: Invalid value: "not-a-uuid": spec.id in body must be of type uuid: "not-a-uuid"'
        ],
        id="format-uuid",
    ),
    pytest.param(
        {"any": {"type": "string", "format": "no-such-format"}},
        {"any": "x"},
        [],
        id="unknown-format-accepted",
    ),
    pytest.param(
        {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
        {"tags": ["a"]},
        ["spec.tags: Invalid value: 1: spec.tags in body should have at least 2 items"],
        id="min-items",
    ),
    pytest.param(
        {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 1}},
        {"tags": ["a", "b"]},
        ["spec.tags: Too many: 2: must have at most 1 items"],
        id="max-items",
    ),
    pytest.param(
        {"tags": {"type": "array", "items": {"type": "string"}}},
        {"tags": ["a", 1]},
        [
            'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"'
        ],
        id="item-path",
    ),
    pytest.param(
        {"tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}},
        {"tags": ["a", "b", "a"]},
        ['spec.tags[2]: Duplicate value: "a"'],
        id="list-set-duplicate",
    ),
    pytest.param(
        {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                },
            }
        },
        {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
        ['spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}'],
        id="list-map-duplicate-key",
    ),
    pytest.param(
        {
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-list-type": "atomic",
            }
        },
        {"tags": ["a", "a"]},
        [],
        id="list-atomic-allows-duplicates",
    ),
    pytest.param(
        {
            "owner": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            }
        },
        {"owner": {}},
        ["spec.owner.name: Required value"],
        id="required",
    ),
    pytest.param(
        {"port": {"x-kubernetes-int-or-string": True}},
        {"port": "http"},
        [],
        id="int-or-string-string",
    ),
    pytest.param(
        {"port": {"x-kubernetes-int-or-string": True}},
        {"port": 8080},
        [],
        id="int-or-string-int",
    ),
    pytest.param(
        {"port": {"x-kubernetes-int-or-string": True}},
        {"port": True},
        [
            'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'
        ],
        id="int-or-string-bool",
    ),
    pytest.param(
        {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        {"labels": {"a": "x", "b": 2}},
        [
            'spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"'
        ],
        id="additional-properties-values",
    ),
    pytest.param(
        _EMBEDDED_TEMPLATE,
        {"template": {"metadata": {}}},
        [
            "spec.template.apiVersion: Required value: must not be empty",
            "spec.template.kind: Required value: must not be empty",
        ],
        id="embedded-resource-needs-kind",
    ),
    pytest.param(
        _EMBEDDED_TEMPLATE,
        {
            "template": {
                "apiVersion": "a/b/c",
                "kind": "Pod Template",
                "metadata": {"name": "a/b", "namespace": "Team", "labels": {"ok": "x y"}},
            }
        },
        [
            'spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: '
            "a/b/c",
            'spec.template.kind: Invalid value: "Pod Template": may have mixed case, but should '
            "otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters "
            "or '-', start with an alphabetic character, and end with an alphanumeric character "
            "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
            "'[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
            'spec.template.metadata.namespace: Invalid value: "Team": a lowercase RFC 1123 label '
            "must consist of lower case alphanumeric characters or '-', and must start and end "
            "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            'spec.template.metadata.labels: Invalid value: "x y": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
            "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ],
        id="embedded-resource-type-and-metadata",
    ),
    pytest.param(
        _EMBEDDED_TEMPLATE,
        {
            "template": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "Web_1"},
            }
        },
        [],
        id="embedded-resource-name-is-a-path-segment",
    ),
    pytest.param(
        {"mode": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]}},
        {"mode": "c"},
        [
            'spec.mode: Invalid value: "": "spec.mode" must validate at least one schema (anyOf)',
            'spec.mode: Unsupported value: "c": supported values: "a"',
        ],
        id="any-of",
    ),
    pytest.param(
        {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 1}},
        {"a": "x", "b": "yy"},
        [
            'spec.a: Invalid value: "string": spec.a in body must be of type integer: "string"',
            "spec.b: Too long: may not be longer than 1",
        ],
        id="every-cause-not-the-first",
    ),
]


@pytest.mark.parametrize(("props", "spec", "want"), CASES)
def test_validate_value_cases_give_kubes_causes(
    props: dict[str, Any], spec: dict[str, Any], want: list[str]
) -> None:
    assert _messages(_spec(**props), {"spec": spec}) == want


def test_validate_value_reasons_are_kubes() -> None:
    schema = compile_schema(
        _spec(n={"type": "integer", "maximum": 1}, s={"type": "string", "enum": ["a"]})
    )
    causes = validate_value({"spec": {"n": "x", "s": "b"}}, schema)
    assert [c["reason"] for c in causes] == ["FieldValueTypeInvalid", "FieldValueNotSupported"]
    causes = validate_value({"spec": {"n": 2}}, schema)
    assert [c["reason"] for c in causes] == ["FieldValueInvalid"]


def test_validate_value_hostile_pattern_is_linear_time() -> None:
    # ^(a+)+$ backtracks exponentially in Python's re; the emulator's engine is linear.
    import time

    schema = compile_schema(_spec(s={"type": "string", "pattern": "^(a+)+$"}))
    started = time.perf_counter()
    causes = validate_value({"spec": {"s": "a" * 20_000 + "!"}}, schema)
    assert time.perf_counter() - started < 5
    assert len(causes) == 1 and "should match '^(a+)+$'" in causes[0]["message"]
