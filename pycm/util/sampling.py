"""The trace-id ratio rule: which traces a sampling ratio keeps, decided from the id alone.

It is the OpenTelemetry SDK's TraceIdRatioBased rule (the low 64 bits of the 128-bit trace id
against ``round(ratio * 2**64)``), so every process that sees a trace id — the kube client
setting the W3C ``traceparent`` sampled flag before a request, the OTel sink deciding at the
tail whether a fast reconcile is exported, another replica, a collector — agrees on the answer
without talking to each other. It lives here, below pycm.kube and pycm.otel, because both use it.
"""

from __future__ import annotations

import math

__all__ = ["TraceIdRatio"]

_LOW_64 = (1 << 64) - 1


class TraceIdRatio:
    """``sampled(trace_id)`` is True for the ``ratio`` share of trace ids (hex, 32 digits)."""

    __slots__ = ("_bound", "ratio")

    def __init__(self, ratio: float) -> None:
        if not (math.isfinite(ratio) and 0.0 <= ratio <= 1.0):
            raise ValueError(f"sample ratio {ratio!r} must be between 0 and 1")
        self.ratio = ratio
        self._bound = round(ratio * (_LOW_64 + 1))

    def sampled(self, trace_id: str) -> bool:
        try:
            return (int(trace_id, 16) & _LOW_64) < self._bound
        except ValueError:  # not a hex id: never chosen by ratio
            return False
