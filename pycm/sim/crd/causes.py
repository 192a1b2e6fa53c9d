"""apimachinery's ``field.Error`` kinds as ``details.causes``, worded as kube-apiserver words them.

A cause's message is ``<Type>: <value>: <detail>`` (``field.Error.ErrorBody``); the value is
printed as Go's ``%v`` for numbers and booleans, ``%q`` for strings and ``%#v`` for maps and
lists (``map[string]interface {}{"name":"a"}``), and omitted for Required, Forbidden and
TooLong. The field path is kube's: ``spec.items[0].name``, ``properties[spec]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from pycm.sim.errors import Cause
from pycm.sim.gostrconv import quote

__all__ = [
    "dns1035",
    "duplicate",
    "forbidden",
    "go_number",
    "go_value",
    "invalid",
    "key",
    "not_supported",
    "required",
    "too_long",
    "too_many",
    "type_invalid",
]


def go_number(value: float | int) -> str:
    """Go's ``%v`` of an int64 or float64 (``1``, ``1.5``, ``1e+21``, ``1e-05``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        text = f"{mantissa}e{sign}{digits}"
    return text


def go_value(value: Any) -> str:
    """How ``field.Error`` prints a bad value."""
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return go_number(value)
    if isinstance(value, str):
        return quote(value)
    return _go_syntax(value)


def _go_syntax(value: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool | int | float):
        return go_number(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{quote(str(k))}:{_go_syntax(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_syntax(v) for v in value) + "}"
    return quote(str(value))


def key(path: str, name: str) -> str:
    """``field.Path.Key``: ``path[name]``."""
    return f"{path}[{name}]"


def required(path: str, detail: str = "") -> Cause:
    message = "Required value" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueRequired", "message": message, "field": path}


def forbidden(path: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": path}


def invalid(path: str, value: Any, detail: str) -> Cause:
    message = f"Invalid value: {go_value(value)}" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueInvalid", "message": message, "field": path}


def type_invalid(path: str, value: Any, detail: str) -> Cause:
    message = f"Invalid value: {go_value(value)}: {detail}"
    return {"reason": "FieldValueTypeInvalid", "message": message, "field": path}


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(quote(s) for s in supported)
    message = f"Unsupported value: {go_value(value)}" + (
        f": supported values: {listed}" if listed else ""
    )
    return {"reason": "FieldValueNotSupported", "message": message, "field": path}


def too_long(path: str, max_length: int) -> Cause:
    return {
        "reason": "FieldValueTooLong",
        "message": f"Too long: may not be longer than {max_length}",
        "field": path,
    }


def too_many(path: str, actual: int, maximum: int) -> Cause:
    return {
        "reason": "FieldValueTooMany",
        "message": f"Too many: {actual}: must have at most {maximum} items",
        "field": path,
    }


def duplicate(path: str, value: Any) -> Cause:
    shown = go_value(value) if not isinstance(value, dict | list) else _go_syntax(value)
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {shown}", "field": path}


_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def dns1035(path: str, value: Any, mixed_case: bool = False) -> list[Cause]:
    """``IsDNS1035Label`` as an Invalid cause (``mixed_case``: a kind's rule, checked lowered
    and prefixed "may have mixed case, but should otherwise match: ")."""
    if not isinstance(value, str):
        return [invalid(path, str(value), "must be a string")]
    probe = value.lower() if mixed_case else value
    errs = []
    if len(probe) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035.match(probe):
        errs.append(_DNS1035_MSG)
    if not errs:
        return []
    detail = ",".join(errs)
    if mixed_case:
        detail = "may have mixed case, but should otherwise match: " + detail
    return [invalid(path, value, detail)]
