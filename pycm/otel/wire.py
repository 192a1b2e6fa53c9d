"""The OTLP trace request, encoded straight from the sink's span records (protobuf wire format).

The SDK's encoder builds one protobuf message object per span, attribute, value, event and link
(``KeyValue(key=…, value=AnyValue(…))``) before serializing them: ~350k instructions a span
here, all of it in the exporter thread holding the GIL the event loop needs. This writes the
same bytes — a test holds them equal to the SDK's own encoding of the same spans, field for
field — from :class:`~pycm.otel.spans.SpanRecord` with byte concatenation and two caches:
attribute keys and names (few), and ``(key, value)`` pairs (bounded: cleared when full, since
object names and keys are unbounded while controllers, results and namespaces repeat).

Only what the sink produces is handled: flat str/bool/int/float attribute values (the trace
contract), local parents (flags say "is_remote known, not remote"), no trace state.

The commonest kept span, a fast ok reconcile, is encoded straight from its begin and end by
:mod:`pycm.otel.reconcile_wire` with the field helpers here.

Message and field numbers: opentelemetry/proto/{collector/trace,trace,common,resource}/v1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.trace import SpanKind

from pycm.otel.spans import SpanRecord

__all__ = ["RequestEncoder", "encode_attributes", "encode_span"]

_pack_q = struct.Struct("<Q").pack
_pack_d = struct.Struct("<d").pack
_MAX_CACHED = 8192  # (key, value) pairs remembered before the cache starts over
_U64 = 1 << 64

# Span.kind by the SDK's enum value (indexed by ``_value_``: an Enum's hash is Python code); the
# proto's SpanKind is that value + 1 (0 is UNSPECIFIED).
_KIND = [b"\x30" + bytes([value + 1]) for value in range(max(k.value for k in SpanKind) + 1)]
# Span.flags (fixed32, field 16): SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (parents are local).
_SPAN_FLAGS = b"\x85\x01" + struct.pack("<I", 0x100)
_LINK_FLAGS = b"\x35" + struct.pack("<I", 0x100)  # Link.flags, field 6
_STATUS_UNSET = b"\x7a\x00"  # Span.status (field 15): an empty Status is still sent


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [bytes([i]) for i in range(0x80)]


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 0x80 else _varint(n)) + payload


def _any_value(value: Any) -> bytes:
    """AnyValue's body (bool first: it is an int)."""
    cls = type(value)
    if cls is str:
        return _field(b"\x0a", value.encode())
    if cls is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if cls is int:
        return b"\x18" + _varint(value if value >= 0 else value + _U64)
    if cls is float:
        return b"\x21" + _pack_d(value)
    if value is None:
        return b""
    if isinstance(value, str):  # an enum with a str mixin, say
        return _field(b"\x0a", str(value).encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + _varint(int(value) % _U64)
    if isinstance(value, float):
        return b"\x21" + _pack_d(float(value))
    raise TypeError(f"attribute value of type {cls.__name__} is not flat")


# (key, value) -> the KeyValue, length-prefixed. Text values only, so that any attribute item
# can be looked up as it is (1 == 1.0 == True as dict keys; none of them equals a text).
_pairs: dict[tuple[str, Any], bytes] = {}
_int_pairs: dict[tuple[str, int], bytes] = {}  # int values, looked up only for an int
_keys: dict[str, bytes] = {}


def _key_value(key: str, value: Any) -> bytes:
    """One KeyValue, length-prefixed (the caller puts the field's tag in front)."""
    cls = type(value)
    cache = _pairs if cls is str else _int_pairs if cls is int else None
    if cache is not None:
        kv = cache.get((key, value))
        if kv is not None:
            return kv
    key_field = _keys.get(key)
    if key_field is None:
        key_field = _keys[key] = _field(b"\x0a", key.encode())
    kv = key_field + _field(b"\x12", _any_value(value))
    n = len(kv)
    kv = (_SMALL[n] if n < 0x80 else _varint(n)) + kv
    if cache is not None:
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[key, value] = kv
    return kv


def encode_attributes(tag: bytes, attributes: Mapping[str, Any]) -> bytes:
    """Every attribute as a repeated KeyValue field with ``tag``."""
    kv = _key_value
    return b"".join([tag + kv(k, v) for k, v in attributes.items()])


_names: dict[str, bytes] = {}


def _name(name: str) -> bytes:
    """Span.name (field 5), cached: span names are few (``reconcile deployment``)."""
    encoded = _names.get(name)
    if encoded is None:
        encoded = _field(b"\x2a", name.encode())
        if len(_names) < _MAX_CACHED:
            _names[name] = encoded
    return encoded


# Span.attributes fields (tag 9 included) of text values, by (key, value) as items() yields
# them: a reconcile's controller, resource, result, outcome, action and namespace repeat.
_span_attrs: dict[tuple[str, Any], bytes] = {}


_span_int_attrs: dict[tuple[str, Any], bytes] = {}  # int values, looked up only for an int


def _span_attribute(item: tuple[str, Any]) -> bytes:
    key, value = item
    cls = type(value)
    if cls is str or cls is float:
        # The miss path of the common kinds (object names, keys, uids, milliseconds), with no
        # call for a short key and value: most are seen once, so caching alone would not do.
        key_field = _keys.get(key)
        if key_field is None:
            key_field = _keys[key] = _field(b"\x0a", key.encode())
        if cls is str:
            encoded = value.encode()
            n = len(encoded)
            if n > 125:
                return b"\x4a" + _key_value(key, value)
            any_value = b"\x12" + _SMALL[n + 2] + b"\x0a" + _SMALL[n] + encoded
        else:
            any_value = b"\x12\x09\x21" + _pack_d(value)
        n = len(key_field) + len(any_value)
        text: bytes = b"\x4a" + (_SMALL[n] if n < 0x80 else _varint(n)) + key_field + any_value
        if cls is str:
            if len(_span_attrs) >= _MAX_CACHED:
                _span_attrs.clear()
            _span_attrs[item] = text
        return text
    if cls is int:
        field = _span_int_attrs.get(item)
        if field is not None:
            return field
    field = b"\x4a" + _key_value(*item)
    cache = _span_attrs if cls is str else _span_int_attrs if cls is int else None
    if cache is not None:
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[item] = field
    return field


def encode_span(record: SpanRecord) -> bytes:
    """One span as ScopeSpans.spans (field 2): tag, length, the Span in field-number order."""
    start = record.start_ns
    end = record.end_ns
    parent = record.parent_id
    attribute = _span_attrs.get
    parts = [
        b"\x0a\x10" + bytes.fromhex(record.trace_id) + b"\x12\x08" + bytes.fromhex(record.span_id),
        b"\x22\x08" + bytes.fromhex(parent) if parent else b"",
        _name(record.name),
        _KIND[record.kind._value_],
        b"\x39" + _pack_q(start) + b"\x41" + _pack_q(end if end > start else start),
        *[attribute(item) or _span_attribute(item) for item in record.attributes.items()],
    ]
    for name, ts, attributes in record.events:
        body = b"\x09" + _pack_q(ts) + _field(b"\x12", name.encode())
        if attributes:
            body += encode_attributes(b"\x1a", attributes)
        parts.append(_field(b"\x5a", body))
    for trace_id, span_id, attributes in record.links:
        body = b"\x0a\x10" + bytes.fromhex(trace_id) + b"\x12\x08" + bytes.fromhex(span_id)
        if attributes:
            body += encode_attributes(b"\x22", attributes)
        parts.append(_field(b"\x6a", body + _LINK_FLAGS))
    error = record.error
    if error is None:
        parts.append(_STATUS_UNSET + _SPAN_FLAGS)
    else:
        message = _field(b"\x12", error.encode()) if error else b""
        parts.append(_field(b"\x7a", message + b"\x18\x02") + _SPAN_FLAGS)
    body = b"".join(parts)
    n = len(body)
    return b"\x12" + (_SMALL[n] if n < 0x80 else _varint(n)) + body


class RequestEncoder:
    """ExportTraceServiceRequest bytes for batches of spans of one resource and one scope."""

    def __init__(self, resource: Mapping[str, Any], scope_name: str, scope_version: str) -> None:
        scope = _field(b"\x0a", scope_name.encode())
        if scope_version:
            scope += _field(b"\x12", scope_version.encode())
        # ResourceSpans.resource (1): Resource.attributes (1); ScopeSpans.scope (1).
        self._resource = _field(b"\x0a", encode_attributes(b"\x0a", resource))
        self._scope = _field(b"\x0a", scope)

    def request(self, spans: Iterable[bytes]) -> bytes:
        """The request for spans made by :func:`encode_span`: the heads are sized from the
        spans' lengths and everything is joined once (a batch is ~100 kB; each nesting
        written as head + body would copy it again)."""
        spans = spans if type(spans) is list else list(spans)
        scope_spans = len(self._scope) + sum(map(len, spans))
        scope_head = b"\x12" + _varint(scope_spans)  # ResourceSpans.scope_spans (2)
        resource_spans = len(self._resource) + len(scope_head) + scope_spans
        head = b"".join(
            [
                b"\x0a",  # request.resource_spans (1)
                _varint(resource_spans),
                self._resource,
                scope_head,
                self._scope,
            ]
        )
        return b"".join([head, *spans])

    def encode(self, records: Iterable[SpanRecord]) -> bytes:
        return self.request([encode_span(r) for r in records])
