"""The trace spine's costs against the OpenTelemetry SDK, measured in the same run.

Every loop runs once per round, in an order rotated from round to round; values are the
medians over the rounds and each ratio is the median of the rounds' own ratios, so a slow
phase of a shared machine cannot favour one side. Figures (each loop times ``n`` operations
after a warm-up):

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
- ``trace.reduce``: events/s through ``State.apply`` (:mod:`pycm.trace.state`) of a busy
  manager's mix (per reconcile: queue add/get/done, reconcile begin/end, two API requests;
  renews and watch closes between), a fresh state per loop. Peer: the reducer as it was before
  the state was split by domain (a frozen copy, bench/_old_reducer.py) on the same events;
  ratio ours / peer (>= 1: the split costs nothing). Ours folds what the old one folded: no
  object histories (``State(histories=False)``, as ``pycm run --object-histories=false``).
- ``trace.reduce_histories``: the same through the reducer with each object's history (the
  default); peer: ``trace.reduce`` of the same run; ratio with / without (what the histories
  cost the reducer).

The SDK's processor queue is sized to hold a whole loop, so the peer processes every span
instead of taking the cheaper drop path of a full queue, and each peer loop ends with a
``force_flush`` inside its timing, so the processor's thread never exports during another loop.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

from bench._old_reducer import State as OldState
from bench.harness import Figure
from pycm.trace.bus import Bus, Subscription
from pycm.trace.events import Event
from pycm.trace.kinds import (
    ApiRequestCompleted,
    ItemAdded,
    ItemDone,
    ItemTaken,
    LeaseRenewed,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    WatchClosed,
    WatchCloseReason,
)
from pycm.trace.state import State

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


def _span_loop(provider: TracerProvider, tracer: Tracer) -> Callable[[int], None]:
    def run(n: int) -> None:
        start_span = tracer.start_span
        for i in range(n):
            start_span(
                "queue.add", attributes={"queue": "deployment", "key": "default/web", "depth": i}
            ).end()
        # The processor's thread exports what is queued now, within the timing (as ours drains
        # its subscribers) and not during the next loop of the round.
        provider.force_flush()

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


def _otel_step_loop(provider: TracerProvider, tracer: Tracer) -> Callable[[int], None]:
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
        provider.force_flush()

    return run


def reduce_events(n: int) -> list[Event]:
    """``n`` events of a busy manager of three replicas, stamped as a bus would stamp them."""
    events: list[Event] = []
    seqs = {"r1": 0, "r2": 0, "r3": 0}
    ts = 1_700_000_000_000_000_000
    ok = ReconcileResult.SUCCESS
    i = 0
    while len(events) < n:
        i += 1
        instance = ("r1", "r2", "r3")[i % 3]
        controller = ("deployment", "replicaset")[i % 2]
        key = f"ns{i % 7}/obj{i % 500}"
        span = f"{i:016x}"
        trace = f"{i:032x}"
        ts += 200_000  # 5k reconciles/s of event time
        batch: list[Event] = [
            ItemAdded(queue=controller, key=key, depth=i % 40),
            ItemTaken(queue=controller, key=key, depth=i % 40, wait_ms=1.5),
            ReconcileStarted(controller=controller, key=key, span_id=span, trace_id=trace),
            ApiRequestCompleted(verb="get", resource="pods", code=200, dur_ns=900_000),
            ApiRequestCompleted(verb="update", resource="replicasets", code=200, dur_ns=2_000_000),
            ReconcileFinished(
                controller=controller,
                key=key,
                result=ok if i % 50 else ReconcileResult.REQUEUE,
                span_id=span,
                trace_id=trace,
                dur_ns=3_000_000 + (i % 97) * 10_000,
            ),
            ItemDone(queue=controller, key=key, depth=i % 40, work_ms=3.0),
        ]
        if i % 20 == 0:
            batch.append(LeaseRenewed(lease="kube-system/pycm", identity=instance, latency_ms=4.0))
        if i % 100 == 0:
            batch.append(WatchClosed(resource="pods", reason=WatchCloseReason.TIMEOUT, events=9))
        for event in batch:
            seqs[instance] += 1
            object.__setattr__(event, "seq", seqs[instance])
            object.__setattr__(event, "ts", ts)
            object.__setattr__(event, "instance", instance)
        events.extend(batch)
    return events[:n]


def _reduce_loop(state_class: Callable[[], object], events: list[Event]) -> Callable[[int], None]:
    def run(n: int) -> None:
        state = state_class()
        apply = state.apply  # type: ignore[attr-defined]
        for i in range(n):
            apply(events[i])

    return run


def _rounds(
    repeats: int, loops: dict[str, tuple[int, Callable[[int], None]]]
) -> dict[str, list[float]]:
    """Rates (operations/s) of every loop in each of ``repeats`` rounds.

    Each round runs every loop once, in an order rotated from round to round, so a slow phase
    of a shared machine falls on pycm and on the peer alike instead of on whichever was
    measured then: each round's ratio compares figures measured seconds apart.
    """
    for n, run in loops.values():
        run(min(n, 1000))  # warm-up: caches, generated classes, the processor's thread
    names = list(loops)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            n, run = loops[name]
            rates[name].append(_rate(n, run))
    return rates


def _ratios(ours: list[float], peer: list[float]) -> float:
    """The median of the per-round ratios ours / peer."""
    return statistics.median(a / b for a, b in zip(ours, peer, strict=True))


def run(size: str) -> list[Figure]:
    n, n_peer, repeats = _SIZES[size]
    events = reduce_events(n)
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(_DiscardingExporter(), max_queue_size=n_peer + 2048)
    )
    tracer = provider.get_tracer("bench.trace")
    try:
        rates = _rounds(
            repeats,
            {
                "span": (n_peer, _span_loop(provider, tracer)),
                "span_step": (n_peer, _otel_step_loop(provider, tracer)),
                "emit_0": (n, _emit_loop(0)),
                "emit_1": (n, _emit_loop(1)),
                "emit_10": (n, _emit_loop(10)),
                "stalled": (n, _emit_loop(1, stalled=True)),
                "step": (n, _step_loop()),
                "reduce": (n, _reduce_loop(lambda: State(histories=False), events)),
                "reduce_old": (n, _reduce_loop(OldState, events)),
                "reduce_histories": (n, _reduce_loop(State, events)),
            },
        )
    finally:
        provider.shutdown()
    med = {name: statistics.median(values) for name, values in rates.items()}
    figures = [
        Figure(
            f"trace.emit_{k}",
            med[f"emit_{k}"],
            "events/s",
            "otel_sdk.span",
            med["span"],
            "spans/s",
            _ratios(rates[f"emit_{k}"], rates["span"]),
        )
        for k in (0, 1, 10)
    ]
    figures.append(
        Figure(
            "trace.step",
            1e6 / med["step"],
            "µs",
            "otel_sdk.span_step",
            1e6 / med["span_step"],
            "µs",
            # steps/s ours / peer per round: the peer's cost over ours.
            _ratios(rates["step"], rates["span_step"]),
        )
    )
    figures.append(
        Figure(
            "trace.emit_stalled",
            med["stalled"],
            "events/s",
            "trace.emit_0",
            med["emit_0"],
            "events/s",
            _ratios(rates["stalled"], rates["emit_0"]),
        )
    )
    figures.append(
        Figure(
            "trace.reduce",
            med["reduce"],
            "events/s",
            "trace.reduce_old_reducer",
            med["reduce_old"],
            "events/s",
            _ratios(rates["reduce"], rates["reduce_old"]),
        )
    )
    figures.append(
        Figure(
            "trace.reduce_histories",
            med["reduce_histories"],
            "events/s",
            "trace.reduce",
            med["reduce"],
            "events/s",
            _ratios(rates["reduce_histories"], rates["reduce"]),
        )
    )
    return figures
