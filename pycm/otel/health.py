"""Whether kept spans reach the collector: counted, and said in a few log lines, not hundreds.

The sink counts a span as exported when it hands it to the batch processor's queue
(``pycm_otel_spans_exported_total``). What happens after that happens in the SDK's worker
thread, and nothing of it reached /metrics: with the collector down the counter went on rising
while every span was lost, and the SDK logged each retry (a warning) and each batch it gave up
(an error), several lines a second for as long as the outage lasted. :class:`ExportHealth` takes
the outcome of every export call and every span the processor drops, and

- counts them: ``pycm_otel_spans_sent_total`` (the collector accepted them), and
  ``pycm_otel_spans_dropped_total`` with the reasons ``export_failed`` (the exporter gave up
  after its retries), ``queue_full`` (the processor's bounded queue dropped its oldest) and
  ``shutdown`` (still queued, or in a batch that failed, when the sink stopped);
- logs the export's state, not its attempts: one warning when it starts failing (with the
  SDK's last error), one every :data:`SUMMARY_INTERVAL` while it goes on failing or dropping
  (with the spans lost since the last line), and one line when it recovers (how long it
  failed, how many spans were lost).

The SDK exporter's own warnings and errors are held back (a filter on its loggers) while one of
pycm's exporters runs an export on that thread; the most severe becomes the error quoted.
Everything here runs on the SDK's threads, hence the lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from opentelemetry.sdk.trace.export import SpanExportResult

__all__ = ["SUMMARY_INTERVAL", "ExportHealth"]

log = logging.getLogger("pycm.otel")

# At most one line a minute while the export fails or drops: an outage of an hour is ~60 lines
# (the SDK's own logging was ~2 a second), and each line says what was lost since the last.
SUMMARY_INTERVAL = 60.0

EXPORT_FAILED = "export_failed"
QUEUE_FULL = "queue_full"
SHUTDOWN = "shutdown"

# The lines: the export started failing, goes on failing, or (while it succeeds) drops spans
# because its queue is full (a collector slower than the spans come).
_FAILING = (
    "OTLP export to %s failing: %s; its spans are dropped until it recovers "
    "(%d so far; pycm_otel_spans_dropped_total counts them)"
)
_STILL_FAILING = (
    "OTLP export to %s still failing after %.0fs: %d span(s) lost since the last report "
    "(last error: %s)"
)
_BEHIND = (
    "OTLP export to %s is behind: its queue is full and drops the oldest spans "
    "(%d lost since the last report)"
)

# The loggers of the SDK's OTLP span exporters (gRPC; HTTP's exporter and its client).
_SDK_EXPORT_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
)


class _Counter(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class _LabelledCounter(Protocol):
    def labels(self, *values: str) -> _Counter: ...


class _HeldBack(logging.Filter):
    """Holds back the warnings and errors of the SDK exporters' loggers on a thread while it
    runs one of pycm's exports (the list in ``_local.held`` is set), keeping their text."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        held: list[tuple[int, str]] | None = getattr(self._local, "held", None)
        if held is None or record.levelno < logging.WARNING:
            return True
        held.append((record.levelno, record.getMessage()))
        return False

    @contextmanager
    def holding(self) -> Iterator[list[tuple[int, str]]]:
        held: list[tuple[int, str]] = []
        outer = getattr(self._local, "held", None)
        self._local.held = held
        try:
            yield held
        finally:
            self._local.held = outer


_held_back = _HeldBack()
for _name in _SDK_EXPORT_LOGGERS:
    logging.getLogger(_name).addFilter(_held_back)


def _last_error(held: list[tuple[int, str]]) -> str:
    """The most severe of the held-back messages, the last of them if several are."""
    if not held:
        return ""
    top = max(level for level, _ in held)
    return next(text for level, text in reversed(held) if level == top)


