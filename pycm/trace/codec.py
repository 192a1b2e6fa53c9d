"""The one wire format: each event is one JSON object, ``{"kind": ..., <envelope>, <attrs>}``.

The same bytes are the SSE payload, a line of a ``--trace-file`` recording and replay input.
Encoding leans on orjson's native dataclass support (the kind is spliced in front); decoding
looks the kind up in the registry. An unknown kind (a newer pycm's recording) decodes to an
:class:`UnknownEvent` that re-encodes to the same object, so nothing is lost and no consumer
crashes; unknown attributes of a known kind are dropped, and an enum value a kind does not know
is kept as its plain string.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import orjson

from pycm.trace import kinds as _kinds  # noqa: F401  (registers every kind)
from pycm.trace.events import ENVELOPE_FIELDS, REGISTRY, Event, event_base

__all__ = ["CodecError", "UnknownEvent", "decode", "encode", "encode_str", "to_dict"]


class CodecError(ValueError):
    """The bytes are not a pycm trace event."""


@event_base
class UnknownEvent(Event):
    """An event of a kind this pycm does not know; ``raw`` keeps its attributes as JSON text.

    Not a registered kind (it has no wire name of its own: it re-encodes under ``kind``)."""

    kind: str = ""
    raw: str = "{}"


_kind_prefix: dict[type, bytes] = {}


def _prefix(cls: type[Event]) -> bytes:
    prefix = _kind_prefix.get(cls)
    if prefix is None:
        prefix = _kind_prefix[cls] = b'{"kind":' + orjson.dumps(cls.KIND) + b","
    return prefix


def encode(event: Event) -> bytes:
    """One event as compact JSON bytes (no newline)."""
    if isinstance(event, UnknownEvent):
        body: dict[str, Any] = orjson.loads(event.raw)
        for name in ENVELOPE_FIELDS:
            body[name] = getattr(event, name)
        return orjson.dumps({"kind": event.kind, **body})
    return _prefix(type(event)) + orjson.dumps(event)[1:]


def encode_str(event: Event) -> str:
    return encode(event).decode()


_fields_of: dict[type, frozenset[str]] = {}


def _field_names(cls: type[Event]) -> frozenset[str]:
    names = _fields_of.get(cls)
    if names is None:
        names = _fields_of[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def decode(data: bytes | str) -> Event:
    """The event encoded in ``data``; raises :class:`CodecError` for anything else."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    return from_dict(obj)


def from_dict(obj: Any) -> Event:
    """The event a decoded JSON object describes (see :func:`decode`)."""
    if not isinstance(obj, dict):
        raise CodecError("an event is a JSON object")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise CodecError("an event needs a non-empty string 'kind'")
    info = REGISTRY.get(kind)
    if info is None:
        envelope = {k: obj[k] for k in ENVELOPE_FIELDS if k in obj}
        rest = {k: v for k, v in obj.items() if k != "kind" and k not in ENVELOPE_FIELDS}
        try:
            return UnknownEvent(kind=kind, raw=orjson.dumps(rest).decode(), **envelope)
        except TypeError as exc:
            raise CodecError(f"bad envelope: {exc}") from None
    names = _field_names(info.cls)
    attrs = {k: v for k, v in obj.items() if k in names}
    for name, enum_cls in info.enums.items():
        value = attrs.get(name)
        if value is not None and not isinstance(value, enum.Enum):
            try:
                attrs[name] = enum_cls(value)
            except ValueError:
                pass  # a value from a newer pycm: keep the plain string
    return info.cls(**attrs)


def to_dict(event: Event) -> dict[str, Any]:
    """The event as the plain JSON object it encodes to (enums as their string values)."""
    out: dict[str, Any] = orjson.loads(encode(event))
    return out
