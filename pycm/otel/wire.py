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

Message and field numbers: opentelemetry/proto/{collector/trace,trace,common,resource}/v1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.trace import SpanKind

from pycm.otel.spans import (
    K8S_KIND,
    SpanRecord,
    step_span,
    trigger_detail_attributes,
    trigger_link_attributes,
)
from pycm.trace.causes import Trigger
from pycm.trace.events import Outcome
from pycm.trace.kinds import ReconcileFinished, ReconcileStarted

__all__ = [
    "RequestEncoder",
    "encode_attributes",
    "encode_ok_reconcile",
    "encode_ok_record",
    "encode_span",
]

_pack_q = struct.Struct("<Q").pack
_pack_d = struct.Struct("<d").pack
_MAX_CACHED = 8192  # (key, value) pairs remembered before the cache starts over
_U64 = 1 << 64

# Span.kind by the SDK's enum value (indexed by ``_value_``: an Enum's hash is Python code); the
# proto's SpanKind is that value + 1 (0 is UNSPECIFIED).
_KIND = [b"\x30" + bytes([value + 1]) for value in range(max(k.value for k in SpanKind) + 1)]
# Span.flags (fixed32, field 16): SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (parents are local).
_SPAN_FLAGS = b"\x85\x01" + struct.pack("<I", 0x100)
_INTERNAL = b"\x30" + bytes([SpanKind.INTERNAL.value + 1])
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


# -- the commonest kept span, straight from its events ---------------------------------------


def _text_headers(tag: bytes, key: str) -> list[bytes]:
    """The head of a KeyValue field with ``tag`` and a text value, for values of 0 to
    ``_HEADED - 1`` bytes: with the value's bytes appended, the whole field."""
    key_field = _field(b"\x0a", key.encode())
    heads = []
    for n in range(_HEADED):
        value_head = b"\x0a" + _varint(n)  # AnyValue.string_value
        any_head = b"\x12" + _varint(len(value_head) + n)  # KeyValue.value
        size = len(key_field) + len(any_head) + len(value_head) + n
        heads.append(tag + _varint(size) + key_field + any_head + value_head)
    return heads


_HEADED = 128  # text values shorter than this many bytes are written from a head table
_KEY_HEADS = _text_headers(b"\x4a", "pycm.key")
_RV_HEADS = _text_headers(b"\x22", "pycm.trigger.resource_version")
_WAIT_HEAD = b"\x4a" + _key_value("pycm.queue.wait_ms", 0.0)[:-8]  # without the double
_REQUEUE_HEAD = b"\x4a" + _key_value("pycm.requeue_after_ms", 0.0)[:-8]
_pack_times = struct.Struct("<BQBQ").pack  # Span.start_time_unix_nano (7), end (8): fixed64
_STATUS_AND_FLAGS = _STATUS_UNSET + _SPAN_FLAGS


def _long_text(tag: bytes, key: str, value: str) -> bytes:
    """A KeyValue field with ``tag`` and a text value too long for a head table (not cached)."""
    kv = _field(b"\x0a", key.encode()) + _field(b"\x12", _field(b"\x0a", value.encode()))
    return tag + _varint(len(kv)) + kv


def _text(heads: list[bytes], tag: bytes, key: str, value: str) -> bytes:
    """A KeyValue field with ``tag``, ``key`` and a text value (``heads``: its head table)."""
    encoded = value.encode()
    n = len(encoded)
    return heads[n] + encoded if n < _HEADED else _long_text(tag, key, value)


def _kind_text(resource: str, what: str, value: str) -> bytes:
    """The ``k8s.<kind>.<what>`` span attribute with a long value."""
    return _long_text(b"\x4a", f"k8s.{K8S_KIND[resource]}.{what}", value)


# What a reconcile span repeats, by what it depends on: the ends of the reconciles of one
# controller and one kind that went alike (bounded: cleared when full).
_Shape = tuple[bytes, bytes, bytes, "list[bytes] | None", "list[bytes] | None", bytes, bytes]
_shapes: dict[tuple[Any, ...], _Shape] = {}
# The head tables of k8s.<kind>.name and .uid, by kind (K8S_KIND's few).
_kind_heads: dict[str, tuple[list[bytes], list[bytes]]] = {}


