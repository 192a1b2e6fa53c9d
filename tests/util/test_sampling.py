"""The trace-id ratio rule against the OpenTelemetry SDK's own TraceIdRatioBased sampler."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from pycm.util.sampling import TraceIdRatio


@pytest.mark.parametrize("ratio", [0.0, 0.001, 0.1, 0.5, 0.9, 1.0])
def test_trace_id_ratio_agrees_with_the_sdk_sampler(ratio: float) -> None:
    rng = random.Random(ratio)
    ours, sdk = TraceIdRatio(ratio), TraceIdRatioBased(ratio)
    ids = [rng.getrandbits(128) for _ in range(2000)] + [0, 1, (1 << 128) - 1, 1 << 64]
    for trace_id in ids:
        expected = sdk.should_sample(None, trace_id, "x").decision is Decision.RECORD_AND_SAMPLE
        assert ours.sampled(f"{trace_id:032x}") is expected, (ratio, f"{trace_id:032x}")


def test_trace_id_ratio_keeps_about_the_ratio_share() -> None:
    rng = random.Random(7)
    rule = TraceIdRatio(0.1)
    kept = sum(rule.sampled(f"{rng.getrandbits(128):032x}") for _ in range(20000))
    assert 1700 < kept < 2300  # 2000 expected; ±6.7 standard deviations


def test_trace_id_ratio_edges_and_bad_input() -> None:
    assert TraceIdRatio(1.0).sampled("f" * 32) is True
    assert TraceIdRatio(0.0).sampled("0" * 32) is False
    assert TraceIdRatio(1.0).sampled("not-hex") is False
    for bad in (-0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="between 0 and 1"):
            TraceIdRatio(bad)
