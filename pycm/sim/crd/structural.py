"""Is a version's ``openAPIV3Schema`` one kube-apiserver accepts? Causes in kube's words.

Three passes, as apiextensions-apiserver makes them:

1. The API's own rules (``ValidateCustomResourceDefinitionOpenAPISchema``), walked top down in
   document order: a supported ``type``; no ``uniqueItems: true`` (quadratic), no ``$ref`` and
   the other unsupported keywords; ``additionalProperties`` not beside ``properties``;
   ``x-kubernetes-preserve-unknown-fields`` only ``true``; list types (``atomic``/``set``/
   ``map``, map keys naming scalar, required or defaulted item properties) and map types;
   ``default`` values valid against their schema and with no field pruning would drop.
2. Structural invariants (``ValidateStructural``; sorted by message, as kube sorts them): a
   ``type`` everywhere except under ``x-kubernetes-int-or-string`` / ``-preserve-unknown-
   fields``; ``object`` at the root; ``items`` for arrays; embedded resources typed ``object``;
   root ``metadata`` restricted to ``name`` and ``generateName``; inside ``allOf``/``anyOf``/
   ``oneOf``/``not`` no ``type``, ``default``, ``nullable``, extensions or ``metadata``; a
   ``pattern`` that compiles (Go's message).
3. The emulator's own bounds on hostile input, refused with a Forbidden/TooMany cause that says
   they are the emulator's: :data:`MAX_DEPTH` levels of nesting, :data:`MAX_NODES` schema
   nodes, :data:`MAX_ENUM` enum values, :data:`MAX_PATTERN` characters of pattern (patterns
   match in linear time anyway, :mod:`pycm.sim.crd.regex`).

Field paths are kube's: ``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from pycm.sim.crd import causes as fe
from pycm.sim.crd.prune import prune
from pycm.sim.crd.regex import RegexError, compile_regex
from pycm.sim.crd.schema import compile_schema
from pycm.sim.crd.validate_schema import validate_value
from pycm.sim.errors import Cause

__all__ = ["MAX_DEPTH", "MAX_ENUM", "MAX_NODES", "MAX_PATTERN", "validate_openapi_schema"]

MAX_DEPTH = 64  # real CRDs nest some 20 levels; deeper is a recursion bomb
MAX_NODES = 20_000  # schema nodes in one version (the largest common CRDs have ~5,000)
MAX_ENUM = 4_096  # values in one enum (a time-zone list is ~600)
MAX_PATTERN = 4_096  # characters in one pattern

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_UNSUPPORTED = {
    "$ref": "$ref is not supported",
    "definitions": "definitions are not supported",
    "dependencies": "dependencies are not supported",
    "patternProperties": "patternProperties is not supported",
    "additionalItems": "additionalItems is not supported",
    "id": "id is not supported",
    "$schema": "$schema is not supported",
}
_JUNCTORS = ("allOf", "anyOf", "oneOf")


def _map(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``raw[name]`` when it is a mapping, else an empty one (a malformed schema is reported,
    never crashed on)."""
    value = raw.get(name)
    return value if isinstance(value, Mapping) else {}


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0
        self.exceeded = False


def validate_openapi_schema(raw: Any, path: str) -> list[Cause]:
    """Every cause against the ``openAPIV3Schema`` ``raw``, found at ``path``."""
    if not isinstance(raw, Mapping):
        return [fe.required(path, "schemas are required")]
    budget = _Budget()
    bounds = _bounds(raw, path, 0, budget)
    if bounds:
        return bounds  # nothing else is walked on a schema this large
    out = _api_rules(raw, path, level="root")
    structural = _structural(raw, path, "root", nested=False)
    structural.sort(key=lambda c: f"{c['field']}: {c['message']}")
    return out + structural


# ---------------------------------------------------------------- bounds (the emulator's)


def _children(raw: Mapping[str, Any], path: str) -> list[tuple[Mapping[str, Any], str]]:
    out: list[tuple[Mapping[str, Any], str]] = []
    props = raw.get("properties")
    if isinstance(props, Mapping):
        out += [(v, fe.key(f"{path}.properties", str(k))) for k, v in props.items()]
    for name in ("items", "additionalProperties", "not"):
        if isinstance(raw.get(name), Mapping):
            out.append((raw[name], f"{path}.{name}"))
    for name in _JUNCTORS:
        subs = raw.get(name)
        if isinstance(subs, list):
            out += [(v, f"{path}.{name}[{i}]") for i, v in enumerate(subs)]
    return [(v, p) for v, p in out if isinstance(v, Mapping)]


