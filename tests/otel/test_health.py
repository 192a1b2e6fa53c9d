"""ExportHealth: what reaches the collector, counted, and an outage said in a few lines."""

from __future__ import annotations

import logging
import threading

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client import CollectorRegistry

from pycm.otel.health import ExportHealth
from pycm.otel.metrics import SinkMetrics

ENDPOINT = "http://127.0.0.1:4317"
SDK_GRPC_LOGGER = "opentelemetry.exporter.otlp.proto.grpc.exporter"


class Rig:
    def __init__(self) -> None:
        self.now = 100.0
        self.registry = CollectorRegistry()
        metrics = SinkMetrics(self.registry)
        self.health = ExportHealth(
            ENDPOINT,
            spans_sent=metrics.spans_sent,
            spans_dropped=metrics.spans_dropped,
            clock=lambda: self.now,
            summary_interval=60.0,
        )

    def sent(self) -> float:
        return self.registry.get_sample_value("pycm_otel_spans_sent_total") or 0.0

    def dropped(self, reason: str) -> float:
        value = self.registry.get_sample_value("pycm_otel_spans_dropped_total", {"reason": reason})
        return value or 0.0


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pycm.otel"]


@pytest.fixture
def rig(caplog: pytest.LogCaptureFixture) -> Rig:
    caplog.set_level(logging.INFO, logger="pycm.otel")
    return Rig()


def test_health_an_outage_is_one_line_then_one_a_minute_then_its_recovery(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.health.exported(512, ok=True)
    assert rig.sent() == 512
    assert lines(caplog) == []  # success is quiet

    rig.health.exported(512, ok=False, error="UNAVAILABLE: connection refused")
    assert lines(caplog) == [
        f"OTLP export to {ENDPOINT} failing: UNAVAILABLE: connection refused; its spans are "
        "dropped until it recovers (512 so far; pycm_otel_spans_dropped_total counts them)"
    ]
    # Retries within the minute: counted, not said.
    for _ in range(5):
        rig.now += 10
        rig.health.exported(100, ok=False, error="")
    rig.health.dropped(30)  # the queue overflowed meanwhile
    assert len(lines(caplog)) == 1
    assert rig.dropped("export_failed") == 1012
    assert rig.dropped("queue_full") == 30

    rig.now += 10  # a minute after the first line
    rig.health.exported(100, ok=False, error="DEADLINE_EXCEEDED")
    assert lines(caplog)[1] == (
        f"OTLP export to {ENDPOINT} still failing after 60s: 630 span(s) lost since the last "
        "report (last error: DEADLINE_EXCEEDED)"
    )

    rig.now += 15
    rig.health.exported(7, ok=True)
    assert lines(caplog)[2] == (
        f"OTLP export to {ENDPOINT} recovered after 75s; 1142 span(s) were lost while it failed"
    )
    assert rig.sent() == 519
    assert len(lines(caplog)) == 3

    # A new outage is said at once, however soon.
    rig.now += 1
    rig.health.exported(3, ok=False, error="UNAVAILABLE")
    assert len(lines(caplog)) == 4
    assert "failing: UNAVAILABLE" in lines(caplog)[3]
    assert "(3 so far;" in lines(caplog)[3]


def test_health_queue_drops_while_exports_succeed_say_the_export_is_behind(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.health.dropped(5)
    rig.now += 30
    rig.health.dropped(7)
    rig.now += 30
    rig.health.dropped(11)
    assert lines(caplog) == [
        f"OTLP export to {ENDPOINT} is behind: its queue is full and drops the oldest spans "
        "(5 lost since the last report)",
        f"OTLP export to {ENDPOINT} is behind: its queue is full and drops the oldest spans "
        "(18 lost since the last report)",
    ]
    assert rig.dropped("queue_full") == 23
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_health_once_closing_losses_are_the_shutdowns_and_unlogged(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.health.closing()
    rig.health.exported(512, ok=False, error="Exporter already shutdown")
    rig.health.dropped(9)
    rig.health.dropped(2, "already_shutdown")
    assert rig.dropped("shutdown") == 523
    assert rig.dropped("export_failed") == rig.dropped("queue_full") == 0
    assert lines(caplog) == []


def test_health_run_export_holds_back_the_sdks_lines_and_quotes_the_worst(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=SDK_GRPC_LOGGER)
    sdk = logging.getLogger(SDK_GRPC_LOGGER)

    def failing_export() -> SpanExportResult:
        sdk.warning("Transient error %s, retrying in %.2fs", "UNAVAILABLE", 1.0)
        sdk.error("Failed to export traces, error code: %s", "UNAVAILABLE")
        sdk.warning("Transient error again")
        sdk.debug("Reinitializing gRPC channel")
        return SpanExportResult.FAILURE

    assert rig.health.run_export(4, failing_export) is SpanExportResult.FAILURE
    sdk_lines = [r.getMessage() for r in caplog.records if r.name == SDK_GRPC_LOGGER]
    assert sdk_lines == ["Reinitializing gRPC channel"]  # debug passes; the rest is held back
    assert lines(caplog) == [
        f"OTLP export to {ENDPOINT} failing: Failed to export traces, error code: UNAVAILABLE; "
        "its spans are dropped until it recovers (4 so far; pycm_otel_spans_dropped_total "
        "counts them)"
    ]
    # Outside an export, or on another thread meanwhile, the SDK's lines pass as they are.
    sdk.warning("outside")
    seen: list[str] = []

    def on_another_thread() -> None:
        sdk.warning("elsewhere")

    def export_while_another_thread_logs() -> SpanExportResult:
        thread = threading.Thread(target=on_another_thread)
        thread.start()
        thread.join()
        return SpanExportResult.SUCCESS

    rig.health.run_export(2, export_while_another_thread_logs)
    seen = [r.getMessage() for r in caplog.records if r.name == SDK_GRPC_LOGGER]
    assert seen[-2:] == ["outside", "elsewhere"]
    assert rig.sent() == 2


def test_health_run_export_counts_an_exception_as_a_failure_and_raises(rig: Rig) -> None:
    def broken() -> SpanExportResult:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        rig.health.run_export(8, broken)
    assert rig.dropped("export_failed") == 8
