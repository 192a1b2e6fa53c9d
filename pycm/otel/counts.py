"""What the sink counts: its Prometheus counters, added once per drained batch, and the counts
since its last :class:`~pycm.trace.kinds.SpansExported` report.

A Prometheus counter's ``inc`` takes a lock, and ``labels()`` takes one and builds a tuple each
call, while nine in ten reconciles drop a trace: so every increment is gathered here (counter
child -> amount) and added by :meth:`SinkTally.flush`, and the labelled children are resolved
once.
"""

from __future__ import annotations

from typing import Any

from pycm.otel.metrics import SinkMetrics
from pycm.trace.kinds import SpansExported

__all__ = ["SinkTally"]


class _Labelled(dict[str, Any]):
    """A labelled metric's children by label value, made on first use."""

    def __init__(self, metric: Any) -> None:
        super().__init__()
        self._metric = metric

    def __missing__(self, value: str) -> Any:
        child = self[value] = self._metric.labels(value)
        return child


class SinkTally:
    """``since_report``: the counts since the last report (:meth:`report`), by the field of
    SpansExported that carries each; the Prometheus counters lag until :meth:`flush`."""

    def __init__(self, metrics: SinkMetrics) -> None:
        self.since_report = dict.fromkeys(
            ("spans_exported", "traces_exported", "traces_dropped", "spans_dropped", "evicted"),
            0,
        )
        self._spans_exported = metrics.spans_exported
        self._spans_dropped = _Labelled(metrics.spans_dropped)
        self._traces_dropped = _Labelled(metrics.traces_dropped)
        self._traces_exported = _Labelled(metrics.traces_exported)
        self._unflushed: dict[Any, float] = {}

    def _count(self, counter: Any, amount: float) -> None:
        unflushed = self._unflushed
        unflushed[counter] = unflushed.get(counter, 0) + amount

    def spans_exported(self, n: int = 1) -> None:
        self._count(self._spans_exported, n)
        self.since_report["spans_exported"] += n

    def spans_dropped(self, n: int, reason: str) -> None:
        self._count(self._spans_dropped[reason], n)
        self.since_report["spans_dropped"] += n

    def traces_exported(self, decision: str, n: int = 1) -> None:
        self._count(self._traces_exported[decision], n)
        self.since_report["traces_exported"] += n

    def traces_dropped(self, reason: str, n: int = 1) -> None:
        self._count(self._traces_dropped[reason], n)
        self.since_report["traces_dropped"] += n

    def evicted(self, spans: int) -> None:
        """A pending trace pushed out by a new one, with its ``spans``."""
        self.traces_dropped("evicted")
        self.since_report["evicted"] += 1
        self.spans_dropped(spans, "evicted")

    def flush(self) -> None:
        """Add the counts gathered since the last call to the Prometheus counters."""
        unflushed = self._unflushed
        if unflushed:
            for counter, amount in unflushed.items():
                counter.inc(amount)
            unflushed.clear()

    def report(self, pending_traces: int) -> SpansExported | None:
        """The counts since the last report as its event (then zero), or None if all are 0."""
        counts = self.since_report
        if not any(counts.values()):
            return None
        event = SpansExported(
            spans_exported=counts["spans_exported"],
            traces_exported=counts["traces_exported"],
            traces_dropped=counts["traces_dropped"],
            spans_dropped=counts["spans_dropped"],
            evicted=counts["evicted"],
            pending_traces=pending_traces,
        )
        for name in counts:
            counts[name] = 0
        return event
