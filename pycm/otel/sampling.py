"""Tail sampling of reconcile traces: decided when the reconcile ends, on what it did.

Every failed reconcile and every one slower than the slow threshold is kept; of the rest, the
``ratio`` share, chosen deterministically on the trace id by
:class:`pycm.util.sampling.TraceIdRatio` (the SDK's TraceIdRatioBased rule) — the same rule
pycm.kube's client uses for the ``traceparent`` sampled flag, so an apiserver that records by
parent-based sampling records exactly the requests of the fast reconciles exported here.
A sampled-out reconcile is kept after all (``cause``) when a kept one links to it within the
cause window (:mod:`pycm.otel.causes`).
"""

from __future__ import annotations

import enum

from pycm.util.sampling import TraceIdRatio

__all__ = ["Decision", "TailSampler"]

_TWO_64 = 1 << 64


class Decision(enum.StrEnum):
    """Why a trace was kept (all but the last) or dropped."""

    ERROR = "error"
    SLOW = "slow"
    SAMPLED = "sampled"
    ALWAYS = "always"  # not a reconcile: start-up, lease, informer lists
    CAUSE = "cause"  # sampled out, then linked to by a kept reconcile (pycm.otel.causes)
    SAMPLED_OUT = "sampled_out"

    @property
    def keep(self) -> bool:
        return self is not Decision.SAMPLED_OUT


class TailSampler:
    """``by_ratio(trace_id)`` is :class:`TraceIdRatio`'s answer. For the ids pycm makes (32
    lowercase hex digits) the low 64 bits compare with the bound as text, which is what the sink
    does inline: ``ratio_bound_hex`` is the bound as 16 hex digits, or None when every id is
    kept (ratio 1: the bound needs a 17th digit); ``ratio_bound`` is the bound as a number
    (2**64 at ratio 1), for ids whose low half is at hand as one."""

    def __init__(self, ratio: float, slow_threshold_s: float) -> None:
        self._rule = TraceIdRatio(ratio)  # raises ValueError outside [0, 1]
        self.ratio = ratio
        self.slow_ns = int(slow_threshold_s * 1e9)
        self.by_ratio = self._rule.sampled
        self.ratio_bound = bound = round(ratio * _TWO_64)  # TraceIdRatio's, on the low 64 bits
        self.ratio_bound_hex = f"{bound:016x}" if bound < _TWO_64 else None

    def decide(self, trace_id: str, *, failed: bool, dur_ns: int) -> Decision:
        if failed:
            return _ERROR
        if self.slow_ns > 0 and dur_ns > self.slow_ns:
            return _SLOW
        return _SAMPLED if self.by_ratio(trace_id) else _SAMPLED_OUT


# Enum member access is an attribute lookup through the metaclass: resolved once, here.
_ERROR, _SLOW, _SAMPLED, _SAMPLED_OUT = (
    Decision.ERROR,
    Decision.SLOW,
    Decision.SAMPLED,
    Decision.SAMPLED_OUT,
)
