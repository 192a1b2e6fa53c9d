"""The cause window: a sampled-out reconcile that wrote is held, and exported after all when a
kept reconcile links to it within the window (with its own cause, a bounded number of links
deep); otherwise dropped and counted when the window passes. Bounded by count and bytes."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans
from opentelemetry.sdk.trace import ReadableSpan
from prometheus_client import CollectorRegistry

from pycm.controller import Controller, Result
from pycm.otel.causes import CAUSE_WINDOW, RECORD_BYTES
from pycm.otel.metrics import SinkMetrics
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import OtelSink
from pycm.trace.bus import Bus, Step
from pycm.trace.causes import Trigger
from pycm.trace.context import _current
from pycm.trace.kinds import ApiRequestCompleted, ReconcileResult, ReconcileStarted
from pycm.util.clock import FakeClock
from pycm.util.sampling import TraceIdRatio
from tests.otel.conftest import Harness, make_harness
from tests.otel.scripts import api_call, reconcile
from tests.otel.test_sink_batches import _Records

Ids = tuple[str, str]


def _ids(span: ReadableSpan) -> Ids:
    assert span.context is not None
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def _exported(h: Harness) -> dict[Ids, ReadableSpan]:
    return {_ids(s): s for s in h.spans()}


def _cause(h: Harness, name: str, trigger: Ids = ("", ""), writes: int = 2) -> Ids:
    """A fast, ok reconcile that wrote (sampled out at ratio 0: held)."""
    return reconcile(h.bus, h.clock, name=name, calls=writes, verb="create", trigger=trigger)


def _failed(h: Harness, trigger: Ids, name: str = "effect") -> Ids:
    """A failed reconcile (kept) linking to ``trigger``."""
    return reconcile(h.bus, h.clock, name=name, calls=0, fail="boom", trigger=trigger)


def test_sink_cause_kept_when_a_kept_reconcile_links_to_it_within_the_window() -> None:
    h = make_harness(ratio=0.0)
    cause = _cause(h, "web")
    assert h.spans() == []  # held, not exported
    assert h.metric("pycm_otel_held_traces") == 1
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 0
    h.clock.advance(CAUSE_WINDOW - 1.0)
    effect = _failed(h, cause)
    spans = _exported(h)
    (link,) = spans[effect].links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == cause
    assert spans[cause].name == "reconcile deployment"  # the link resolves
    children = [s for s in spans.values() if s.parent is not None]
    assert [s.name for s in children] == ["POST replicasets"] * 2
    assert all(_ids(s)[0] == cause[0] for s in children)
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == 1
    assert h.metric("pycm_otel_traces_exported_total", reason="error") == 1
    assert h.metric("pycm_otel_spans_exported_total") == 4
    assert h.metric("pycm_otel_held_traces") == 0
    h.clock.advance(CAUSE_WINDOW)
    h.pump()
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 0


def test_sink_cause_not_kept_after_the_window_dropped_and_counted() -> None:
    h = make_harness(ratio=0.0)
    cause = _cause(h, "web")
    h.pump()
    h.clock.advance(CAUSE_WINDOW + 0.5)
    effect = _failed(h, cause)
    assert list(_exported(h)) == [effect]  # the link dangles: the cause came too long ago
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    assert h.metric("pycm_otel_spans_dropped_total", reason="sampled_out") == 3
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == 0
    assert h.metric("pycm_otel_held_traces") == 0


def test_sink_cause_nothing_links_to_is_dropped_when_the_window_passes() -> None:
    h = make_harness(ratio=0.0)
    _cause(h, "web")
    _failed(h, ("ab" * 16, "cd" * 8))  # kept, linking elsewhere
    reconcile(h.bus, h.clock, name="other", calls=0, fail="boom")  # kept, no link
    assert len(h.spans()) == 2
    assert h.metric("pycm_otel_held_traces") == 1
    h.clock.advance(CAUSE_WINDOW + 0.5)
    h.pump()  # an empty batch: the sink's next wake-up
    assert len(h.spans()) == 2
    assert h.metric("pycm_otel_held_traces") == 0
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == 0


def test_sink_reconcile_that_only_read_is_not_held() -> None:
    h = make_harness(ratio=0.0)
    cause = reconcile(h.bus, h.clock, calls=2, verb="get")
    h.pump()
    assert h.metric("pycm_otel_held_traces") == 0
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    assert list(_exported(h)) == []
    _failed(h, cause)
    assert len(h.spans()) == 1  # (no write: it cannot have caused a watch event)


def test_sink_cause_window_zero_holds_nothing() -> None:
    h = make_harness(ratio=0.0, cause_window=0)
    cause = _cause(h, "web")
    effect = _failed(h, cause)
    assert list(_exported(h)) == [effect]
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1


def test_sink_held_causes_bounded_by_count_oldest_dropped_first() -> None:
    h = make_harness(ratio=0.0, max_held=2)
    causes = [_cause(h, f"d{i}") for i in range(3)]
    h.pump()
    assert h.metric("pycm_otel_held_traces") == 2
    # The oldest made room at once: dropped and counted, not waiting for the window.
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    first = _failed(h, causes[0], name="e0")
    last = _failed(h, causes[2], name="e2")
    spans = _exported(h)
    assert causes[0] not in spans and first in spans
    assert causes[2] in spans and last in spans


def test_sink_held_causes_bounded_by_bytes() -> None:
    # A cause with two writes is four records (begin, end, two requests).
    h = make_harness(ratio=0.0, max_held_bytes=4 * RECORD_BYTES + RECORD_BYTES)
    causes = [_cause(h, f"d{i}") for i in range(2)]
    h.pump()
    assert h.metric("pycm_otel_held_traces") == 1
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1
    _failed(h, causes[0], name="e0")
    _failed(h, causes[1], name="e1")
    spans = _exported(h)
    assert causes[0] not in spans and causes[1] in spans


def test_sink_transitive_causes_followed_a_bounded_number_of_links() -> None:
    h = make_harness(ratio=0.0, max_cause_depth=2)
    # c1 wrote; c2 ran because of it and wrote; c3 because of c2; the kept reconcile because
    # of c3: c3 is one link away, c2 two, c1 three.
    c1 = _cause(h, "c1")
    c2 = _cause(h, "c2", trigger=c1)
    c3 = _cause(h, "c3", trigger=c2)
    effect = _failed(h, c3)
    roots = {ids for ids, s in _exported(h).items() if s.parent is None}
    assert roots == {effect, c3, c2}
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == 2
    assert h.metric("pycm_otel_held_traces") == 1  # c1, until the window passes
    h.clock.advance(CAUSE_WINDOW + 0.5)
    h.pump()
    assert h.metric("pycm_otel_traces_dropped_total", reason="sampled_out") == 1


@pytest.mark.parametrize(
    ("ends_after", "kept"),
    [
        pytest.param(0.01, True, id="within-the-window"),
        pytest.param(CAUSE_WINDOW + 0.5, False, id="after-the-window"),
    ],
)
def test_sink_cause_still_running_is_kept_only_if_it_ends_within_the_window(
    ends_after: float, kept: bool
) -> None:
    h = make_harness(ratio=0.0, slow=60.0)  # the cause is not slow, however late it ends
    # The cause wrote and goes on (a status write pending) while the watch event its write made
    # is reconciled, in another worker, and fails.
    ctx = contextvars.copy_context()
    step: Step = ctx.run(
        lambda: h.bus.step(
            ReconcileStarted(controller="deployment", key="default/web", resource="deployments")
        ).__enter__()
    )
    ctx.run(api_call, h.bus, h.clock, verb="create", method="POST")
    h.pump()
    effect = _failed(h, (step.trace_id, step.span_id))
    assert list(_exported(h)) == [effect]
    h.clock.advance(ends_after)
    ctx.run(step.finish, result=ReconcileResult.SUCCESS, action="created_rs")
    ctx.run(step.__exit__, None, None, None)
    spans = _exported(h)
    # Fast and ok at ratio 0: kept only as the cause it was wanted as.
    assert ((step.trace_id, step.span_id) in spans) is kept
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == int(kept)


@pytest.mark.parametrize("path", ["pairs", "each"])
def test_sink_reconcile_kept_by_the_ratio_takes_its_cause(path: str) -> None:
    """The inline paths for a fast, ok reconcile kept by the ratio: its begin and end next to
    each other (``_pairs``), or with another event between them (``_each``)."""
    h = make_harness(ratio=0.5)
    by_ratio = h.sink.sampler.by_ratio
    for _ in range(60):  # a cause the ratio drops (each try: one chance in two)
        cause = _cause(h, "web")
        if not by_ratio(cause[0]):
            break
    else:
        pytest.fail("the ratio kept 60 causes in a row")
    h.pump()
    assert h.metric("pycm_otel_held_traces") == 1
    for _ in range(60):  # a reconcile it causes that the ratio keeps
        begin = ReconcileStarted(
            controller="replicaset",
            key="default/web-rs",
            trigger_trace_id=cause[0],
            trigger_span_id=cause[1],
        )
        with h.bus.step(begin) as step:
            if path == "each":
                contextvars.Context().run(api_call, h.bus, h.clock)  # outside any step
            step.finish(result=ReconcileResult.SUCCESS)
        if by_ratio(step.trace_id):
            break
    else:
        pytest.fail("the ratio dropped 60 reconciles in a row")
    spans = _exported(h)
    assert (step.trace_id, step.span_id) in spans and cause in spans
    assert h.metric("pycm_otel_traces_exported_total", reason="cause") == 1


def test_sink_late_child_of_a_held_cause_is_exported_with_it() -> None:
    h = make_harness(ratio=0.0)
    cause = _cause(h, "web", writes=1)
    h.pump()

    def late() -> None:
        # A task started inside the cause ends after it (its context kept the span).
        _current.set(cause)
        api_call(h.bus, h.clock, verb="create", method="POST", name="late")

    contextvars.copy_context().run(late)
    _failed(h, cause)
    children = [s for s in h.spans() if s.parent is not None]
    assert sorted(str(dict(s.attributes or {})["k8s.object.name"]) for s in children) == [
        "late",
        "web-0",
    ]


# -- the manager's path: a worker's compact records, decided a run at a time ---------------------


async def _chains(n: int) -> list[Any]:
    """``n`` causes (deployment reconciles that each create a ReplicaSet), then ``n`` fast, ok
    replicaset reconciles, the i-th triggered by the i-th cause's write: as the workers append
    them (records), for a subscription to drain."""
    clock = FakeClock(wall_start_ns=1_700_000_000_000_000_000)
    bus = Bus(instance="pycm-0", clock=clock)
    sub = bus.subscribe(name="t", maxsize=100 * n)

    async def write(key: str) -> Result | None:
        clock.advance(0.001)
        bus.point(
            ApiRequestCompleted(verb="create", method="POST", resource="replicasets", code=201),
            dur_ns=1_000_000,
        )
        return None

    async def noop(key: str) -> Result | None:
        return None

    deployments = Controller("deployment", write, resource="deployments", clock=clock, bus=bus)
    replicasets = Controller("replicaset", noop, resource="replicasets", clock=clock, bus=bus)
    for i in range(n):
        await deployments.process(f"default/d{i}")
    begins = [e for e in bus.recent() if type(e) is ReconcileStarted]
    causes = [(b.trace_id, b.span_id) for b in begins]
    assert len(causes) == n
    for i, (trace_id, span_id) in enumerate(causes):
        trigger = Trigger("ReplicaSet", str(i), "add", trace_id=trace_id, span_id=span_id)
        replicasets.enqueue(f"default/d{i}-rs", trigger)
        await replicasets.process(f"default/d{i}-rs")
    await deployments.queue.aclose()
    await replicasets.queue.aclose()
    return sub.drain_entries()


@pytest.mark.parametrize("encoded", [True, False], ids=["encoded", "sdk-spans"])
def test_sink_records_ratio_kept_reconciles_take_their_causes(encoded: bool) -> None:
    entries = asyncio.run(_chains(60))
    assert sum(type(e) is tuple for e in entries) >= 240  # the record path is what is tested
    registry = CollectorRegistry()
    processor: Any
    if encoded:
        processor = _Records()
    else:
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        processor = SimpleSpanProcessor(exporter)
    sink = OtelSink(
        processor,
        resource=build_resource("r", {}, version="9.9.9"),
        sampler=TailSampler(0.5, 1.0),
        metrics=SinkMetrics(registry),
        clock=(clock := FakeClock()),
    )

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    sink.handle_batch(entries)
    roots: dict[str, tuple[str, str, list[str]]] = {}  # span id → (name, trace id, links)
    if encoded:
        for raw in processor.spans:
            # Each encoded span is ScopeSpans' field 2 (spans), tag and length included.
            scope = ScopeSpans()
            scope.ParseFromString(raw)
            (span,) = scope.spans
            if not span.parent_span_id:
                links = [link.span_id.hex() for link in span.links]
                roots[span.span_id.hex()] = (span.name, span.trace_id.hex(), links)
    else:
        for s in exporter.get_finished_spans():
            if s.parent is None:
                links = [f"{ln.context.span_id:016x}" for ln in s.links]
                trace_id, span_id = _ids(s)
                roots[span_id] = (s.name, trace_id, links)
    kept_rs = [links for name, _, links in roots.values() if name == "reconcile replicaset"]
    assert 10 < len(kept_rs) < 50  # the ratio's half, give or take
    # Every kept replicaset reconcile's link resolves: its cause was exported ...
    linked = set()
    for (link,) in kept_rs:
        assert roots[link][0] == "reconcile deployment"
        linked.add(link)
    # ... and the deployment reconciles exported are the ratio's picks and those causes.
    picked = {
        span_id
        for span_id, (name, trace_id, _) in roots.items()
        if name == "reconcile deployment" and TraceIdRatio(0.5).sampled(trace_id)
    }
    deployments = {span_id for span_id, (name, _, _) in roots.items() if "deployment" in name}
    assert deployments == picked | linked
    assert sample("pycm_otel_traces_exported_total", reason="cause") == len(linked - picked) > 0
    # The held causes nothing linked to are counted when the window has passed.
    clock.advance(CAUSE_WINDOW + 0.5)
    sink.handle_batch([])
    assert sample("pycm_otel_traces_dropped_total", reason="sampled_out") == 120 - len(roots)
