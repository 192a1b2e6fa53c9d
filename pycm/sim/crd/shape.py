"""A CustomResourceDefinition's JSON shape: what kube's typed decoding refuses with a 400.

kube decodes a CRD into its Go structs (``CustomResourceDefinitionSpec``, ``JSONSchemaProps``,
…) before anything validates it, so a ``type: 1``, a ``properties`` that is a list or a
``served: "yes"`` is a 400 BadRequest (``json: cannot unmarshal number into Go struct field
JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.type of type string``), not a
422. :func:`check_crd_shape` walks the body against those types (a ``null`` is Go's zero value:
accepted), so the defaulting, validation and serving that follow can trust them.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import errors
from pycm.sim.shape import json_name

__all__ = ["check_crd_shape"]

# Field kinds: Go's type names for the message.
_STR, _BOOL, _INT, _NUM, _ANY = "string", "bool", "int64", "float64", "JSON"
_STRS = "[]string"
_Struct = dict[str, Any]

_SCHEMA: _Struct = {}  # JSONSchemaProps, filled below (it refers to itself)
_SCHEMA.update(
    {
        **dict.fromkeys(
            ("id", "$schema", "$ref", "description", "type", "format", "title", "pattern"), _STR
        ),
        **dict.fromkeys(("default", "example"), _ANY),
        **dict.fromkeys(("maximum", "minimum", "multipleOf"), _NUM),
        **dict.fromkeys(
            (
                "exclusiveMaximum",
                "exclusiveMinimum",
                "uniqueItems",
                "nullable",
                "x-kubernetes-preserve-unknown-fields",
                "x-kubernetes-embedded-resource",
                "x-kubernetes-int-or-string",
            ),
            _BOOL,
        ),
        **dict.fromkeys(
            ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"),
            _INT,
        ),
        "required": _STRS,
        "enum": ("list", _ANY),
        "items": ("schema-or-array",),
        "allOf": ("list", _SCHEMA),
        "oneOf": ("list", _SCHEMA),
        "anyOf": ("list", _SCHEMA),
        "not": _SCHEMA,
        "properties": ("map", _SCHEMA),
        "patternProperties": ("map", _SCHEMA),
        "definitions": ("map", _SCHEMA),
        "additionalProperties": ("schema-or-bool",),
        "additionalItems": ("schema-or-bool",),
        "dependencies": ("map", _ANY),
        "externalDocs": {"description": _STR, "url": _STR},
        "x-kubernetes-list-map-keys": _STRS,
        "x-kubernetes-list-type": _STR,
        "x-kubernetes-map-type": _STR,
        "x-kubernetes-validations": (
            "list",
            {
                **dict.fromkeys(
                    ("rule", "message", "messageExpression", "reason", "fieldPath"), _STR
                ),
                "optionalOldSelf": _BOOL,
            },
        ),
    }
)
_VERSION: _Struct = {
    "name": _STR,
    "served": _BOOL,
    "storage": _BOOL,
    "deprecated": _BOOL,
    "deprecationWarning": _STR,
    "schema": {"openAPIV3Schema": _SCHEMA},
    "subresources": {
        "status": ("map", _ANY),
        "scale": dict.fromkeys(
            ("specReplicasPath", "statusReplicasPath", "labelSelectorPath"), _STR
        ),
    },
    "additionalPrinterColumns": (
        "list",
        {
            **dict.fromkeys(("name", "type", "format", "description", "jsonPath"), _STR),
            "priority": _INT,
        },
    ),
    "selectableFields": ("list", {"jsonPath": _STR}),
}
_CRD: _Struct = {
    "spec": {
        "group": _STR,
        "scope": _STR,
        "preserveUnknownFields": _BOOL,
        "names": {
            **dict.fromkeys(("plural", "singular", "kind", "listKind"), _STR),
            "shortNames": _STRS,
            "categories": _STRS,
        },
        "versions": ("list", _VERSION),
        "conversion": {"strategy": _STR, "webhook": ("map", _ANY)},
    },
    "status": ("map", _ANY),
}
_STRUCT_NAMES = {
    id(_SCHEMA): "JSONSchemaProps",
    id(_VERSION): "CustomResourceDefinitionVersion",
    id(_CRD): "CustomResourceDefinition",
}


class _Mismatch(Exception):
    def __init__(self, value: Any, struct: str, path: str, want: str) -> None:
        super().__init__(path)
        self.value, self.struct, self.path, self.want = value, struct, path, want


def _check(value: Any, kind: Any, path: str, struct: str) -> None:
    if value is None or kind == _ANY:
        return
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            raise _Mismatch(value, struct, path, f"v1.{_STRUCT_NAMES.get(id(kind), 'struct')}")
        inner = _STRUCT_NAMES.get(id(kind), struct)
        for name, sub in kind.items():
            if name in value:
                _check(value[name], sub, f"{path}.{name}" if path else name, inner)
        return
    if isinstance(kind, tuple):
        form = kind[0]
        if form == "list":
            if not isinstance(value, list):
                raise _Mismatch(value, struct, path, "[]" + _go_name(kind[1]))
            for item in value:
                _check(item, kind[1], path, struct)
        elif form == "map":
            if not isinstance(value, dict):
                raise _Mismatch(value, struct, path, "map[string]" + _go_name(kind[1]))
            for item in value.values():
                _check(item, kind[1], path, struct)
        elif form == "schema-or-array":
            if isinstance(value, list):
                for item in value:
                    _check(item, _SCHEMA, path, struct)
            else:
                _check(value, _SCHEMA, path, struct)
        elif form == "schema-or-bool" and not isinstance(value, bool):
            _check(value, _SCHEMA, path, struct)
        return
    ok = {
        _STR: isinstance(value, str),
        _BOOL: isinstance(value, bool),
        _INT: isinstance(value, int) and not isinstance(value, bool),
        _NUM: isinstance(value, int | float) and not isinstance(value, bool),
        _STRS: isinstance(value, list) and all(isinstance(v, str) or v is None for v in value),
    }[kind]
    if not ok:
        raise _Mismatch(value, struct, path, kind)


def _go_name(kind: Any) -> str:
    if isinstance(kind, dict):
        return f"v1.{_STRUCT_NAMES.get(id(kind), 'struct')}"
    return str(kind) if isinstance(kind, str) else "interface {}"


def check_crd_shape(obj: Any) -> None:
    """400 BadRequest, as kube's decoder words it, if a field of the CRD has the wrong JSON
    type."""
    try:
        _check(obj, _CRD, "", "CustomResourceDefinition")
    except _Mismatch as bad:
        raise errors.bad_request(
            'CustomResourceDefinition in version "v1" cannot be handled as a '
            f"CustomResourceDefinition: json: cannot unmarshal {json_name(bad.value)} into Go "
            f"struct field {bad.struct}.{bad.path} of type {bad.want}"
        ) from None
