"""The structural schema of a custom resource version, compiled from its ``openAPIV3Schema``.

A :class:`Schema` is one node of the JSON schema with what the emulator uses: the generic
fields (``type``, ``format``, ``nullable``, ``default``, ``properties``, ``items``,
``additionalProperties``), the value validations (``enum``, bounds, lengths, ``pattern`` —
compiled with :mod:`pycm.sim.crd.regex`, never Python's backtracking ``re`` —, item and property
counts, ``required``, ``allOf``/``anyOf``/``oneOf``/``not``) and the Kubernetes extensions
(``x-kubernetes-preserve-unknown-fields``, ``-embedded-resource``, ``-int-or-string``,
``-list-type``, ``-list-map-keys``, ``-map-type``).

:func:`compile_schema` expects a schema :mod:`pycm.sim.crd.structural` has accepted (it checks
the types of the fields and the bounds on size); it does not re-validate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pycm.sim.crd.regex import Regex, compile_regex

__all__ = ["MISSING", "Schema", "compile_schema"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""``default`` when the schema declares none (``None`` is a declared ``default: null``)."""


@dataclass(slots=True, eq=False)
class Schema:
    type: str = ""
    format: str = ""
    nullable: bool = False
    default: Any = MISSING
    properties: dict[str, Schema] = field(default_factory=dict)
    items: Schema | None = None
    # additionalProperties: a schema, or True / False, or None when unset.
    additional: Schema | bool | None = None
    required: tuple[str, ...] = ()
    enum: tuple[Any, ...] | None = None
    minimum: float | int | None = None
    maximum: float | int | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    multiple_of: float | int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: Regex | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    min_properties: int | None = None
    max_properties: int | None = None
    all_of: tuple[Schema, ...] = ()
    any_of: tuple[Schema, ...] = ()
    one_of: tuple[Schema, ...] = ()
    not_: Schema | None = None
    preserve_unknown: bool = False
    embedded: bool = False
    int_or_string: bool = False
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING


def _int(raw: Mapping[str, Any], name: str) -> int | None:
    value = raw.get(name)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _num(raw: Mapping[str, Any], name: str) -> float | int | None:
    value = raw.get(name)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def compile_schema(raw: Mapping[str, Any]) -> Schema:
    """A :class:`Schema` from an ``openAPIV3Schema`` (or any node of one)."""
    s = Schema()
    s.type = str(raw.get("type") or "")
    s.format = str(raw.get("format") or "")
    s.nullable = raw.get("nullable") is True
    if "default" in raw:
        s.default = raw["default"]
    for name, sub in (raw.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            s.properties[str(name)] = compile_schema(sub)
    items = raw.get("items")
    if isinstance(items, Mapping):
        s.items = compile_schema(items)
    additional = raw.get("additionalProperties")
    if isinstance(additional, bool):
        s.additional = additional
    elif isinstance(additional, Mapping):
        s.additional = compile_schema(additional)
    s.required = tuple(str(r) for r in raw.get("required") or ())
    if isinstance(raw.get("enum"), list):
        s.enum = tuple(raw["enum"])
    s.minimum, s.maximum = _num(raw, "minimum"), _num(raw, "maximum")
    s.exclusive_minimum = raw.get("exclusiveMinimum") is True
    s.exclusive_maximum = raw.get("exclusiveMaximum") is True
    s.multiple_of = _num(raw, "multipleOf")
    s.min_length, s.max_length = _int(raw, "minLength"), _int(raw, "maxLength")
    if isinstance(raw.get("pattern"), str) and raw["pattern"]:
        s.pattern = compile_regex(raw["pattern"])
    s.min_items, s.max_items = _int(raw, "minItems"), _int(raw, "maxItems")
    s.unique_items = raw.get("uniqueItems") is True
    s.min_properties, s.max_properties = _int(raw, "minProperties"), _int(raw, "maxProperties")
    for name, attr in (("allOf", "all_of"), ("anyOf", "any_of"), ("oneOf", "one_of")):
        subs = raw.get(name)
        if isinstance(subs, list):
            setattr(s, attr, tuple(compile_schema(x) for x in subs if isinstance(x, Mapping)))
    if isinstance(raw.get("not"), Mapping):
        s.not_ = compile_schema(raw["not"])
    s.preserve_unknown = raw.get("x-kubernetes-preserve-unknown-fields") is True
    s.embedded = raw.get("x-kubernetes-embedded-resource") is True
    s.int_or_string = raw.get("x-kubernetes-int-or-string") is True
    list_type = raw.get("x-kubernetes-list-type")
    s.list_type = list_type if isinstance(list_type, str) else None
    s.list_map_keys = tuple(str(k) for k in raw.get("x-kubernetes-list-map-keys") or ())
    map_type = raw.get("x-kubernetes-map-type")
    s.map_type = map_type if isinstance(map_type, str) else None
    return s
