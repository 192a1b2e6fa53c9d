"""Our OTLP request encoding against the SDK's own, byte for byte, on the spans the sink makes."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind

from pycm.otel.reconcile_wire import encode_ok_reconcile
from pycm.otel.resource import build_resource
from pycm.otel.spans import SpanRecord, api_span, step_span, to_readable
from pycm.otel.wire import RequestEncoder, encode_span
from pycm.trace.bus import Bus
from pycm.trace.kinds import ApiRequestCompleted, ReconcileResult, ReconcileStarted
from pycm.util.clock import FakeClock
from tests.otel.scripts import reconcile

RESOURCE = build_resource("replica-1", {"POD_NAME": "pycm-0"}, version="1.2.3")
SCOPE = InstrumentationScope("pycm.otel", "1.2.3")


def _sdk_bytes(records: list[SpanRecord]) -> bytes:
    readable = [to_readable(r, RESOURCE, SCOPE) for r in records]
    return encode_spans(readable).SerializeToString()


def _ours(records: list[SpanRecord]) -> bytes:
    return RequestEncoder(RESOURCE.attributes, "pycm.otel", "1.2.3").encode(records)


def _record(**overrides: Any) -> SpanRecord:
    fields: dict[str, Any] = {
        "trace_id": "ab" * 16,
        "span_id": "cd" * 8,
        "parent_id": "",
        "name": "reconcile deployment",
        "kind": SpanKind.INTERNAL,
        "start_ns": 1_700_000_000_000_000_000,
        "end_ns": 1_700_000_000_010_000_000,
        "attributes": {"pycm.controller": "deployment"},
    }
    fields.update(overrides)
    return SpanRecord(**fields)


def _sink_spans() -> list[SpanRecord]:
    """The records the sink builds for a failed reconcile with a link and two API calls."""
    bus = Bus(instance="replica-1", clock=FakeClock())
    sub = bus.subscribe(name="t", maxsize=100)
    reconcile(bus, FakeClock(), fail="Conflict: changed", trigger=("12" * 16, "34" * 8))
    events = sub.drain()
    begin, *calls, end = events
    out = [api_span(c) for c in calls if isinstance(c, ApiRequestCompleted)]
    return [*out, step_span(begin, end)]  # type: ignore[arg-type]


CASES = [
    pytest.param(_sink_spans(), id="sink-reconcile-with-link-calls-and-error"),
    pytest.param(
        [
            _record(
                attributes={
                    "s": "x",
                    "unicode": "é✓" * 70,  # a length past one varint byte
                    "n": 3,
                    "negative": -7,
                    "big": 1 << 40,
                    "f": 1.5,
                    "yes": True,
                    "no": False,
                },
                events=[("lease.acquire_attempt", 5, {"pycm.lease": "kube-system/pycm"})],
                links=[("12" * 16, "34" * 8, {})],
            )
        ],
        id="every-value-type-events-and-a-bare-link",
    ),
    pytest.param(
        [
            _record(parent_id="ef" * 8, kind=SpanKind.CLIENT, name="n" * 300, error=""),
            _record(span_id="01" * 8, end_ns=1, error="boom"),  # ends before it starts
            _record(span_id="02" * 8, attributes={}),
        ],
        id="long-name-empty-error-negative-duration-no-attributes",
    ),
    pytest.param(
        [_record(span_id=f"{i:016x}") for i in range(1, 400)],
        id="a-batch-whose-lengths-take-three-varint-bytes",
    ),
]


@pytest.mark.parametrize("records", CASES)
def test_wire_request_is_byte_for_byte_the_sdk_encoding(records: list[SpanRecord]) -> None:
    ours = _ours(records)
    assert ours == _sdk_bytes(records)
    assert _ours(records) == ours  # cached pairs encode the same the second time


def test_wire_cache_keeps_int_and_bool_of_one_key_apart() -> None:
    # 1 == True as dict keys: a cache keyed on (key, value) alone would answer one for the other.
    one, true = _record(attributes={"k": 1}), _record(attributes={"k": True})
    _ours([one])
    request = ExportTraceServiceRequest.FromString(_ours([true]))
    (kv,) = request.resource_spans[0].scope_spans[0].spans[0].attributes
    assert kv.value.WhichOneof("value") == "bool_value"
    assert _ours([one, true]) == _sdk_bytes([one, true])


def _reconcile_events(begin: dict[str, Any], **finish: Any) -> tuple[Any, Any]:
    bus = Bus(instance="r", clock=FakeClock())
    sub = bus.subscribe(name="t", maxsize=10)
    with bus.step(ReconcileStarted(**begin)) as step:
        step.finish(**finish)
    started, finished = sub.drain()
    return started, finished


_BEGIN = {
    "controller": "deployment",
    "key": "default/web",
    "namespace": "default",
    "name": "web",
    "resource": "deployments",
    "queue_wait_ms": 3.25,
    "retries": 2,
}


@pytest.mark.parametrize(
    ("begin", "finish"),
    [
        pytest.param(_BEGIN, {"action": "noop", "uid": "u-1", "api_calls": 0}, id="noop"),
        pytest.param(
            {
                **_BEGIN,
                "trigger_kind": "Pod",
                "trigger_rv": "42",
                "trigger_event": "update",
                "trigger_trace_id": "12" * 16,
                "trigger_span_id": "34" * 8,
            },
            {"result": ReconcileResult.REQUEUE_AFTER, "requeue_after_ms": 1500.0},
            id="triggered-requeue-after",
        ),
        pytest.param(
            {**_BEGIN, "namespace": "", "resource": "widgets", "key": "k" * 200},
            {"uid": "u"},
            id="cluster-scoped-unknown-kind-long-key",
        ),
        pytest.param({"controller": ""}, {}, id="bare"),
        pytest.param(
            {
                **_BEGIN,
                "key": "ns/" + "k" * 300,
                "name": "é" * 70,  # 140 bytes: past the head tables, and not ASCII
                "retries": 300,  # an int past one varint byte
                "trigger_event": "resync",
                "trigger_trace_id": "56" * 16,
                "trigger_span_id": "78" * 8,
                "trigger_rv": "9" * 200,
            },
            {"uid": "u" * 127, "api_calls": 7, "action": "scaled"},
            id="long-text-values-long-rv-link-without-kind",
        ),
        pytest.param(
            {**_BEGIN, "trigger_trace_id": "56" * 16, "trigger_span_id": "78" * 8},
            {"uid": "u" * 128, "requeue_after_ms": 0.5},
            id="link-without-event-or-rv",
        ),
        pytest.param({**_BEGIN, "queue_wait_ms": 3}, {}, id="an-int-wait"),
    ],
)
def test_wire_ok_reconcile_from_its_events_is_the_record_encoding(
    begin: dict[str, Any], finish: dict[str, Any]
) -> None:
    started, finished = _reconcile_events(begin, **finish)
    expected = encode_span(step_span(started, finished))
    assert encode_ok_reconcile(started, finished) == expected
    assert encode_ok_reconcile(started, finished) == expected  # and again, from the caches


def test_wire_ok_reconcile_of_a_child_step_carries_its_parent() -> None:
    bus = Bus(instance="r", clock=FakeClock())
    sub = bus.subscribe(name="t", maxsize=10)
    with bus.step(ReconcileStarted(controller="outer")), bus.step(ReconcileStarted(**_BEGIN)):
        pass
    _, inner_begin, inner_end, _ = sub.drain()
    assert inner_begin.parent_id
    expected = encode_span(step_span(inner_begin, inner_end))  # type: ignore[arg-type]
    assert encode_ok_reconcile(inner_begin, inner_end) == expected  # type: ignore[arg-type]
