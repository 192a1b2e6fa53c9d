"""core/v1 Secret (kube's ``pkg/registry/core/secret`` and ``ValidateSecret``).

- ``data`` values are base64 (Go's ``[]byte``): one that is not is a 400 from decoding,
  ``Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte N``.
- ``stringData`` is write-only: its keys are merged into ``data`` (overwriting) when the
  request is decoded, on every write (create, update, patch), and it is never stored.
- ``type`` defaults to ``Opaque`` and is immutable; a typed secret needs its keys:
  ``kubernetes.io/tls`` ``tls.crt`` and ``tls.key``; ``kubernetes.io/dockerconfigjson``
  ``.dockerconfigjson`` holding a JSON object (``kubernetes.io/dockercfg`` likewise
  ``.dockercfg``); ``kubernetes.io/basic-auth`` ``username`` or ``password``;
  ``kubernetes.io/ssh-auth`` ``ssh-privatekey``; ``kubernetes.io/service-account-token`` the
  annotation ``kubernetes.io/service-account.name`` (no token controller fills it in here).
- Keys are config keys; the decoded data is at most 1 MiB; ``immutable: true`` forbids changing
  ``data`` or unsetting ``immutable`` (``field is immutable when `immutable` is set``).

Causes never carry secret values: a bad JSON document is shown as ``<secret contents
redacted>``, as kube shows it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pycm.sim import errors, shape, validation
from pycm.sim.errors import Cause
from pycm.sim.gobase64 import Base64Error, decode_std
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.tables import Printer, age, col

__all__ = ["STRATEGY", "SecretStrategy", "immutable_data_causes"]

MAX_SECRET_BYTES = 1024 * 1024  # corev1.MaxSecretSize
_REDACTED = "<secret contents redacted>"
_CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def _data(obj: Obj) -> dict[str, Any]:
    data = obj.get("data")
    return data if isinstance(data, dict) else {}


def _config_key_causes(field: str, key: str) -> list[Cause]:
    """kube's IsConfigMapKey: the key's characters, length and that it is not "." or ".."."""
    causes = []
    if len(key) > 253:
        causes.append(validation.invalid_value(field, key, "must be no more than 253 characters"))
    if not key or any(not (c.isascii() and (c.isalnum() or c in "-._")) for c in key):
        causes.append(validation.invalid_value(field, key, _CONFIG_KEY))
    if key == ".":
        causes.append(validation.invalid_value(field, key, "must not be '.'"))
    elif key == "..":
        causes.append(validation.invalid_value(field, key, "must not be '..'"))
    elif key.startswith(".."):
        causes.append(validation.invalid_value(field, key, "must not start with '..'"))
    return causes


def _json_object_causes(field: str, encoded: Any) -> list[Cause]:
    """Is the decoded value a JSON object (Go's json.Unmarshal into a map)?"""
    text = decode_std(str(encoded)).decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        return [validation.invalid_value(field, _REDACTED, _go_json_error(text, err))]
    if not isinstance(doc, dict):
        kind = _GO_TYPES.get(type(doc).__name__, "value")
        why = f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        return [validation.invalid_value(field, _REDACTED, why)]
    return []


def _container_at(text: str, pos: int) -> str:
    """The innermost open ``{`` or ``[`` before ``pos`` (strings skipped), or ""."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _go_json_error(text: str, err: json.JSONDecodeError) -> str:
    """Go's json.Unmarshal wording for the error Python found at ``err.pos``."""
    if err.pos >= len(text) or err.msg.startswith("Unterminated string"):
        return "unexpected end of JSON input"
    char = text[err.pos]
    shown = "'\\''" if char == "'" else f"'{char}'"
    if err.msg.startswith("Expecting property name"):
        return f"invalid character {shown} looking for beginning of object key string"
    if err.msg.startswith("Expecting ':'"):
        return f"invalid character {shown} after object key"
    if err.msg.startswith("Expecting ','"):
        inside = "object key:value pair" if _container_at(text, err.pos) == "{" else "array element"
        return f"invalid character {shown} after {inside}"
    if err.msg.startswith("Extra data"):
        return f"invalid character {shown} after top-level value"
    if err.msg.startswith("Invalid control character"):
        return f"invalid character {shown} in string literal"
    return f"invalid character {shown} looking for beginning of value"


_GO_TYPES = {"list": "array", "str": "string", "int": "number", "float": "number", "bool": "bool"}


def immutable_data_causes(new: Obj, old: Obj, sections: tuple[str, ...]) -> list[Cause]:
    """kube's rule for an ``immutable`` Secret or ConfigMap: it stays immutable and its
    ``sections`` (data, binaryData) keep their content."""
    if old.get("immutable") is not True:
        return []
    why = "field is immutable when `immutable` is set"
    causes = []
    if new.get("immutable") is not True:
        causes.append(validation.forbidden("immutable", why))
    for section in sections:
        if (new.get(section) or {}) != (old.get(section) or {}):
            causes.append(validation.forbidden(section, why))
    return causes


class SecretStrategy(Strategy):
    field_labels = ("type",)

    def check_shape(self, obj: Any) -> None:
        shape.check_shape(self.kind, obj)
        for section in ("data", "stringData"):
            values = obj.get(section) if isinstance(obj, dict) else None
            for value in values.values() if isinstance(values, dict) else ():
                if value is not None and not isinstance(value, str):
                    raise errors.bad_request(
                        f'Secret in version "v1" cannot be handled as a Secret: json: cannot '
                        f"unmarshal {_GO_TYPES.get(type(value).__name__, 'object')} into Go "
                        f"struct field Secret.{section} of type "
                        + ("[]uint8" if section == "data" else "string")
                    )
                if section == "data" and value is not None:
                    try:
                        decode_std(value)
                    except Base64Error as err:
                        raise errors.bad_request(
                            f'Secret in version "v1" cannot be handled as a Secret: {err}'
                        ) from None

    def decode(self, obj: Obj) -> None:
        """``stringData`` is merged into ``data`` (base64-encoded), and dropped."""
        string_data = obj.pop("stringData", None)
        if not isinstance(string_data, dict) or not string_data:
            return
        data = obj.get("data")
        if not isinstance(data, dict):
            data = obj["data"] = {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value or "").encode()).decode()

    def default(self, obj: Obj) -> None:
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validation.metadata_causes(obj, name_is_label=False)
        data = _data(obj)
        size = 0
        for key, value in data.items():
            causes += _config_key_causes(f"data[{key}]", str(key))
            size += len(decode_std(str(value or "")))
        if size > MAX_SECRET_BYTES:
            causes.append(validation.too_long("data", MAX_SECRET_BYTES))
        kind = obj.get("type") or ""
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if kind == "kubernetes.io/service-account-token":
            if not annotations.get("kubernetes.io/service-account.name"):
                causes.append(
                    validation.required("metadata.annotations[kubernetes.io/service-account.name]")
                )
        elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
            key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
            if key not in data:
                causes.append(validation.required(f"data[{key}]"))
            else:
                causes += _json_object_causes(f"data[{key}]", data[key])
        elif kind == "kubernetes.io/basic-auth":
            if "username" not in data and "password" not in data:
                # kube's path for these two is literally "data[%s]" with the key after it.
                causes.append(validation.required("data[%s][username]"))
                causes.append(validation.required("data[%s][password]"))
        elif kind == "kubernetes.io/ssh-auth":
            if not decode_std(str(data.get("ssh-privatekey") or "")):
                causes.append(validation.required("data[%s][ssh-privatekey]"))
        elif kind == "kubernetes.io/tls":
            for key in ("tls.crt", "tls.key"):
                if key not in data:
                    causes.append(validation.required(f"data[{key}]"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = validation.immutable("type", new.get("type"), old.get("type"))
        causes += immutable_data_causes(new, old, ("data",))
        return causes + self.validate(new)


STRATEGY = SecretStrategy(
    "Secret",
    Printer(
        [col("Name", fmt="name"), col("Type"), col("Data", "integer"), col("Age")],
        lambda o, now: [
            o["metadata"]["name"],
            o.get("type") or "",
            len(o.get("data") or {}),
            age(o, now),
        ],
    ),
)