class ExportHealth:
    """The outcome of an exporter's calls and the processor's drops (see the module doc).

    Invariants, under ``_lock``: ``_failing_since`` is the monotonic time of the first failed
    export since the last one that succeeded (None while exports succeed); ``_lost`` counts
    the spans lost (failed or dropped) since the last line logged about them; ``_outage_lost``
    those since ``_failing_since``."""

    def __init__(
        self,
        endpoint: str,
        *,
        spans_sent: _Counter,
        spans_dropped: _LabelledCounter,
        clock: Callable[[], float] = time.monotonic,
        summary_interval: float = SUMMARY_INTERVAL,
    ) -> None:
        self.endpoint = endpoint
        self._sent = spans_sent
        self._dropped = {
            reason: spans_dropped.labels(reason) for reason in (EXPORT_FAILED, QUEUE_FULL, SHUTDOWN)
        }
        self._clock = clock
        self._interval = summary_interval
        self._lock = threading.Lock()
        self._failing_since: float | None = None
        self._last_error = ""
        self._lost = 0
        self._outage_lost = 0
        self._last_line = -float("inf")
        self._closing = False

    def run_export(self, spans: int, export: Callable[[], SpanExportResult]) -> SpanExportResult:
        """Run one export call of ``spans`` spans with the SDK's own log lines held back, and
        account for its outcome (an exception is a failure, and propagates)."""
        with _held_back.holding() as held:
            try:
                result = export()
            except Exception as exc:
                self.exported(spans, ok=False, error=f"{type(exc).__name__}: {exc}")
                raise
        self.exported(spans, ok=result is SpanExportResult.SUCCESS, error=_last_error(held))
        return result

    def exported(self, spans: int, *, ok: bool, error: str = "") -> None:
        """An export call of ``spans`` spans ended: accepted (``ok``) or given up."""
        if ok:
            self._sent.inc(spans)
            with self._lock:
                if self._failing_since is None:
                    return
                failed_for = self._clock() - self._failing_since
                lost, self._outage_lost = self._outage_lost, 0
                self._failing_since, self._lost = None, 0
            log.info(
                "OTLP export to %s recovered after %.0fs; %d span(s) were lost while it failed",
                self.endpoint,
                failed_for,
                lost,
            )
            return
        if self._closing:
            self._dropped[SHUTDOWN].inc(spans)
            return
        self._dropped[EXPORT_FAILED].inc(spans)
        now = self._clock()
        with self._lock:
            self._last_error = error or self._last_error or "the exporter gave up"
            self._outage_lost += spans
            self._lost += spans
            if self._failing_since is None:  # said at once, whatever was said last
                self._failing_since = self._last_line = now
                lost, self._lost = self._lost, 0
                line: tuple[object, ...] | None = (_FAILING, self.endpoint, self._last_error, lost)
            else:
                line = self._summary_due(now)
        if line is not None:
            log.warning(*line)

    def dropped(self, spans: int, reason: str = QUEUE_FULL) -> None:
        """The processor dropped ``spans`` spans (``reason``: the SDK's, queue_full or
        already_shutdown)."""
        if reason != QUEUE_FULL or self._closing:
            self._dropped[SHUTDOWN].inc(spans)
            return
        self._dropped[QUEUE_FULL].inc(spans)
        now = self._clock()
        with self._lock:
            self._lost += spans
            if self._failing_since is not None:
                self._outage_lost += spans
            line = self._summary_due(now)
        if line is not None:
            log.warning(*line)

    def _summary_due(self, now: float) -> tuple[object, ...] | None:
        """The summary line (a format, then its arguments) when one is due, at most once an
        interval (under the lock): still failing, or (while exports succeed) behind."""
        if now - self._last_line < self._interval:
            return None
        self._last_line = now
        lost, self._lost = self._lost, 0
        if self._failing_since is not None:
            failed_for = now - self._failing_since
            return _STILL_FAILING, self.endpoint, failed_for, lost, self._last_error
        return _BEHIND, self.endpoint, lost

    def closing(self) -> None:
        """The sink is stopping: what fails or is dropped from now on is a shutdown's loss,
        counted as such and not logged as a failing export."""
        self._closing = True