def _shape(
    controller: str,
    resource: str,
    namespace: str,
    retries: int,
    result: str,
    outcome: str,
    api_calls: int,
    action: str,
    event: str,
) -> _Shape:
    """(name and kind, the controller attribute, retries to resource, the kind's name and uid
    head tables, the action attribute, the trigger event attribute) in ``step_span``'s order."""
    head = _field(b"\x2a", f"reconcile {controller}".encode()) + _INTERNAL
    middle = [
        _span_attribute(("pycm.retries", retries)),
        _span_attribute(("pycm.result", result)),
        _span_attribute(("pycm.outcome", outcome)),
        _span_attribute(("pycm.api_calls", api_calls)),
    ]
    if namespace:
        middle.append(_span_attribute(("k8s.namespace.name", namespace)))
    if resource:
        middle.append(_span_attribute(("pycm.resource", resource)))
    kind = K8S_KIND.get(resource)
    names = uids = None
    if kind is not None:
        names, uids = _kind_heads.get(kind) or _kind_heads.setdefault(
            kind,
            (_text_headers(b"\x4a", f"k8s.{kind}.name"), _text_headers(b"\x4a", f"k8s.{kind}.uid")),
        )
    action_attr = _span_attribute(("pycm.action", action)) if action else b""
    trigger = _span_attribute(("pycm.trigger.event", event)) if event else b""
    controller_attr = _span_attribute(("pycm.controller", controller))
    return head, controller_attr, b"".join(middle), names, uids, action_attr, trigger


_link_heads: dict[tuple[str, str], bytes] = {}


def _trigger_link(event: str, kind: str, rv: str, trace_id: str, span_id: str) -> bytes:
    """Span.links (field 13): the link to the watch event that enqueued the key."""
    attrs = _link_heads.get((event, kind))
    if attrs is None:
        bare = trigger_link_attributes(event, kind, "")
        attrs = encode_attributes(b"\x22", bare)
        if len(_link_heads) >= _MAX_CACHED:
            _link_heads.clear()
        _link_heads[event, kind] = attrs
    body = b"".join(
        [
            b"\x0a\x10",
            bytes.fromhex(trace_id),
            b"\x12\x08",
            bytes.fromhex(span_id),
            attrs,
            _text(_RV_HEADS, b"\x22", "pycm.trigger.resource_version", rv) if rv else b"",
            _LINK_FLAGS,
        ]
    )
    return _field(b"\x6a", body)


def encode_ok_reconcile(begin: ReconcileStarted, end: ReconcileFinished) -> bytes:
    """``encode_span(step_span(begin, end))`` for a reconcile that ended ok and not in error,
    with no span events, written without the record and its attribute dict (a test holds the
    bytes equal): what repeats from reconcile to reconcile comes whole from ``_shapes``, the
    text values are appended to their fields' heads, and the ids go through one ``fromhex``.
    Attributes in :func:`pycm.otel.spans.step_span`'s order."""
    trace_id = begin.trace_id
    span_id = begin.span_id
    wait = begin.queue_wait_ms
    if len(trace_id) != 32 or len(span_id) != 16 or type(wait) is not float:
        return encode_span(step_span(begin, end))  # ids fromhex would splice wrongly; an int
    parent = begin.parent_id
    # Span.trace_id (1), span_id (2) and parent_span_id (4) with their tags, in one call.
    ids = bytes.fromhex(
        f"0a10{trace_id}1208{span_id}2208{parent}" if parent else f"0a10{trace_id}1208{span_id}"
    )
    event = begin.trigger_event
    link_trace, link_span = begin.trigger_trace_id, begin.trigger_span_id
    return _encode_ok(
        ids,
        begin.ts,
        end.dur_ns,
        begin.key,
        begin.namespace,
        begin.name,
        wait,
        (
            begin.controller,
            begin.resource,
            begin.namespace,
            begin.retries,
            end.result._value_,
            end.outcome._value_,
            end.api_calls,
            end.action,
            event,
        ),
        end.uid,
        end.requeue_after_ms,
        (event, begin.trigger_kind, begin.trigger_rv, link_trace, link_span)
        if link_trace and link_span
        else None,
        _trigger_detail(begin.trigger_writer, begin.trigger_paths, begin.trigger_merged),
    )


_OK_V = Outcome.OK.value  # as a shape key holds it


