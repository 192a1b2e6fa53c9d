"""Tracing and events options: the trace recording and the OpenTelemetry export.

Tail sampling: every failed reconcile and every one slower than --trace-slow-threshold is
exported; of the rest, the --trace-sample-ratio share, and the causes a kept one links to while
they are within --trace-cause-window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pycm.app.config import Config, TracingConfig
from pycm.app.options.checks import one_of, otlp_endpoint, writable_file
from pycm.app.options.flagset import BOOL, DURATION, FLOAT32, STRING, FlagSet
from pycm.util.durations import format_duration

__all__ = ["OTLP_PROTOCOLS", "TracingOptions"]

_D = TracingConfig()
OTLP_PROTOCOLS = ("grpc", "http/protobuf")


@dataclass
class TracingOptions:
    trace_file: str = _D.trace_file
    otlp_endpoint: str = _D.otlp_endpoint
    otlp_protocol: str = _D.otlp_protocol
    sample_ratio: float = _D.sample_ratio
    slow_threshold: float = _D.slow_threshold
    cause_window: float = _D.cause_window
    object_histories: bool = _D.object_histories

    def add_flags(self, fs: FlagSet) -> None:
        fs.add(
            self,
            "trace_file",
            "trace-file",
            STRING,
            "Record every trace event here as JSON lines (read them with 'pycm trace cat').",
        )
        fs.add(
            self,
            "otlp_endpoint",
            "otlp-endpoint",
            STRING,
            "Export spans to this OpenTelemetry collector (e.g. http://localhost:4317); empty "
            "exports nothing.",
        )
        fs.add(
            self,
            "otlp_protocol",
            "otlp-protocol",
            STRING,
            "The OTLP transport: grpc or http/protobuf.",
        )
        fs.add(
            self,
            "sample_ratio",
            "trace-sample-ratio",
            FLOAT32,
            "The share (0 to 1) of ordinary reconciles exported as spans; failed and slow ones "
            "always are.",
        )
        fs.add(
            self,
            "slow_threshold",
            "trace-slow-threshold",
            DURATION,
            "A reconcile that takes longer than this is always exported.",
        )
        fs.add(
            self,
            "cause_window",
            "trace-cause-window",
            DURATION,
            "How long a sampled-out reconcile that wrote is held: if a kept reconcile links to "
            "it as its cause within this time, it is exported too, so the link opens. 0 holds "
            "none (bounded: 1024 traces, 4 MiB).",
        )
        fs.add(
            self,
            "object_histories",
            "object-histories",
            BOOL,
            "Keep each object's recent history and causes in memory, for 'pycm why' and "
            "/debug/pycm/objects (bounded: 50 steps an object, 16 MiB in all).",
        )

    def validate(self) -> list[str]:
        errors = []
        protocol = one_of("otlp-protocol", self.otlp_protocol, OTLP_PROTOCOLS)
        if protocol:
            errors.append(protocol)
        for problem in (
            writable_file("trace-file", self.trace_file),
            otlp_endpoint("otlp-endpoint", self.otlp_endpoint),
        ):
            if problem:
                errors.append(problem)
        if not (math.isfinite(self.sample_ratio) and 0 <= self.sample_ratio <= 1):
            errors.append(f"--trace-sample-ratio {self.sample_ratio:g} must be between 0 and 1")
        if self.cause_window < 0:
            errors.append(
                f"--trace-cause-window {format_duration(self.cause_window)} must not be negative"
            )
        return errors

    def apply_to(self, config: Config) -> None:
        config.tracing = TracingConfig(
            trace_file=self.trace_file,
            otlp_endpoint=self.otlp_endpoint,
            otlp_protocol=self.otlp_protocol,
            sample_ratio=self.sample_ratio,
            slow_threshold=self.slow_threshold,
            cause_window=self.cause_window,
            object_histories=self.object_histories,
        )
