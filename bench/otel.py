"""The OpenTelemetry sink's costs, measured in the same run.

Figures (medians of the repeats):

- ``otel.overhead``: the deployment controller's no-op resync — ``Controller.process`` (the
  worker loop's traced step around ``DeploymentController.sync``) over the settled deployments
  of ``bench.controllers`` (pre-filled informers, a client that fails the run on any write) —
  in reconciles/s with export on (the sink task on the same event loop, default sampling: ratio
  0.1, slow threshold 1 s; the manager's batch processor and OTLP/gRPC exporter, sending to a
  receiver in another process) against the same passes with export off (peer ``export_off``);
  on and off passes alternate and the ratio is the median of adjacent pairs' on / off (1.0:
  export costs the reconcile loop nothing). The loop yields every 100 reconciles (the sink takes
  what several of those turns made at once: pycm.otel.sink.LINGER_TURNS) and each pass ends
  when the sink has consumed everything, so its work is inside the timing; the run fails if the
  sink's bus subscription lost any event (lost events would flatter it). The passes run in a
  worker's context (pycm.trace.context.root_context), as the workers' reconciles do.
- ``otel.span_cost``: µs per exported span through the sink (``OtelSink.handle`` of a
  reconcile's begin, one API-request point and its end, ratio 1 so every span is exported, into
  the batch processor the sink uses, whose exporter discards). Peer: the SDK's own
  ``start_as_current_span`` for the same root and CLIENT child with the same attributes,
  through the SDK's BatchSpanProcessor; ratio peer / ours (> 1: the sink costs less per span
  than the SDK's own tracer).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry

from bench.controllers import settle, settled_controller
from bench.harness import Figure, in_worker_context, median_of
from pycm.app.config import TracingConfig
from pycm.controllers.deployment.controller import DeploymentController
from pycm.otel import start_otel_sink
from pycm.otel.export import RecordBatchProcessor
from pycm.otel.metrics import SinkMetrics
from pycm.otel.resource import build_resource
from pycm.otel.sampling import TailSampler
from pycm.otel.sink import OtelSink
from pycm.trace.bus import Bus
from pycm.trace.kinds import ApiRequestCompleted, ReconcileResult, ReconcileStarted

_SIZES = {
    # size: (settled deployments per overhead pass, overhead pairs, reconciles per span-cost
    # repeat, span-cost repeats). 31 overhead pairs at full size (was 7, ~4 s more a run): one
    # pair's on / off ratio spreads as bench.controllers' tracing pairs do on a shared 2-core
    # machine, and the median of 7 spread over 0.936-0.991 in six runs of the same code,
    # around an aim (0.95) it sits next to.
    "tiny": (200, 3, 2_000, 3),
    "full": (2_000, 31, 20_000, 7),
}
_YIELD_EVERY = 100


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _processor(n_spans: int) -> BatchSpanProcessor:
    # Sized to hold a whole repeat: every span is processed, none takes the drop path.
    return BatchSpanProcessor(_Discard(), max_queue_size=n_spans + 1, max_export_batch_size=512)


async def _overhead_passes(n_deployments: int, repeats: int, endpoint: str) -> tuple[float, ...]:
    """(median reconciles/s with export on, off, median of the adjacent passes' on/off)."""
    # Two identical settled controllers, each on a bus of its own; only one bus has the sink.
    exported, exported_client, keys, exported_bus = settled_controller(n_deployments)
    plain, plain_client, _, _ = settled_controller(n_deployments)
    for c, client in ((exported, exported_client), (plain, plain_client)):
        await settle(c, client, keys)
    writes = exported_client.writes + plain_client.writes
    registry = CollectorRegistry()
    config = TracingConfig(otlp_endpoint=endpoint, otlp_protocol="grpc")
    handle = start_otel_sink(exported_bus, config, "bench", registry, env={})
    assert handle is not None
    subscription = handle.subscription

    async def one_pass(controller: DeploymentController) -> float:
        process = controller.controller.process
        await asyncio.sleep(0)
        start = time.perf_counter()
        for i, key in enumerate(keys):
            await process(key)
            if i % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
        while subscription.pending:  # the sink's share of an exported pass is in its timing
            await asyncio.sleep(0)
        return len(keys) / (time.perf_counter() - start)

    task = asyncio.create_task(handle.run(), name="otel sink")
    on: list[float] = []
    off: list[float] = []
    try:
        await one_pass(exported)  # warm-up: first-touch costs, the exporter's channel
        await one_pass(plain)
        gc.collect()
        for i in range(repeats):  # alternate the order so drift moves both sides alike
            if i % 2:
                off.append(await one_pass(plain))
                on.append(await one_pass(exported))
            else:
                on.append(await one_pass(exported))
                off.append(await one_pass(plain))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for c in (exported, plain):
            await c.controller.queue.aclose()
    lost = registry.get_sample_value("pycm_otel_bus_events_lost_total") or 0.0
    if lost:
        raise RuntimeError(f"the sink lost {lost:.0f} bus events: the figure would flatter it")
    if exported_client.writes + plain_client.writes != writes:
        raise RuntimeError("a no-op sync wrote to the API")
    ratios = [a / b for a, b in zip(on, off, strict=True)]
    return statistics.median(on), statistics.median(off), statistics.median(ratios)


def _overhead(n: int, repeats: int) -> Figure:
    peer = subprocess.Popen(
        [sys.executable, "-m", "bench._otlp_peer"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert peer.stdout is not None
        endpoint = f"http://127.0.0.1:{int(peer.stdout.readline())}"
        on, off, ratio = asyncio.run(in_worker_context(_overhead_passes(n, repeats, endpoint)))
    finally:
        assert peer.stdin is not None
        peer.stdin.close()
        peer.wait(timeout=10)
    return Figure("otel.overhead", on, "reconciles/s", "export_off", off, "reconciles/s", ratio)


def _scripted_events(n: int) -> list[object]:
    bus = Bus(instance="bench")
    sub = bus.subscribe(name="bench", maxsize=4 * n + 10)
    for i in range(n):
        begin = ReconcileStarted(
            controller="deployment",
            key=f"default/d{i}",
            namespace="default",
            name=f"d{i}",
            resource="deployments",
            queue_wait_ms=1.0,
            trigger_kind="ReplicaSet",
            trigger_rv="7",
            trigger_event="update",
            trigger_trace_id="ab" * 16,
            trigger_span_id="cd" * 8,
        )
        with bus.step(begin) as step:
            bus.point(
                ApiRequestCompleted(
                    verb="get",
                    method="GET",
                    resource="replicasets",
                    namespace="default",
                    name=f"d{i}",
                    host="127.0.0.1:6443",
                    code=200,
                    bytes=100,
                ),
                dur_ns=1_000_000,
            )
            step.finish(result=ReconcileResult.SUCCESS, action="noop", uid="u", api_calls=1)
    return list(sub.drain())


def _sink_us_per_span(n: int) -> float:
    events = _scripted_events(n)
    processor = RecordBatchProcessor(
        _Discard(), max_queue_size=2 * n + 1, max_export_batch_size=512
    )
    sink = OtelSink(
        processor,
        resource=build_resource("bench", {}),
        sampler=TailSampler(1.0, 1.0),
        metrics=SinkMetrics(CollectorRegistry()),
    )
    handle = sink.handle
    gc.collect()
    start = time.perf_counter()
    for event in events:
        handle(event)  # type: ignore[arg-type]
    sink.flush_metrics()  # the Prometheus counters, added once per drained batch in the sink
    elapsed = time.perf_counter() - start
    processor.shutdown()
    return elapsed / (2 * n) * 1e6


def _sdk_us_per_span(n: int) -> float:
    processor = _processor(2 * n)
    provider = TracerProvider(resource=build_resource("bench", {}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span(
            "reconcile deployment",
            attributes={
                "pycm.controller": "deployment",
                "pycm.key": f"default/d{i}",
                "k8s.namespace.name": "default",
                "k8s.deployment.name": f"d{i}",
                "pycm.queue.wait_ms": 1.0,
                "pycm.retries": 0,
            },
        ) as root:
            with tracer.start_as_current_span(
                "GET replicasets",
                kind=SpanKind.CLIENT,
                attributes={
                    "http.request.method": "GET",
                    "server.address": "127.0.0.1",
                    "server.port": 6443,
                    "k8s.verb": "get",
                    "http.response.status_code": 200,
                    "k8s.resource": "replicasets",
                },
            ):
                pass
            root.set_attribute("pycm.result", "success")
            root.set_attribute("pycm.api_calls", 1)
    elapsed = time.perf_counter() - start
    provider.shutdown()
    return elapsed / (2 * n) * 1e6


def run(size: str) -> list[Figure]:
    n_overhead, pairs, n_spans, repeats = _SIZES[size]
    figures = [_overhead(n_overhead, pairs)]
    ours = median_of(repeats, lambda: _sink_us_per_span(n_spans))
    peer = median_of(repeats, lambda: _sdk_us_per_span(n_spans))
    figures.append(
        Figure(
            "otel.span_cost",
            ours,
            "µs/span",
            "otel.start_as_current_span",
            peer,
            "µs/span",
            peer / ours,
        )
    )
    return figures