def encode_ok_record(begin: tuple[Any, ...], end: tuple[Any, ...], ids: bytes) -> bytes:
    """:func:`encode_ok_reconcile` of the events a root reconcile's compact records stand for
    (their layouts: pycm.trace.bus), written from the records' values: the events are never
    built. The end is tagged RECONCILE_END (it ended ok). ``ids``: the Span's trace_id and
    span_id fields, tagged (``0a 10`` + the 16 bytes of the trace id + ``12 08`` + the 8 of the
    span id), as the bus derives them."""
    _, _, head, start_ns, offset_ns, key, wait_ns, retries, trigger = begin
    _, _, _, end_ns, result, action, uid, api_calls, requeue_after_ms = end
    controller, resource = head[3], head[4]
    namespace, _, name = key.rpartition("/")
    detail = b""
    if trigger is None:
        event = ""
        link = None
    else:
        if type(trigger) is Trigger and (trigger.writer or trigger.paths or trigger.merged > 1):
            detail = _trigger_detail(trigger.writer, trigger.paths, trigger.merged)
        event = trigger.event
        link_trace, link_span = (
            trigger.ids()
            if type(trigger) is Trigger
            else (
                trigger.trace_id,
                trigger.span_id,
            )
        )
        link = (
            (event, trigger.kind, trigger.resource_version, link_trace, link_span)
            if link_trace and link_span
            else None
        )
    return _encode_ok(
        ids,
        start_ns + offset_ns,
        end_ns - start_ns,
        key,
        namespace,
        name,
        wait_ns / 1e6,
        (controller, resource, namespace, retries, result, _OK_V, api_calls, action, event),
        uid,
        requeue_after_ms,
        link,
        detail,
    )


def _trigger_detail(writer: str, paths: str, merged: int) -> bytes:
    """The trigger's writer, paths and merged count as encoded attributes (b"" when none)."""
    if not (writer or paths or merged > 1):
        return b""
    return encode_attributes(b"\x4a", trigger_detail_attributes(writer, paths, merged))


def _encode_ok(
    ids: bytes,
    start: int,
    dur_ns: int,
    key: str,
    namespace: str,
    name: str,
    wait: float,
    shape_key: tuple[Any, ...],
    uid: str,
    requeue_after_ms: float,
    link: tuple[str, str, str, str, str] | None,
    detail: bytes = b"",
) -> bytes:
    """The span from its tagged ids, its times, its text values and what it repeats
    (``shape_key``: :func:`_shape`'s arguments); ``link``: the trigger's event, kind, resource
    version, trace id and span id, when it has a context."""
    shape = _shapes.get(shape_key)
    if shape is None:
        if len(_shapes) >= _MAX_CACHED:
            _shapes.clear()
        shape = _shapes[shape_key] = _shape(*shape_key)
    head, controller_attr, middle, names, uids, action_attr, trigger = shape
    stop = start + dur_ns
    obj_key = key.encode()
    n = len(obj_key)
    parts = [
        ids,
        head,
        _pack_times(0x39, start, 0x41, stop if stop > start else start),
        controller_attr,
        _KEY_HEADS[n] + obj_key if n < _HEADED else _long_text(b"\x4a", "pycm.key", key),
        _WAIT_HEAD + _pack_d(wait),
        middle,
    ]
    if names is not None:
        resource = shape_key[1]
        if name:
            encoded = name.encode()
            n = len(encoded)
            parts.append(names[n] + encoded if n < _HEADED else _kind_text(resource, "name", name))
        if uid:
            encoded = uid.encode()
            n = len(encoded)
            if n < _HEADED:
                parts.append(uids[n] + encoded)  # type: ignore[index]
            else:
                parts.append(_kind_text(resource, "uid", uid))
    parts.append(action_attr)
    if requeue_after_ms:
        parts.append(_REQUEUE_HEAD + _pack_d(requeue_after_ms))
    parts.append(trigger)
    if detail:
        parts.append(detail)
    if link is not None:
        parts.append(_trigger_link(*link))
    parts.append(_STATUS_AND_FLAGS)
    body = b"".join(parts)
    n = len(body)
    if n < 0x80:
        return b"\x12" + _SMALL[n] + body
    if n < 0x4000:
        return bytes((0x12, n & 0x7F | 0x80, n >> 7)) + body
    return b"\x12" + _varint(n) + body
