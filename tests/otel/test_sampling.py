"""The ratio rule as text: the sink decides a pycm trace id (32 lowercase hex digits) by
comparing its low half with ``TailSampler.ratio_bound_hex`` — the same answer as ``by_ratio`` —
and a root reconcile by comparing its low half, a number, with ``ratio_bound``."""

from __future__ import annotations

import random

import pytest

from pycm.otel.sampling import TailSampler


def _as_text(sampler: TailSampler, trace_id: str) -> bool:
    # The sink's inline rule ("g" sorts after every hex digit: None keeps every id).
    return trace_id[16:] < (sampler.ratio_bound_hex or "g")


@pytest.mark.parametrize("ratio", [0.0, 1e-9, 0.1, 0.5, 0.999999, 1.0])
def test_ratio_as_text_agrees_with_the_rule_at_and_around_the_bound(ratio: float) -> None:
    sampler = TailSampler(ratio, slow_threshold_s=1.0)
    rng = random.Random(7)
    bound = round(ratio * (1 << 64))
    lows = [0, 1, (1 << 64) - 1, *(b for b in (bound - 1, bound, bound + 1) if 0 <= b < 1 << 64)]
    lows += [rng.getrandbits(64) for _ in range(2000)]
    for low in lows:
        trace_id = f"{rng.getrandbits(64):016x}{low:016x}"
        assert _as_text(sampler, trace_id) == sampler.by_ratio(trace_id), (ratio, trace_id)
        assert (low < sampler.ratio_bound) == sampler.by_ratio(trace_id), (ratio, trace_id)
