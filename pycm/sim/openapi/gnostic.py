"""A Swagger 2.0 document in gnostic's ``openapi.v2.Document`` protobuf, as kubectl reads it.

kubectl (1.20 and later, through ``discovery.OpenAPISchema``) asks ``/openapi/v2`` for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and unmarshals the body into
gnostic's generated ``openapi_v2.Document``. The encoder here writes the protobuf wire format by
hand from the field numbers of gnostic's ``OpenAPIv2.proto`` (facts of the format, written
below next to each message) for the subset the emulator's documents use: the swagger version,
info, paths (empty), and definitions — schemas with ``$ref``, format, title, description,
default, numeric and length bounds, pattern, required, enum, additionalProperties, type, items,
allOf, properties and ``x-`` vendor extensions. A vendor extension (and a default or an enum
value) is an ``Any`` carrying YAML, which is how kube-openapi decodes them (JSON is YAML).

Wire format: a field is a varint key ``number << 3 | wire_type`` and a value — varint (0) for
bools and integers, 64-bit little-endian (1) for doubles, length-delimited (2) for strings,
bytes and nested messages. Repeated fields repeat the key. proto3 omits defaults (empty
strings, zero numbers, false).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["encode_document"]

_VARINT, _FIXED64, _BYTES = 0, 1, 2


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 negatives are ten-byte two's complement varints
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _bytes(number: int, payload: bytes) -> bytes:
    return _key(number, _BYTES) + _varint(len(payload)) + payload


def _string(number: int, value: str) -> bytes:
    return _bytes(number, value.encode()) if value else b""


def _bool(number: int, value: bool) -> bytes:
    return _key(number, _VARINT) + b"\x01" if value else b""


def _int64(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _varint(value) if value else b""


def _double(number: int, value: float) -> bytes:
    return _key(number, _FIXED64) + struct.pack("<d", float(value)) if value else b""


def _any(value: Any) -> bytes:
    """message Any { google.protobuf.Any value = 1; string yaml = 2; }"""
    return _bytes(2, orjson.dumps(value))


def _named_any(name: str, value: Any) -> bytes:
    """message NamedAny { string name = 1; Any value = 2; }"""
    return _string(1, name) + _bytes(2, _any(value))


def _named_schema(name: str, schema: Mapping[str, Any]) -> bytes:
    """message NamedSchema { string name = 1; Schema value = 2; }"""
    return _string(1, name) + _bytes(2, _schema(schema))


# message Schema: the scalar fields by JSON name -> (number, encoder).
_SCHEMA_SCALARS: dict[str, tuple[int, Any]] = {
    "$ref": (1, _string),
    "format": (2, _string),
    "title": (3, _string),
    "description": (4, _string),
    "multipleOf": (6, _double),
    "maximum": (7, _double),
    "exclusiveMaximum": (8, _bool),
    "minimum": (9, _double),
    "exclusiveMinimum": (10, _bool),
    "maxLength": (11, _int64),
    "minLength": (12, _int64),
    "pattern": (13, _string),
    "maxItems": (14, _int64),
    "minItems": (15, _int64),
    "uniqueItems": (16, _bool),
    "maxProperties": (17, _int64),
    "minProperties": (18, _int64),
    "discriminator": (26, _string),
    "readOnly": (27, _bool),
}


def _schema(schema: Mapping[str, Any]) -> bytes:
    """message Schema (fields 1-31; see _SCHEMA_SCALARS for the scalars)."""
    out = bytearray()
    for name, value in schema.items():
        scalar = _SCHEMA_SCALARS.get(name)
        if scalar is not None:
            number, encode = scalar
            if isinstance(value, bool | int | float | str):
                out += encode(number, value)
        elif name == "default":
            out += _bytes(5, _any(value))
        elif name == "required" and isinstance(value, list):
            for item in value:
                out += _bytes(19, str(item).encode())
        elif name == "enum" and isinstance(value, list):
            for item in value:
                out += _bytes(20, _any(item))
        elif name == "additionalProperties":
            # message AdditionalPropertiesItem { oneof { Schema schema = 1; bool boolean = 2; } }
            if isinstance(value, Mapping):
                out += _bytes(21, _bytes(1, _schema(value)))
            elif isinstance(value, bool):
                out += _bytes(21, _key(2, _VARINT) + (b"\x01" if value else b"\x00"))
        elif name == "type":
            # message TypeItem { repeated string value = 1; }
            types = value if isinstance(value, list) else [value]
            out += _bytes(22, b"".join(_bytes(1, str(t).encode()) for t in types))
        elif name == "items" and isinstance(value, Mapping):
            # message ItemsItem { repeated Schema schema = 1; }
            out += _bytes(23, _bytes(1, _schema(value)))
        elif name == "allOf" and isinstance(value, list):
            for item in value:
                out += _bytes(24, _schema(item))
        elif name == "properties" and isinstance(value, Mapping):
            # message Properties { repeated NamedSchema additional_properties = 1; }
            out += _bytes(25, b"".join(_bytes(1, _named_schema(k, v)) for k, v in value.items()))
        elif name.startswith("x-"):
            out += _bytes(31, _named_any(name, value))
    return bytes(out)


def encode_document(document: Mapping[str, Any]) -> bytes:
    """message Document { string swagger = 1; Info info = 2; Paths paths = 8;
    Definitions definitions = 9; ... } — with Info { title = 1; version = 2; },
    Paths { repeated NamedPathItem path = 2; } (written empty) and
    Definitions { repeated NamedSchema additional_properties = 1; }."""
    out = bytearray(_string(1, str(document.get("swagger", "2.0"))))
    info = document.get("info") or {}
    out += _bytes(
        2, _string(1, str(info.get("title", ""))) + _string(2, str(info.get("version", "")))
    )
    out += _bytes(8, b"")
    definitions = document.get("definitions") or {}
    out += _bytes(9, b"".join(_bytes(1, _named_schema(k, v)) for k, v in definitions.items()))
    return bytes(out)