def _bounds(raw: Mapping[str, Any], path: str, depth: int, budget: _Budget) -> list[Cause]:
    budget.nodes += 1
    if budget.nodes > MAX_NODES:
        budget.exceeded = True
        why = f"must have at most {MAX_NODES} schema nodes (the emulator's bound)"
        return [fe.forbidden(path, why)]
    if depth > MAX_DEPTH:
        why = f"must not nest more than {MAX_DEPTH} levels (the emulator's bound)"
        return [fe.forbidden(path, why)]
    out: list[Cause] = []
    enum = raw.get("enum")
    if isinstance(enum, list) and len(enum) > MAX_ENUM:
        out.append(fe.too_many(f"{path}.enum", len(enum), MAX_ENUM))
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and len(pattern) > MAX_PATTERN:
        out.append(fe.too_long(f"{path}.pattern", MAX_PATTERN))
    for sub, sub_path in _children(raw, path):
        out += _bounds(sub, sub_path, depth + 1, budget)
        if budget.exceeded:
            break
    return out


# ---------------------------------------------------------------- the API's rules


def _api_rules(raw: Mapping[str, Any], path: str, level: str) -> list[Cause]:
    out: list[Cause] = []
    typ = raw.get("type")
    if typ is not None and typ != "" and typ not in _TYPES:
        out.append(fe.not_supported(f"{path}.type", typ, _TYPES))
    for name, why in _UNSUPPORTED.items():
        if raw.get(name) not in (None, "", {}, []):
            out.append(fe.forbidden(f"{path}.{name}", why))
    if raw.get("uniqueItems") is True:
        why = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        out.append(fe.forbidden(f"{path}.uniqueItems", why))
    if raw.get("additionalProperties") is not None and raw.get("properties"):
        why = "additionalProperties and properties are mutual exclusive"
        out.append(fe.forbidden(f"{path}.additionalProperties", why))
    if raw.get("additionalProperties") is False:
        out.append(fe.forbidden(f"{path}.additionalProperties", "must not be false"))
    if isinstance(raw.get("items"), list):
        why = "items must be a schema object and not an array"
        out.append(fe.forbidden(f"{path}.items", why))
    preserve = raw.get("x-kubernetes-preserve-unknown-fields")
    if preserve is not None and preserve is not True:
        out.append(
            fe.invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                preserve,
                "must be true or undefined",
            )
        )
    for name in ("minimum", "maximum", "multipleOf"):
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            out.append(fe.type_invalid(f"{path}.{name}", value, "must be a number"))
    for name in (
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
    ):
        value = raw.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            out.append(fe.invalid(f"{path}.{name}", value, "must be a non-negative integer"))
    if raw.get("multipleOf") is not None and _positive(raw["multipleOf"]) is False:
        out.append(fe.invalid(f"{path}.multipleOf", raw["multipleOf"], "must be positive"))
    out += _list_rules(raw, path)
    out += _map_rules(raw, path)
    if "default" in raw:
        out += _default_rules(raw, path, level)
    for sub, sub_path in _children(raw, path):
        sub_level = "field" if ".properties[" in sub_path[len(path) :] else "item"
        out += _api_rules(sub, sub_path, sub_level)
    return out


def _positive(value: Any) -> bool | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value > 0


