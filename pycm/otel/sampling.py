"""Tail sampling of reconcile traces: decided when the reconcile ends, on what it did.

Every failed reconcile and every one slower than the slow threshold is kept; of the rest, the
``ratio`` share, chosen deterministically on the trace id the way the SDK's TraceIdRatioBased
sampler chooses (the low 64 bits of the trace id against ``ratio * 2**64``), so every replica and
every collector agrees on which traces a ratio keeps.
"""

from __future__ import annotations

import enum
import math

__all__ = ["Decision", "TailSampler"]

_TRACE_ID_LIMIT = (1 << 64) - 1


class Decision(enum.StrEnum):
    """Why a trace was kept (the first three) or dropped."""

    ERROR = "error"
    SLOW = "slow"
    SAMPLED = "sampled"
    ALWAYS = "always"  # not a reconcile: start-up, lease, informer lists
    SAMPLED_OUT = "sampled_out"

    @property
    def keep(self) -> bool:
        return self is not Decision.SAMPLED_OUT


class TailSampler:
    def __init__(self, ratio: float, slow_threshold_s: float) -> None:
        if not (math.isfinite(ratio) and 0.0 <= ratio <= 1.0):
            raise ValueError(f"sample ratio {ratio!r} must be between 0 and 1")
        self.ratio = ratio
        self.slow_ns = int(slow_threshold_s * 1e9)
        self._bound = round(ratio * (_TRACE_ID_LIMIT + 1))

    def by_ratio(self, trace_id: str) -> bool:
        return (int(trace_id, 16) & _TRACE_ID_LIMIT) < self._bound

    def decide(self, trace_id: str, *, failed: bool, dur_ns: int) -> Decision:
        if failed:
            return _ERROR
        if self.slow_ns > 0 and dur_ns > self.slow_ns:
            return _SLOW
        return _SAMPLED if (int(trace_id, 16) & _TRACE_ID_LIMIT) < self._bound else _SAMPLED_OUT


# Enum member access is an attribute lookup through the metaclass: resolved once, here.
_ERROR, _SLOW, _SAMPLED, _SAMPLED_OUT = (
    Decision.ERROR,
    Decision.SLOW,
    Decision.SAMPLED,
    Decision.SAMPLED_OUT,
)
