# ruff: noqa: E501  (kube's messages are quoted whole, one per line, to compare at a glance)
"""A CustomResourceDefinition's own validation: kube's rules, paths and words, and the
emulator's bounds on hostile schemas."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pycm.sim.crd.definition import apply_crd_defaults, validate_crd, validate_crd_update

S = "spec.versions[0].schema.openAPIV3Schema"


def crd(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "websites.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "websites", "kind": "Website", "shortNames": ["ws"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer", "default": 1}},
                                }
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}
                    ],
                }
            ],
        },
    }
    for change in changes.values():
        change(base)
    apply_crd_defaults(base)
    return base


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        elif value is _DELETE:
            del node[last]
        else:
            node[last] = value

    return change


_DELETE = object()
SCHEMA = "spec/versions/0/schema/openAPIV3Schema"
SPEC_PROPS = SCHEMA + "/properties/spec/properties"


def _messages(obj: dict[str, Any]) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in validate_crd(obj)]


def test_crd_valid_has_no_causes_and_is_defaulted() -> None:
    obj = crd()
    assert validate_crd(obj) == []
    assert obj["spec"]["names"]["singular"] == "website"
    assert obj["spec"]["names"]["listKind"] == "WebsiteList"
    assert obj["spec"]["conversion"] == {"strategy": "None"}
    assert obj["spec"]["versions"][0]["additionalPrinterColumns"][0]["priority"] == 0


CASES = [
    pytest.param(
        {"a": _set("metadata/name", "sites.example.com")},
        [
            'metadata.name: Invalid value: "sites.example.com": must be spec.names.plural+"."+spec.group'
        ],
        id="name-not-plural-dot-group",
    ),
    pytest.param(
        {"a": _set("spec/group", "example"), "b": _set("metadata/name", "websites.example")},
        ['spec.group: Invalid value: "example": should be a domain with at least one dot'],
        id="group-without-dot",
    ),
    pytest.param(
        {
            "a": _set("spec/names/plural", "Websites"),
            "b": _set("metadata/name", "Websites.example.com"),
        },
        [
            "spec.names.plural: Invalid value: \"Websites\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ],
        id="plural-not-dns-1035",
    ),
    pytest.param(
        {"a": _set("spec/names/listKind", "Website")},
        [
            'spec.names.listKind: Invalid value: "Website": kind and listKind may not be the same or parsing become ambiguous'
        ],
        id="kind-equals-list-kind",
    ),
    pytest.param(
        {"a": _set("spec/scope", "Global")},
        ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'],
        id="scope",
    ),
    pytest.param(
        {"a": _set("spec/versions/0/storage", False)},
        [
            'spec.versions: Invalid value: []interface {}{"v1"}: must have exactly one version marked as storage version'
        ],
        id="no-storage-version",
    ),
    pytest.param(
        {"a": _set("spec/versions/0/schema", _DELETE)},
        [f"{S}: Required value: schemas are required"],
        id="schema-required",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/replicas", {"minimum": 1})},
        [
            f"{S}.properties[spec].properties[replicas].type: Required value: must not be empty for specified object fields"
        ],
        id="field-without-type",
    ),
    pytest.param(
        {"a": _set(SCHEMA + "/type", "array"), "b": _set(SCHEMA + "/items", {"type": "string"})},
        [f'{S}.type: Invalid value: "array": must be object at the root'],
        id="root-not-object",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/tags",
                {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            )
        },
        [
            f"{S}.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ],
        id="unique-items",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/tags", {"type": "array"})},
        [f"{S}.properties[spec].properties[tags].items: Required value: must be specified"],
        id="array-without-items",
    ),
    pytest.param(
        {"a": _set(SCHEMA + "/properties/spec/additionalProperties", {"type": "string"})},
        [
            f"{S}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        ],
        id="additional-properties-beside-properties",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/name", {"type": "string", "pattern": "(a"})},
        [
            f'{S}.properties[spec].properties[name].pattern: Invalid value: "(a": must be a valid regular expression, but isn\'t: error parsing regexp: missing closing ): `(a`'
        ],
        id="pattern-does-not-compile",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/name", {"type": "string", "pattern": "(?<=a)b"})},
        [
            f'{S}.properties[spec].properties[name].pattern: Invalid value: "(?<=a)b": must be a valid regular expression, but isn\'t: error parsing regexp: invalid named capture: `(?<=a)b`'
        ],
        id="pattern-lookbehind",
    ),
    pytest.param(
        {
            "a": _set(
                SCHEMA + "/properties/metadata",
                {"type": "object", "properties": {"labels": {"type": "object"}}},
            )
        },
        [
            f"{S}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ],
        id="metadata-restricted",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/ports",
                {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
            )
        },
        [
            f"{S}.properties[spec].properties[ports].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        ],
        id="list-map-without-keys",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/ports",
                {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
            )
        },
        [
            f"{S}.properties[spec].properties[ports].items.properties[name]: Required value: all properties in x-kubernetes-list-map-keys must be required or have a default value"
        ],
        id="list-map-key-not-required",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/tags",
                {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
            )
        },
        [
            f'{S}.properties[spec].properties[tags].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"'
        ],
        id="list-type-unsupported",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/replicas", {"type": "integer", "default": "one"})},
        [
            f'{S}.properties[spec].properties[replicas].default: Invalid value: "string": in body must be of type integer: "string"'
        ],
        id="default-of-wrong-type",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/policy",
                {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "default": {"a": "x", "b": 1},
                },
            )
        },
        [
            f'{S}.properties[spec].properties[policy].default: Invalid value: map[string]interface {{}}{{"a":"x", "b":1}}: must not have unknown fields: b'
        ],
        id="default-with-unknown-field",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/free",
                {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
            )
        },
        [
            f"{S}.properties[spec].properties[free].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        ],
        id="preserve-unknown-false",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/port", {"type": "integer", "anyOf": [{"type": "integer"}]})},
        [
            f"{S}.properties[spec].properties[port].anyOf[0].type: Forbidden: must be empty to be structural"
        ],
        id="type-in-junctor",
    ),
    pytest.param(
        {
            "a": _set(
                SPEC_PROPS + "/port",
                {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
            )
        },
        [],
        id="int-or-string-any-of-allowed",
    ),
    pytest.param(
        {"a": _set(SPEC_PROPS + "/t", {"type": "string", "x-kubernetes-embedded-resource": True})},
        [
            f"{S}.properties[spec].properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            f'{S}.properties[spec].properties[t].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true',
        ],
        id="embedded-not-object",
    ),
    pytest.param(
        {
            "a": _set("spec/group", "example.k8s.io"),
            "b": _set("metadata/name", "websites.example.k8s.io"),
        },
        [
            'metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111'
        ],
        id="protected-group",
    ),
    pytest.param(
        {
            "a": _set("spec/group", "example.k8s.io"),
            "b": _set("metadata/name", "websites.example.k8s.io"),
            "c": _set("metadata/annotations", {"api-approved.kubernetes.io": "unapproved, test"}),
        },
        [],
        id="protected-group-approved",
    ),
    pytest.param(
        {"a": _set("spec/conversion", {"strategy": "Webhook"})},
        ['spec.conversion.strategy: Unsupported value: "Webhook": supported values: "None"'],
        id="webhook-conversion-refused",
    ),
    pytest.param(
        {
            "a": _set(
                "spec/versions/0/additionalPrinterColumns/0",
                {"name": "R", "type": "int", "jsonPath": "spec.replicas"},
            )
        },
        [
            'spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "int": supported values: "boolean", "date", "integer", "number", "string"',
            'spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: "spec.replicas": must be a simple json path starting with .',
        ],
        id="printer-column",
    ),
    pytest.param(
        {"a": _set("spec/versions/0/subresources/scale/specReplicasPath", ".status.replicas")},
        [
            'spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec'
        ],
        id="scale-path",
    ),
]


@pytest.mark.parametrize(("changes", "want"), CASES)
def test_crd_invalid_cases_give_kubes_causes(changes: dict[str, Any], want: list[str]) -> None:
    assert _messages(crd(**changes)) == want


def _nest(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"x": node}}
    return node


@pytest.mark.parametrize(
    ("schema_change", "want_reason", "want_text"),
    [
        pytest.param(
            _nest(200), "FieldValueForbidden", "must not nest more than 64 levels", id="deep"
        ),
        pytest.param(
            {"type": "string", "enum": [str(i) for i in range(10_000)]},
            "FieldValueTooMany",
            "Too many: 10000: must have at most 4096 items",
            id="huge-enum",
        ),
        pytest.param(
            {"type": "string", "pattern": "a" * 10_000},
            "FieldValueTooLong",
            "Too long: may not be longer than 4096",
            id="long-pattern",
        ),
        pytest.param(
            {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30_000)}},
            "FieldValueForbidden",
            "must have at most 20000 schema nodes",
            id="too-many-nodes",
        ),
    ],
)
def test_crd_hostile_schemas_are_refused_with_the_emulators_bound(
    schema_change: dict[str, Any], want_reason: str, want_text: str
) -> None:
    causes = validate_crd(crd(a=_set(SPEC_PROPS + "/hostile", schema_change)))
    assert len(causes) == 1
    assert causes[0]["reason"] == want_reason
    assert want_text in causes[0]["message"]


def test_crd_update_scope_is_immutable_and_stored_versions_kept() -> None:
    old = crd()
    old["status"] = {"storedVersions": ["v1"]}
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["versions"][0]["name"] = "v2"
    messages = [f"{c['field']}: {c['message']}" for c in validate_crd_update(new, old)]
    assert messages == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions',
    ]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        pytest.param(
            SPEC_PROPS + "/replicas/type",
            1,
            "json: cannot unmarshal number into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.properties.type of type string",
            id="type-not-string",
        ),
        pytest.param(
            "spec/versions/0/served",
            "yes",
            "json: cannot unmarshal string into Go struct field CustomResourceDefinitionVersion.spec.versions.served of type bool",
            id="served-not-bool",
        ),
        pytest.param(
            SCHEMA + "/properties",
            [1],
            "json: cannot unmarshal array into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties of type map[string]v1.JSONSchemaProps",
            id="properties-not-map",
        ),
        pytest.param(
            "spec/names/shortNames",
            [1],
            "json: cannot unmarshal array into Go struct field CustomResourceDefinition.spec.names.shortNames of type []string",
            id="short-names-not-strings",
        ),
    ],
)
def test_crd_wrong_json_types_are_400_as_kubes_decoder_says(
    path: str, value: Any, message: str
) -> None:
    from pycm.sim.crd.shape import check_crd_shape
    from pycm.sim.errors import APIError

    obj = crd(a=_set(path, value))
    with pytest.raises(APIError) as err:
        check_crd_shape(obj)
    assert err.value.code == 400
    assert err.value.message == (
        'CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: '
        + message
    )
