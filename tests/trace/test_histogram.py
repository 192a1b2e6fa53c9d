"""Tests for pycm.trace.histogram: bucket placement, exact stats, percentile error bound, merge,
and the JSON round trip."""

from __future__ import annotations

import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycm.trace.histogram import (
    BUCKETS_PER_DECADE,
    HIGH,
    LOW,
    RELATIVE_ERROR,
    Histogram,
    bucket_bounds,
    bucket_index,
)


def nearest_rank(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    rank = min(len(ordered), max(1, math.ceil(q * len(ordered))))
    return ordered[rank - 1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(-5.0, 0, id="negative-underflow"),
        pytest.param(0.0, 0, id="zero-underflow"),
        pytest.param(LOW / 2, 0, id="below-low"),
        pytest.param(LOW, 1, id="low-edge-first-regular"),
        pytest.param(1.0, 3 * BUCKETS_PER_DECADE + 1, id="one-ms"),
        pytest.param(HIGH * 0.999999, 8 * BUCKETS_PER_DECADE, id="just-below-high-last-regular"),
        pytest.param(HIGH, 8 * BUCKETS_PER_DECADE + 1, id="high-overflow"),
        pytest.param(1e9, 8 * BUCKETS_PER_DECADE + 1, id="huge-overflow"),
    ],
)
def test_bucket_index_edges_expected_bucket(value: float, expected: int) -> None:
    assert bucket_index(value) == expected


@given(st.floats(min_value=LOW, max_value=HIGH, exclude_max=True))
def test_bucket_index_regular_value_lies_within_its_bounds(value: float) -> None:
    low, high = bucket_bounds(bucket_index(value))
    assert low <= value < high
    assert high / low == pytest.approx(1 + RELATIVE_ERROR, rel=1e-9)


def test_histogram_empty_percentiles_none_and_dict_jsonable() -> None:
    h = Histogram()
    assert h.percentile(0.5) is None
    assert h.mean is None
    d = h.to_dict()
    assert d == {
        "count": 0,
        "sum": 0.0,
        "min": None,
        "max": None,
        "buckets": [],
        "p50": None,
        "p90": None,
        "p99": None,
    }
    assert orjson.loads(orjson.dumps(d)) == d


def test_histogram_samples_exact_count_sum_min_max() -> None:
    h = Histogram()
    for v in (3.0, 0.5, 120.0, 7.25):
        h.add(v)
    assert (h.count, h.sum, h.min, h.max) == (4, 130.75, 0.5, 120.0)
    assert sum(h.counts) == 4


def test_histogram_single_sample_percentiles_exact() -> None:
    h = Histogram()
    h.add(42.0)
    assert [h.percentile(q) for q in (0.0, 0.5, 0.9, 0.99, 1.0)] == [42.0] * 5


def test_histogram_max_percentile_is_exact_max() -> None:
    h = Histogram()
    for v in (1.0, 2.0, 3.0, 1000.0):
        h.add(v)
    assert h.percentile(1.0) == 1000.0


@settings(max_examples=300)
@given(
    st.lists(st.floats(min_value=LOW, max_value=HIGH / 2), min_size=1, max_size=400),
    st.sampled_from([0.5, 0.9, 0.99, 0.25, 1.0]),
)
def test_histogram_percentile_random_samples_within_relative_error(
    samples: list[float], q: float
) -> None:
    h = Histogram()
    for v in samples:
        h.add(v)
    exact = nearest_rank(samples, q)
    estimate = h.percentile(q)
    assert estimate is not None
    assert abs(estimate - exact) <= exact * RELATIVE_ERROR * (1 + 1e-9)


@given(
    st.lists(st.floats(min_value=0, max_value=1e6), max_size=50),
    st.lists(st.floats(min_value=0, max_value=1e6), max_size=50),
)
def test_histogram_merge_equals_adding_all(a: list[float], b: list[float]) -> None:
    ha, hb, hall = Histogram(), Histogram(), Histogram()
    for v in a:
        ha.add(v)
        hall.add(v)
    for v in b:
        hb.add(v)
    for v in b:
        hall.add(v)
    ha.merge(hb)
    assert ha.counts == hall.counts
    assert (ha.count, ha.min, ha.max) == (hall.count, hall.min, hall.max)
    assert ha.sum == pytest.approx(hall.sum)


@given(st.lists(st.floats(min_value=-1, max_value=1e7), max_size=60))
def test_histogram_dict_round_trip_restores_equal(samples: list[float]) -> None:
    h = Histogram()
    for v in samples:
        h.add(v)
    wire = orjson.loads(orjson.dumps(h.to_dict()))
    back = Histogram.from_dict(wire)
    assert back == h
    assert back.to_dict() == h.to_dict()
