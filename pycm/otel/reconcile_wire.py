"""A fast, ok reconcile's span, encoded straight from its begin and end (or the bus's compact
records of them), in the bytes :func:`pycm.otel.wire.encode_span` writes for the span
:func:`pycm.otel.spans.step_span` builds of the same events — a test holds them equal.

The commonest kept span: what repeats between reconciles of one controller, kind and ending is
cached whole (a shape, bounded), text values are written from head tables, and the ids come from
one ``fromhex``, so a kept reconcile costs a few joins rather than a record and its encoding.
"""

from __future__ import annotations

import struct
from typing import Any

from opentelemetry.trace import SpanKind

from pycm.otel.spans import (
    K8S_KIND,
    step_span,
    trigger_detail_attributes,
    trigger_link_attributes,
)
from pycm.otel.wire import (
    _LINK_FLAGS,
    _MAX_CACHED,
    _SMALL,
    _SPAN_FLAGS,
    _STATUS_UNSET,
    _field,
    _key_value,
    _pack_d,
    _span_attribute,
    _varint,
    encode_attributes,
    encode_span,
)
from pycm.trace.causes import Trigger
from pycm.trace.events import Outcome
from pycm.trace.kinds import ReconcileFinished, ReconcileStarted

__all__ = ["encode_ok_reconcile", "encode_ok_record"]

_INTERNAL = b"\x30" + bytes([SpanKind.INTERNAL.value + 1])


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
    if names is not None and uids is not None:  # (a kind with both head tables, or neither)
        resource = shape_key[1]
        if name:
            encoded = name.encode()
            n = len(encoded)
            parts.append(names[n] + encoded if n < _HEADED else _kind_text(resource, "name", name))
        if uid:
            encoded = uid.encode()
            n = len(encoded)
            if n < _HEADED:
                parts.append(uids[n] + encoded)
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
