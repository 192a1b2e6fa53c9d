"""Validating a custom resource against its version's structural schema, as kube-apiserver does.

kube-apiserver runs kube-openapi's schema validator over the decoded object and turns each
result into a ``field.Error`` (apiextensions-apiserver's ``kubeOpenAPIResultToFieldErrors``);
then it checks ``x-kubernetes-list-type`` sets and maps for duplicates (``listtype``) and the
``apiVersion``/``kind`` of embedded resources. The causes here carry the same fields and words::

    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
    spec.size: Unsupported value: "XL": supported values: "S", "M"
    spec.name: Required value
    spec.name: Too long: may not be longer than 8
    spec.count: Invalid value: 0: spec.count in body should be greater than or equal to 1
    spec.tags[1]: Duplicate value: "a"

A node's checks run in kube-openapi's order (type, allOf/anyOf/oneOf/not, string, format,
number, array, enum, object); a value of the wrong type gets only its type error (kube-openapi
may add a length or enum error that applies to the wrong type too — noise the emulator drops).
The walk is recursive and bounded by the schema's depth (:mod:`pycm.sim.crd.structural` caps
it), never by the object's.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import re
import uuid
from collections.abc import Callable
from typing import Any

from pycm.sim.crd import causes as fe
from pycm.sim.crd.schema import Schema
from pycm.sim.errors import Cause
from pycm.sim.validation import dns_label_causes, labels_causes, path_segment_causes

__all__ = ["json_equal", "json_type", "validate_value"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_JSON_INT = 2**53 - 1


_JSON_TYPES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: Any) -> str:
    """The JSON type kube-openapi infers for a decoded value (an int beyond int64 decodes as a
    float64 in kube, so it is a "number")."""
    found = _JSON_TYPES.get(type(value))
    if found == "integer" and not _INT64_MIN <= value <= _INT64_MAX:
        return "number"
    if found is None:  # a subclass (never from a JSON decoder): the slow way
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, int):
            return "integer"
        return "object" if isinstance(value, dict) else "string"
    return found


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _type_matches(declared: str, actual: str, value: Any) -> bool:
    if declared == actual:
        return True
    if declared == "number" and actual == "integer":
        return True
    # A float with an integral value within ±(2^53 - 1) is an integer (go-openapi's
    # IsFloat64AJSONInteger); an int beyond int64 was decoded as a float by kube, and is not.
    if declared != "integer" or actual != "number":
        return False
    as_float = float(value)
    return as_float.is_integer() and abs(as_float) <= _MAX_JSON_INT


# ---------------------------------------------------------------- formats

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)
_HOSTNAME = re.compile(
    r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_HEXCOLOR = re.compile(r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$")
_DURATION = re.compile(r"^((\d+(\.\d+)?)\s*(ns|us|µs|ms|s|m|h|d|w)\s*)+$")
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$|^/\S*$")


def _valid_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _valid_datetime(text: str) -> bool:
    if not _DATETIME.match(text):
        return False
    try:
        datetime.datetime.fromisoformat(text.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False

    return check


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _uuid(version: int | None) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            parsed = uuid.UUID(text)
        except ValueError:
            return False
        return len(text) == 36 and (version is None or parsed.version == version)

    return check


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# The formats kube-apiserver validates for CRDs (apiextensions' supported formats); any other
# format is accepted without a check, as kube does.
FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda t: bool(_BSON.match(t)),
    "uri": lambda t: bool(_URI.match(t)),
    "email": lambda t: bool(_EMAIL.match(t)),
    "hostname": lambda t: len(t) <= 255 and bool(_HOSTNAME.match(t)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": lambda t: bool(_MAC.match(t)),
    "uuid": _uuid(None),
    "uuid3": _uuid(3),
    "uuid4": _uuid(4),
    "uuid5": _uuid(5),
    "hexcolor": lambda t: bool(_HEXCOLOR.match(t)),
    "rgbcolor": lambda t: bool(_RGBCOLOR.match(t)),
    "byte": _byte,
    "date": _valid_date,
    "date-time": _valid_datetime,
    "datetime": _valid_datetime,
    "duration": lambda t: bool(_DURATION.match(t)),
}


# ---------------------------------------------------------------- the validator


def _in_body(path: str) -> str:
    """kube-openapi's "<name> in body"; at the root (a default's value) the name is empty."""
    return f"{path} in body" if path else "in body"


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate_value(value: Any, schema: Schema, path: str = "") -> list[Cause]:
    """Every cause for ``value`` (at ``path``, "" for the object's root) against ``schema``."""
    out: list[Cause] = []
    _validate(value, schema, path, out)
    return out


def _validate(value: Any, s: Schema, path: str, out: list[Cause]) -> None:
    actual = json_type(value)
    where = path
    if value is None:
        if s.type and not s.nullable:
            out.append(
                fe.type_invalid(
                    where, "null", f'{_in_body(where)} must be of type {s.type}: "null"'
                )
            )
        return
    if s.type:
        if not _type_matches(s.type, actual, value):
            detail = f'{_in_body(where)} must be of type {s.type}: "{actual}"'
            out.append(fe.type_invalid(where, actual, detail))
            return
    elif s.int_or_string and actual not in ("integer", "string"):
        detail = f'{_in_body(where)} must be of type integer,string: "{actual}"'
        out.append(fe.type_invalid(where, actual, detail))
        return
    if s.all_of or s.any_of or s.one_of or s.not_ is not None:
        _junctors(value, s, path, out)
    if actual == "string":
        _string(value, s, where, out)
    elif actual in ("integer", "number"):
        _number(value, s, where, out)
    elif actual == "array":
        _array(value, s, path, out)
    if s.enum is not None and not any(json_equal(value, e) for e in s.enum):
        shown = [e if isinstance(e, str) else fe.go_value(e) for e in s.enum]
        out.append(fe.not_supported(where, value, shown))
    if actual == "object":
        _object(value, s, path, out)


def _junctors(value: Any, s: Schema, path: str, out: list[Cause]) -> None:
    where = path
    quoted = f'"{where}"'
    for sub in s.all_of:
        found = validate_value(value, sub, path)
        if found:
            out.append(fe.invalid(where, "", f"{quoted} must validate all the schemas (allOf)"))
            out.extend(found)
            break
    if s.any_of:
        results = [validate_value(value, sub, path) for sub in s.any_of]
        if all(results):
            detail = f"{quoted} must validate at least one schema (anyOf)"
            out.append(fe.invalid(where, "", detail))
            out.extend(_fewest(results))
    if s.one_of:
        results = [validate_value(value, sub, path) for sub in s.one_of]
        passed = sum(1 for r in results if not r)
        if passed != 1:
            detail = f"{quoted} must validate one and only one schema (oneOf)"
            out.append(fe.invalid(where, "", detail))
            if passed == 0:
                out.extend(_fewest(results))
    if s.not_ is not None and not validate_value(value, s.not_, path):
        out.append(fe.invalid(where, "", f"{quoted} must not validate the schema (not)"))


def _fewest(results: list[list[Cause]]) -> list[Cause]:
    """The failing branch with the fewest causes: the one the value came closest to."""
    return sorted(results, key=len)[0]


def _string(value: str, s: Schema, where: str, out: list[Cause]) -> None:
    length = len(value)  # runes, as kube-openapi counts (utf8.RuneCountInString)
    if s.max_length is not None and length > s.max_length:
        out.append(fe.too_long(where, s.max_length))
    if s.min_length is not None and length < s.min_length:
        detail = f"{_in_body(where)} should be at least {s.min_length} chars long"
        out.append(fe.invalid(where, value, detail))
    if s.pattern is not None and not s.pattern.search(value):
        detail = f"{_in_body(where)} should match '{s.pattern.pattern}'"
        out.append(fe.invalid(where, value, detail))
    check = FORMATS.get(s.format)
    if check is not None and not check(value):
        detail = f"{_in_body(where)} must be of type {s.format}: {fe.go_value(value)}"
        out.append(fe.type_invalid(where, value, detail))


def _bound(limit: float | int, value: float | int) -> str:
    """How kube-openapi prints a bound: truncated to an int64 for an integer value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(limit))
    return fe.go_number(float(limit))


def _number(value: float | int, s: Schema, where: str, out: list[Cause]) -> None:
    if s.multiple_of is not None and s.multiple_of > 0:
        factor = s.multiple_of
        if isinstance(value, int) and float(factor).is_integer():
            ok = value % int(factor) == 0
        else:
            quotient = value / factor if factor >= 1 else (1 / factor) * value
            ok = float(quotient).is_integer()
        if not ok:
            detail = f"{_in_body(where)} should be a multiple of {fe.go_number(factor)}"
            out.append(fe.invalid(where, value, detail))
    if s.maximum is not None:
        over = value >= s.maximum if s.exclusive_maximum else value > s.maximum
        if over:
            op = "less than" if s.exclusive_maximum else "less than or equal to"
            detail = f"{_in_body(where)} should be {op} {_bound(s.maximum, value)}"
            out.append(fe.invalid(where, value, detail))
    if s.minimum is not None:
        under = value <= s.minimum if s.exclusive_minimum else value < s.minimum
        if under:
            op = "greater than" if s.exclusive_minimum else "greater than or equal to"
            detail = f"{_in_body(where)} should be {op} {_bound(s.minimum, value)}"
            out.append(fe.invalid(where, value, detail))


def _array(value: list[Any], s: Schema, path: str, out: list[Cause]) -> None:
    where = path
    if s.items is not None:
        for i, item in enumerate(value):
            _validate(item, s.items, f"{path}[{i}]", out)
    if s.min_items is not None and len(value) < s.min_items:
        detail = f"{_in_body(where)} should have at least {s.min_items} items"
        out.append(fe.invalid(where, len(value), detail))
    if s.max_items is not None and len(value) > s.max_items:
        out.append(fe.too_many(where, len(value), s.max_items))
    if s.unique_items and _first_duplicate(value, lambda v: v) is not None:
        out.append(fe.invalid(where, "", f"{_in_body(where)} shouldn't contain duplicates"))
    if s.list_type == "set":
        _set_duplicates(value, path, out)
    elif s.list_type == "map" and s.list_map_keys:
        _map_duplicates(value, s, path, out)


def _first_duplicate(value: list[Any], key: Callable[[Any], Any]) -> int | None:
    seen: list[Any] = []
    for i, item in enumerate(value):
        k = key(item)
        if any(json_equal(k, other) for other in seen):
            return i
        seen.append(k)
    return None


def _hashable(value: Any) -> Any:
    """A hashable form of a JSON value with JSON's equality (``true`` is not ``1``)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value) if float(value).is_integer() else value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    if isinstance(value, list):
        return ("l", tuple(_hashable(v) for v in value))
    return ("o", tuple(sorted((k, _hashable(v)) for k, v in value.items())))


def _set_duplicates(value: list[Any], path: str, out: list[Cause]) -> None:
    """``x-kubernetes-list-type: set``: each repeated item is a Duplicate at its index."""
    seen: set[Any] = set()
    for i, item in enumerate(value):
        h = _hashable(item)
        if h in seen:
            out.append(fe.duplicate(f"{path}[{i}]", item))
        seen.add(h)


def _map_duplicates(value: list[Any], s: Schema, path: str, out: list[Cause]) -> None:
    """``x-kubernetes-list-type: map``: an item whose map keys repeat an earlier item's is a
    Duplicate at its index, shown as the map of its keys."""
    seen: set[Any] = set()
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            continue
        keys = {k: item[k] for k in s.list_map_keys if k in item}
        for k in s.list_map_keys:  # a missing key takes its default, as kube's listtype does
            sub = s.items.properties.get(k) if s.items is not None else None
            if k not in keys and sub is not None and sub.has_default:
                keys[k] = sub.default
        h = _hashable(keys)
        if h in seen:
            out.append(fe.duplicate(f"{path}[{i}]", keys))
        seen.add(h)


def _object(value: dict[str, Any], s: Schema, path: str, out: list[Cause]) -> None:
    where = path
    for name in s.required:
        if name not in value:
            out.append(fe.required(_child(path, name)))
    for name, sub in s.properties.items():
        if name in value:
            _validate(value[name], sub, _child(path, name), out)
    if isinstance(s.additional, Schema):
        for name, item in value.items():
            if name not in s.properties:
                _validate(item, s.additional, _child(path, name), out)
    n = len(value)
    if s.max_properties is not None and n > s.max_properties:
        out.append(fe.too_many(where, n, s.max_properties))
    if s.min_properties is not None and n < s.min_properties:
        detail = f"{_in_body(where)} should have at least {s.min_properties} properties"
        out.append(fe.invalid(where, n, detail))
    if s.embedded:
        _embedded(value, path, out)


def _embedded(value: dict[str, Any], path: str, out: list[Cause]) -> None:
    """An ``x-kubernetes-embedded-resource``: its type and object metadata, as kube's
    ``objectmeta.validateEmbeddedResource`` (its name a path segment; a name is not needed)."""
    for name in ("apiVersion", "kind"):
        field, given = _child(path, name), value.get(name)
        if given is not None and not isinstance(given, str):
            out.append(fe.invalid(field, given, "must be a string"))
        elif not given:
            out.append(fe.required(field, "must not be empty"))
        elif name == "apiVersion" and given.count("/") > 1:
            out.append(fe.invalid(field, given, f"unexpected GroupVersion string: {given}"))
        elif name == "kind":
            out += fe.dns1035(field, given, mixed_case=True)
    meta = value.get("metadata")
    if not isinstance(meta, dict):
        return
    where = _child(path, "metadata")
    object_name = meta.get("name")
    if isinstance(object_name, str) and object_name:
        out += path_segment_causes(_child(where, "name"), object_name)
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        out += dns_label_causes(_child(where, "namespace"), namespace)
    out += labels_causes(_child(where, "labels"), meta.get("labels"))