def _list_rules(raw: Mapping[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    list_type = raw.get("x-kubernetes-list-type")
    keys = raw.get("x-kubernetes-list-map-keys")
    where = f"{path}.x-kubernetes-list-type"
    if list_type is not None:
        if list_type not in ("atomic", "set", "map"):
            return [fe.not_supported(where, list_type, ("atomic", "set", "map"))]
        if raw.get("type") != "array":
            out.append(fe.invalid(where, list_type, "must only be used if type == array"))
    if keys and list_type != "map":
        out.append(fe.required(where, "must be map if x-kubernetes-list-map-keys is non-empty"))
    items = _map(raw, "items")
    if (
        list_type == "set"
        and items.get("type") == "object"
        and items.get("x-kubernetes-map-type") != "atomic"
    ):
        why = "must be atomic as item of a list with x-kubernetes-list-type=set"
        out.append(
            fe.invalid(
                f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-map-type"), why
            )
        )
    if list_type == "map":
        keys_path = f"{path}.x-kubernetes-list-map-keys"
        if not keys:
            out.append(fe.required(keys_path, "must not be empty if x-kubernetes-list-type is map"))
        if items.get("type") != "object":
            why = "must be object if parent array's x-kubernetes-list-type is map"
            out.append(fe.invalid(f"{path}.items.type", items.get("type", ""), why))
        props = _map(items, "properties")
        required = items.get("required") or []
        for i, k in enumerate(keys or []):
            prop = props.get(k)
            if not isinstance(prop, Mapping):
                why = "entries must all be names of item properties"
                out.append(fe.invalid(f"{keys_path}[{i}]", k, why))
                continue
            if prop.get("type") not in ("string", "integer", "number", "boolean"):
                why = "must be a scalar type if parent array's x-kubernetes-list-type is map"
                out.append(
                    fe.invalid(
                        fe.key(f"{path}.items.properties", str(k)) + ".type",
                        prop.get("type", ""),
                        why,
                    )
                )
            if k not in required and "default" not in prop:
                why = (
                    "all properties in x-kubernetes-list-map-keys must be required or have a "
                    "default value"
                )
                out.append(fe.required(fe.key(f"{path}.items.properties", str(k)), why))
    return out


def _map_rules(raw: Mapping[str, Any], path: str) -> list[Cause]:
    map_type = raw.get("x-kubernetes-map-type")
    if map_type is None:
        return []
    where = f"{path}.x-kubernetes-map-type"
    if map_type not in ("atomic", "granular"):
        return [fe.not_supported(where, map_type, ("atomic", "granular"))]
    if raw.get("type") != "object":
        return [fe.invalid(where, map_type, "must only be used if type == object")]
    return []


def _default_rules(raw: Mapping[str, Any], path: str, level: str) -> list[Cause]:
    where = f"{path}.default"
    if level == "root" or path.endswith(".properties[metadata]"):
        return [fe.forbidden(where, "must not be set for metadata or at the root")]
    try:
        schema = compile_schema(raw)
    except RegexError:
        return []  # the pattern's own cause is reported by the structural pass
    value = raw["default"]
    found: list[Cause] = []
    for cause in validate_value(value, schema, ""):
        found.append({**cause, "field": where + ("." + cause["field"] if cause["field"] else "")})
    if isinstance(value, dict):
        pruned = prune(copy.deepcopy(value), schema) if not schema.embedded else []
        if pruned:
            found.append(
                fe.invalid(where, value, "must not have unknown fields: " + ", ".join(pruned))
            )
    return found


# ---------------------------------------------------------------- structural invariants


def _structural(raw: Mapping[str, Any], path: str, level: str, nested: bool) -> list[Cause]:
    out: list[Cause] = []
    typ = raw.get("type") or ""
    preserve = raw.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = raw.get("x-kubernetes-embedded-resource") is True
    int_or_string = raw.get("x-kubernetes-int-or-string") is True
    props = _map(raw, "properties")
    if nested:
        return _nested(raw, path)
    if typ == "array" and not isinstance(raw.get("items"), Mapping):
        out.append(fe.required(f"{path}.items", "must be specified"))
    if embedded and typ != "object":
        why = "must be object if x-kubernetes-embedded-resource is true"
        out.append(
            fe.required(f"{path}.type", why) if not typ else fe.invalid(f"{path}.type", typ, why)
        )
    elif not typ and not int_or_string and not preserve:
        why = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[level]
        out.append(fe.required(f"{path}.type", why))
    if embedded and raw.get("additionalProperties") is not None:
        why = "must not be used if x-kubernetes-embedded-resource is set"
        out.append(fe.forbidden(f"{path}.additionalProperties", why))
    if level == "root" and typ and typ != "object":
        out.append(fe.invalid(f"{path}.type", typ, "must be object at the root"))
    if level == "root" and raw.get("additionalProperties") is not None:
        out.append(fe.forbidden(f"{path}.additionalProperties", "must not be used at the root"))
    if int_or_string and preserve:
        why = "must be false if x-kubernetes-int-or-string is true"
        out.append(fe.invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True, why))
    if int_or_string and embedded:
        why = "must be false if x-kubernetes-int-or-string is true"
        out.append(fe.invalid(f"{path}.x-kubernetes-embedded-resource", True, why))
    if level == "root" or embedded:
        for name, want in (("kind", "string"), ("apiVersion", "string"), ("metadata", "object")):
            sub = props.get(name)
            if isinstance(sub, Mapping) and sub.get("type") != want:
                where = fe.key(f"{path}.properties", name) + ".type"
                out.append(fe.invalid(where, sub.get("type") or "", f"must be {want}"))
    if level == "root" and isinstance(props.get("metadata"), Mapping):
        meta = props["metadata"]
        extra = {k for k in meta if k not in ("type", "properties")}
        names = set(meta.get("properties") or {})
        if extra or not names <= {"name", "generateName"}:
            why = (
                "must not specify anything other than name and generateName, "
                "but metadata is implicitly specified"
            )
            out.append(fe.forbidden(fe.key(f"{path}.properties", "metadata"), why))
    if embedded and not preserve and not props:
        why = (
            "must not be empty if x-kubernetes-embedded-resource is true without "
            "x-kubernetes-preserve-unknown-fields"
        )
        out.append(fe.required(f"{path}.properties", why))
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and pattern:
        out += _pattern_cause(pattern, f"{path}.pattern")
    for name in _JUNCTORS:
        subs = raw.get(name)
        if isinstance(subs, list):
            for i, sub in enumerate(subs):
                if isinstance(sub, Mapping) and not _int_or_string_branch(raw, name, i):
                    out += _nested(sub, f"{path}.{name}[{i}]")
    if isinstance(raw.get("not"), Mapping):
        out += _nested(raw["not"], f"{path}.not")
    for name, sub in props.items():
        if isinstance(sub, Mapping):
            out += _structural(sub, fe.key(f"{path}.properties", str(name)), "field", False)
    if isinstance(raw.get("items"), Mapping):
        out += _structural(raw["items"], f"{path}.items", "item", False)
    if isinstance(raw.get("additionalProperties"), Mapping):
        out += _structural(
            raw["additionalProperties"], f"{path}.additionalProperties", "field", False
        )
    return out


def _int_or_string_branch(raw: Mapping[str, Any], junctor: str, index: int) -> bool:
    """kube's two int-or-string exceptions: ``anyOf: [{type: integer}, {type: string}]``, or
    the same ``anyOf`` as the first ``allOf`` entry: those branches may carry a type."""
    pair = [{"type": "integer"}, {"type": "string"}]
    if junctor == "anyOf":
        return raw.get("anyOf") == pair
    if junctor == "allOf" and index == 0:
        first = raw["allOf"][0]
        return isinstance(first, Mapping) and first.get("anyOf") == pair and len(first) == 1
    return False


def _pattern_cause(pattern: str, where: str) -> list[Cause]:
    try:
        compile_regex(pattern)
    except RegexError as e:
        return [fe.invalid(where, pattern, f"must be a valid regular expression, but isn't: {e}")]
    return []


def _nested(raw: Mapping[str, Any], path: str) -> list[Cause]:
    """Inside a junctor: value validations only (``validateNestedValueValidation``)."""
    out: list[Cause] = []
    rules: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
        ("type", "must be empty to be structural", lambda v: bool(v)),
        ("additionalProperties", "must be undefined to be structural", lambda v: v is not None),
        ("default", "must be undefined to be structural", lambda v: v is not None),
        ("title", "must be empty to be structural", lambda v: bool(v)),
        ("description", "must be empty to be structural", lambda v: bool(v)),
        ("nullable", "must be false to be structural", lambda v: v is True),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
            lambda v: v is True,
        ),
        ("x-kubernetes-embedded-resource", "must be false to be structural", lambda v: v is True),
        ("x-kubernetes-int-or-string", "must be false to be structural", lambda v: v is True),
        ("x-kubernetes-list-map-keys", "must be empty to be structural", lambda v: bool(v)),
        ("x-kubernetes-list-type", "must be undefined to be structural", lambda v: v is not None),
    )
    for name, why, present in rules:
        if present(raw.get(name)):
            out.append(fe.forbidden(f"{path}.{name}", why))
    props = _map(raw, "properties")
    if "metadata" in props:
        out.append(
            fe.forbidden(
                fe.key(f"{path}.properties", "metadata"),
                "must not be specified in a nested context",
            )
        )
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and pattern:
        out += _pattern_cause(pattern, f"{path}.pattern")
    for name, sub in props.items():
        if isinstance(sub, Mapping):
            out += _nested(sub, fe.key(f"{path}.properties", str(name)))
    for name in ("items", "not"):
        if isinstance(raw.get(name), Mapping):
            out += _nested(raw[name], f"{path}.{name}")
    for name in _JUNCTORS:
        subs = raw.get(name)
        if isinstance(subs, list):
            out += [
                c
                for i, s in enumerate(subs)
                if isinstance(s, Mapping)
                for c in _nested(s, f"{path}.{name}[{i}]")
            ]
    return out
