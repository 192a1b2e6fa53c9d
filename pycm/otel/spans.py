"""From trace events to span data: names, kinds, attributes, links and status.

A :class:`SpanRecord` is the sink's own light record of one finished span (cheap to buffer and
to drop); :func:`to_readable` turns a kept one into the SDK's ``ReadableSpan`` with the event's
own ids, so a trace id in a log line or the TUI finds the same trace in Jaeger.

Attributes are built from a kind's flat fields only (names, keys, counts and timings — the trace
contract); FlagsParsed contributes its flag names, never their values.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from pycm.trace.events import ENVELOPE_FIELDS, Event, Outcome, StepBegin, StepEnd
from pycm.trace.kinds import (
    ApiRequestCompleted,
    FlagsParsed,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
)

__all__ = ["SpanRecord", "api_span", "point_span", "step_span", "to_readable"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
# The reconciled resource's kind, for k8s.<kind>.name / .uid (OTel's k8s semantic conventions).
K8S_KIND = {
    "deployments": "deployment",
    "replicasets": "replicaset",
    "pods": "pod",
    "statefulsets": "statefulset",
    "daemonsets": "daemonset",
    "jobs": "job",
    "cronjobs": "cronjob",
    "namespaces": "namespace",
    "nodes": "node",
}
_MAX_EVENTS = 32


@dataclass(slots=True)
class SpanRecord:
    """One finished span, as the sink buffers it."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None  # None: status unset; a text: status ERROR with that message

    def add_event(self, name: str, ts: int, attributes: dict[str, Any]) -> None:
        if len(self.events) < _MAX_EVENTS:
            self.events.append((name, ts, attributes))


def _value(v: Any) -> Any:
    return v.value if isinstance(v, enum.Enum) else v


def event_attributes(event: Event, prefix: str = "pycm.") -> dict[str, Any]:
    """The event's own flat attributes (empty strings left out), under ``prefix``."""
    out: dict[str, Any] = {}
    for f in fields(event):
        name = f.name
        if name in ENVELOPE_FIELDS:
            continue
        v = getattr(event, name)
        if v is None or v == "":
            continue
        out[prefix + name] = _value(v)
    if isinstance(event, FlagsParsed):
        # "flag=value" pairs: keep the names only (a value may be a path or a host).
        out.pop(prefix + "changed", None)
        names = [pair.split("=", 1)[0] for pair in event.changed.split(",") if pair]
        if names:
            out[prefix + "changed_flags"] = ",".join(names)
    return out


def _subject(begin: StepBegin) -> str:
    for attr in ("controller", "resource"):
        v = getattr(begin, attr, "")
        if v:
            return f" {v}"
    return ""


def step_span(begin: StepBegin, end: StepEnd) -> SpanRecord:
    """The span of a finished step (begin and end share the span id)."""
    start = begin.ts
    record = SpanRecord(
        trace_id=begin.trace_id,
        span_id=begin.span_id,
        parent_id=begin.parent_id,
        name=f"{begin.STEP}{_subject(begin)}",
        kind=SpanKind.INTERNAL,
        start_ns=start,
        end_ns=start + end.dur_ns,
        attributes={},
    )
    if isinstance(begin, ReconcileStarted) and isinstance(end, ReconcileFinished):
        _reconcile(record, begin, end)
    else:
        if begin.STEP == "startup":
            record.name = "pycm.startup"
        attrs = event_attributes(begin)
        attrs.update(event_attributes(end))
        record.attributes = attrs
    if end.outcome is Outcome.ERROR:
        record.error = end.error or "error"
    elif end.outcome is Outcome.CANCELLED:
        record.attributes["pycm.outcome"] = Outcome.CANCELLED.value
    return record


def _reconcile(record: SpanRecord, begin: ReconcileStarted, end: ReconcileFinished) -> None:
    record.name = f"reconcile {begin.controller}"
    attrs: dict[str, Any] = {
        "pycm.controller": begin.controller,
        "pycm.key": begin.key,
        "pycm.queue.wait_ms": begin.queue_wait_ms,
        "pycm.retries": begin.retries,
        # The members' own values (Enum's ``value`` is a Python-level property).
        "pycm.result": end.result._value_,
        "pycm.outcome": end.outcome._value_,
        "pycm.api_calls": end.api_calls,
    }
    if begin.namespace:
        attrs["k8s.namespace.name"] = begin.namespace
    kind = K8S_KIND.get(begin.resource)
    if begin.resource:
        attrs["pycm.resource"] = begin.resource
    if kind is not None and begin.name:
        attrs[f"k8s.{kind}.name"] = begin.name
    if kind is not None and end.uid:
        attrs[f"k8s.{kind}.uid"] = end.uid
    if end.action:
        attrs["pycm.action"] = end.action
    if end.requeue_after_ms:
        attrs["pycm.requeue_after_ms"] = end.requeue_after_ms
    if begin.trigger_event:
        attrs["pycm.trigger.event"] = begin.trigger_event
    attrs.update(
        trigger_detail_attributes(begin.trigger_writer, begin.trigger_paths, begin.trigger_merged)
    )
    record.attributes = attrs
    if end.result is ReconcileResult.ERROR and end.outcome is Outcome.OK:
        record.error = end.error or "reconcile failed"
    if begin.trigger_trace_id and begin.trigger_span_id:
        record.links.append(
            (
                begin.trigger_trace_id,
                begin.trigger_span_id,
                trigger_link_attributes(begin.trigger_event, begin.trigger_kind, begin.trigger_rv),
            )
        )


