"""The trace spine's costs against the OpenTelemetry SDK, measured in the same run.

Figures (medians of the repeats; each repeat times ``n`` operations after a warm-up):

- ``trace.emit_0`` / ``trace.emit_1`` / ``trace.emit_10``: events/s through ``Bus.emit`` (event
  construction included) with 0, 1 and 10 subscribers, each drained every 1000 events as a live
  consumer would. Peer: OTel SDK spans/s (``start_span(...).end()`` with the same three
  attributes) through a ``BatchSpanProcessor`` whose exporter discards; ratio ours / peer.
- ``trace.step``: µs per ``bus.step(ReconcileStarted(...))`` begin/end pair ended with
  ``s.finish(result=..., action=...)``, one subscriber drained every 1000 steps. Peer: the same
  step as an SDK span (``start_as_current_span`` with the begin's four attributes, the end's two
  set before it ends); ratio peer / ours (> 1: ours is cheaper).
- ``trace.emit_stalled``: events/s with one subscriber that never reads (its queue full, so
  every emit also drops its oldest event); peer: ``trace.emit_0`` of the same run; ratio
  stalled / emit_0 (1.0 means a stalled consumer costs the emitter nothing extra).

The SDK's processor queue is sized to hold a whole repeat, so the peer processes every span
instead of taking the cheaper drop path of a full queue.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

from bench.harness import Figure, median_of
from pycm.trace.bus import Bus, Subscription
from pycm.trace.kinds import ItemAdded, ReconcileResult, ReconcileStarted

_SIZES = {
    # size: (operations per repeat for pycm, for the OTel peer, repeats)
    "tiny": (2_000, 1_000, 5),
    "full": (200_000, 50_000, 7),
}
_DRAIN_EVERY = 1000


class _DiscardingExporter(SpanExporter):
    """Accepts every batch and keeps nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _rate(n: int, run: Callable[[int], None]) -> float:
    """Operations per second of ``run(n)``."""
    gc.collect()
    start = time.perf_counter()
    run(n)
    return n / (time.perf_counter() - start)


def _emit_loop(subscribers: int, *, stalled: bool = False) -> Callable[[int], None]:
    bus = Bus(instance="bench")
    subs: list[Subscription] = [bus.subscribe(name=f"s{i}") for i in range(subscribers)]
    if stalled:
        # Fill the stalled queue first: the steady state is "full, dropping the oldest".
        for _ in range(subs[0].maxsize):
            bus.emit(ItemAdded(queue="warm-up"))
    drained = [] if stalled else subs

    def run(n: int) -> None:
        emit = bus.emit
        for i in range(n):
            emit(ItemAdded(queue="deployment", key="default/web", depth=i))
            if i % _DRAIN_EVERY == 0:
                for sub in drained:
                    sub.drain()
        for sub in drained:
            sub.drain()

    return run


def _span_loop(tracer: Tracer) -> Callable[[int], None]:
    def run(n: int) -> None:
        start_span = tracer.start_span
        for i in range(n):
            start_span(
                "queue.add", attributes={"queue": "deployment", "key": "default/web", "depth": i}
            ).end()

    return run


def _step_loop() -> Callable[[int], None]:
    bus = Bus(instance="bench")
    sub = bus.subscribe(name="consumer")
    success = ReconcileResult.SUCCESS

    def run(n: int) -> None:
        step = bus.step
        for i in range(n):
            with step(
                ReconcileStarted(
                    controller="deployment", key="default/web", namespace="default", name="web"
                )
            ) as s:
                s.finish(result=success, action="noop")
            if i % _DRAIN_EVERY == 0:
                sub.drain()
        sub.drain()

    return run


def _otel_step_loop(tracer: Tracer) -> Callable[[int], None]:
    begin = {
        "controller": "deployment",
        "key": "default/web",
        "namespace": "default",
        "name": "web",
    }
    end = {"result": "success", "action": "noop"}

    def run(n: int) -> None:
        start = tracer.start_as_current_span
        for _ in range(n):
            with start("reconcile", attributes=begin) as span:
                span.set_attributes(end)

    return run


def _measure(n: int, repeats: int, run: Callable[[int], None]) -> float:
    run(min(n, 1000))  # warm-up: caches, generated constructors, the processor's thread
    return median_of(repeats, lambda: _rate(n, run))


def run(size: str) -> list[Figure]:
    n, n_peer, repeats = _SIZES[size]
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(_DiscardingExporter(), max_queue_size=n_peer + 2048)
    )
    tracer = provider.get_tracer("bench.trace")
    try:
        spans_per_s = _measure(n_peer, repeats, _span_loop(tracer))
        otel_steps_per_s = _measure(n_peer, repeats, _otel_step_loop(tracer))
    finally:
        provider.shutdown()

    emit = {k: _measure(n, repeats, _emit_loop(k)) for k in (0, 1, 10)}
    stalled = _measure(n, repeats, _emit_loop(1, stalled=True))
    step_us = 1e6 / _measure(n, repeats, _step_loop())
    otel_step_us = 1e6 / otel_steps_per_s

    figures = [
        Figure(
            f"trace.emit_{k}",
            rate,
            "events/s",
            "otel_sdk.span",
            spans_per_s,
            "spans/s",
            rate / spans_per_s,
        )
        for k, rate in emit.items()
    ]
    figures.append(
        Figure(
            "trace.step",
            step_us,
            "µs",
            "otel_sdk.span_step",
            otel_step_us,
            "µs",
            otel_step_us / step_us,
        )
    )
    figures.append(
        Figure(
            "trace.emit_stalled",
            stalled,
            "events/s",
            "trace.emit_0",
            emit[0],
            "events/s",
            stalled / emit[0],
        )
    )
    return figures