def reconcile_failed(end: ReconcileFinished) -> bool:
    return end.outcome is Outcome.ERROR or end.result is ReconcileResult.ERROR


def api_span(point: ApiRequestCompleted) -> SpanRecord:
    """An API request (a point carrying its latency) as a CLIENT span ending at the point."""
    host, _, port = point.host.rpartition(":")
    if not host:
        host, port = point.host, ""
    attrs: dict[str, Any] = {
        "http.request.method": point.method,
        "server.address": host,
        "k8s.verb": point.verb,
    }
    if point.path:
        attrs["url.path"] = point.path
    if port.isdigit():
        attrs["server.port"] = int(port)
    if point.code:
        attrs["http.response.status_code"] = point.code
    if point.resource:
        attrs["k8s.resource"] = point.resource
    if point.subresource:
        attrs["k8s.subresource"] = point.subresource
    if point.namespace:
        attrs["k8s.namespace.name"] = point.namespace
    if point.name:
        attrs["k8s.object.name"] = point.name
    if point.bytes:
        attrs["http.response.body.size"] = point.bytes
    if point.rate_limiter_wait_ms:
        attrs["pycm.rate_limiter_wait_ms"] = point.rate_limiter_wait_ms
    if point.retries:
        attrs["http.request.resend_count"] = point.retries
    if point.fenced:  # refused unsent (a retry's earlier attempt may have had a code)
        attrs["pycm.fenced"] = True
    error: str | None = None
    if point.error:
        error = point.error
        by_code = point.code and not point.fenced
        attrs["error.type"] = str(point.code) if by_code else point.error.split(":", 1)[0]
    elif point.code >= 400:
        error = f"HTTP {point.code}"
        attrs["error.type"] = str(point.code)
    target = point.resource + (f"/{point.subresource}" if point.subresource else "")
    return SpanRecord(
        trace_id=point.trace_id,
        span_id=point.span_id,
        parent_id=point.parent_id,
        name=f"{point.method} {target}" if target else point.method,
        kind=SpanKind.CLIENT,
        start_ns=point.ts - point.dur_ns,
        end_ns=point.ts,
        attributes=attrs,
        error=error,
    )


def point_span(point: Event, *, name: str = "", dur_ns: int = 0) -> SpanRecord:
    """A point (or a point that carries how long its work took) as a short INTERNAL span."""
    dur = dur_ns or point.dur_ns
    return SpanRecord(
        trace_id=point.trace_id,
        span_id=point.span_id,
        parent_id=point.parent_id,
        name=name or point.KIND,
        kind=SpanKind.INTERNAL,
        start_ns=point.ts - dur,
        end_ns=point.ts,
        attributes=event_attributes(point),
    )


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=False,
        trace_flags=_SAMPLED,
    )


def to_readable(
    record: SpanRecord, resource: Resource, scope: InstrumentationScope
) -> ReadableSpan:
    parent = _context(record.trace_id, record.parent_id) if record.parent_id else None
    status = Status(StatusCode.ERROR, record.error) if record.error is not None else Status()
    links = [
        Link(_context(trace_id, span_id), attributes)
        for trace_id, span_id, attributes in record.links
    ]
    events = [
        SpanEvent(name, _attrs(attributes), timestamp=ts) for name, ts, attributes in record.events
    ]
    return ReadableSpan(
        name=record.name,
        context=_context(record.trace_id, record.span_id),
        parent=parent,
        resource=resource,
        attributes=record.attributes,
        events=events,
        links=links,
        kind=record.kind,
        status=status,
        start_time=record.start_ns,
        end_time=max(record.end_ns, record.start_ns),
        instrumentation_scope=scope,
    )


def _attrs(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return dict(attributes)


def trigger_detail_attributes(writer: str, paths: str, merged: int) -> dict[str, Any]:
    """A reconcile span's attributes for why it ran, besides the event and the link (one place
    for the record path here and the direct encoders in pycm.otel.wire): the outside writer the
    object named, an update's changed paths, and how many events merged into it (past one)."""
    attrs: dict[str, Any] = {}
    if writer:
        attrs["pycm.trigger.writer"] = writer
    if paths:
        attrs["pycm.trigger.paths"] = paths
    if merged > 1:
        attrs["pycm.trigger.merged"] = merged
    return attrs


def trigger_link_attributes(event: str, kind: str, rv: str) -> dict[str, Any]:
    """The attributes of a reconcile's link to the watch event that caused it, from its
    begin's trigger fields (one place for the record path here and the direct encoders in
    :mod:`pycm.otel.wire`)."""
    link: dict[str, Any] = {"pycm.trigger.event": event or "unknown"}
    if kind:
        link["pycm.trigger.kind"] = kind
    if rv:
        link["pycm.trigger.resource_version"] = rv
    return link
