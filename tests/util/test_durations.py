"""Go duration parsing and printing, checked against what Go's time package does."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pycm.util.durations import (
    DurationError,
    duration_arg,
    format_duration,
    format_duration_ns,
    parse_duration,
    parse_duration_ns,
)

_UNITS = "units: ns, us, ms, s, m, h"


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        pytest.param("15s", 15_000_000_000, id="seconds"),
        pytest.param("1m30s", 90_000_000_000, id="minutes-seconds"),
        pytest.param("500ms", 500_000_000, id="milliseconds"),
        pytest.param("2h45m", 9_900_000_000_000, id="hours-minutes"),
        pytest.param("1.5h", 5_400_000_000_000, id="fractional-hours"),
        pytest.param("300us", 300_000, id="us"),
        pytest.param("300µs", 300_000, id="micro-sign"),
        pytest.param("300μs", 300_000, id="greek-mu"),
        pytest.param("10ns", 10, id="nanoseconds"),
        pytest.param("0", 0, id="bare-zero"),
        pytest.param("0s", 0, id="zero-seconds"),
        pytest.param("+5s", 5_000_000_000, id="plus-sign"),
        pytest.param("-0", 0, id="minus-zero"),
        pytest.param(".5s", 500_000_000, id="leading-point"),
        pytest.param("1.s", 1_000_000_000, id="trailing-point"),
        pytest.param("1h1m1s1ms1us1ns", 3_661_001_001_001, id="every-unit"),
        pytest.param("1s1s", 2_000_000_000, id="repeated-unit-adds"),
        pytest.param("1.0000000009s", 1_000_000_000, id="sub-ns-truncated"),
        pytest.param("0.333333333333h", 1_199_999_999_998, id="long-fraction-exact"),
        pytest.param("9223372036854775807ns", 2**63 - 1, id="int64-max"),
        pytest.param("0" * 40 + "1s", 1_000_000_000, id="many-leading-zeros"),
        pytest.param("2562047h47m16.854775807s", 2**63 - 1, id="int64-max-hms"),
    ],
)
def test_parse_duration_ns_valid_returns_go_value(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns
    assert parse_duration(text) == ns / 1e9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "15", f'invalid duration "15": missing unit (use e.g. "15s"; {_UNITS})', id="no-unit"
        ),
        pytest.param(
            "1m30",
            f'invalid duration "1m30": missing unit (use e.g. "30s"; {_UNITS})',
            id="last-term-no-unit",
        ),
        pytest.param(
            "-1s",
            'invalid duration "-1s": negative durations are not allowed (use e.g. "1s")',
            id="negative",
        ),
        pytest.param(
            "1x", f'invalid duration "1x": unknown unit "x" ({_UNITS})', id="unknown-unit"
        ),
        pytest.param(
            "1S", f'invalid duration "1S": unknown unit "S" ({_UNITS})', id="units-are-lowercase"
        ),
        pytest.param(
            "15s ", f'invalid duration "15s ": unknown unit "s " ({_UNITS})', id="trailing-space"
        ),
        pytest.param(
            "", f'invalid duration "": empty (use e.g. "15s" or "1m30s"; {_UNITS})', id="empty"
        ),
        pytest.param(
            "-",
            f'invalid duration "-": sign "-" without a value (use e.g. "15s" or "1m30s"; {_UNITS})',
            id="sign-only",
        ),
        pytest.param(
            "s", 'invalid duration "s": expected a number before "s" (e.g. "15s")', id="unit-only"
        ),
        pytest.param(
            "1..5s",
            'invalid duration "1..5s": malformed number "1..5" (use e.g. "1.5s")',
            id="two-points",
        ),
        pytest.param(
            ".s", 'invalid duration ".s": malformed number "." (use e.g. "1.5s")', id="point-only"
        ),
        pytest.param(
            "9223372036854775808ns",
            'invalid duration "9223372036854775808ns": out of range'
            " (at most 2562047h47m16.854775807s)",
            id="int64-overflow",
        ),
        pytest.param(
            "1" * 5000 + "s",
            f'invalid duration "{"1" * 5000}s": out of range (at most 2562047h47m16.854775807s)',
            id="huge-digit-run",
        ),
    ],
)
def test_parse_duration_invalid_raises_explaining_message(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


def test_duration_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="missing unit"):
        parse_duration("15")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("-1.5s", -1.5, id="negative-seconds"),
        pytest.param("-2h45m", -9900.0, id="negative-sign-covers-all-terms"),
        pytest.param("-9223372036854775808ns", -(2**63) / 1e9, id="int64-min"),
    ],
)
def test_parse_duration_allow_negative_accepts_sign(text: str, seconds: float) -> None:
    assert parse_duration(text, allow_negative=True) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(15, "15s", id="seconds"),
        pytest.param(90, "1m30s", id="minutes-seconds"),
        pytest.param(0.5, "500ms", id="milliseconds"),
        pytest.param(9900, "2h45m0s", id="hours-keep-zero-seconds"),
        pytest.param(0, "0s", id="zero"),
        pytest.param(1.5e-6, "1.5µs", id="fractional-microseconds"),
        pytest.param(12 * 3600, "12h0m0s", id="twelve-hours"),
        pytest.param(1e-9, "1ns", id="one-ns"),
        pytest.param(999e-9, "999ns", id="just-below-a-microsecond"),
        pytest.param(0.0015, "1.5ms", id="fractional-milliseconds"),
        pytest.param(1.5, "1.5s", id="fractional-seconds"),
        pytest.param(61.000000001, "1m1.000000001s", id="ns-in-minutes"),
        pytest.param(-1.5, "-1.5s", id="negative"),
        pytest.param(-90, "-1m30s", id="negative-minutes"),
        pytest.param(100 * 3600, "100h0m0s", id="no-days"),
    ],
)
def test_format_duration_prints_as_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        pytest.param(2**63 - 1, "2562047h47m16.854775807s", id="int64-max"),
        pytest.param(-(2**63), "-2562047h47m16.854775808s", id="int64-min"),
        pytest.param(1_000, "1µs", id="one-microsecond"),
        pytest.param(1_000_000, "1ms", id="one-millisecond"),
    ],
)
def test_format_duration_ns_prints_as_go(ns: int, text: str) -> None:
    assert format_duration_ns(ns) == text


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_format_duration_non_finite_is_rejected(value: float) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        format_duration(value)


def test_duration_arg_valid_returns_seconds() -> None:
    assert duration_arg("1m30s") == 90.0


def test_duration_arg_invalid_raises_argument_type_error_with_same_message() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        duration_arg("15")
    assert str(caught.value) == f'invalid duration "15": missing unit (use e.g. "15s"; {_UNITS})'


def test_duration_arg_in_parser_reports_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="pycm")
    parser.add_argument("--leader-elect-lease-duration", type=duration_arg, default=15.0)
    assert (
        parser.parse_args(["--leader-elect-lease-duration=2m"]).leader_elect_lease_duration == 120
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--leader-elect-lease-duration=-1s"])
    assert "negative durations are not allowed" in capsys.readouterr().err


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_format_then_parse_ns_round_trips_exactly(ns: int) -> None:
    assert parse_duration_ns(format_duration_ns(ns), allow_negative=True) == ns


# Below 2**52 ns (about 52 days) a float of seconds still tells nanoseconds apart.
@given(st.integers(min_value=-(2**52), max_value=2**52))
def test_format_then_parse_seconds_round_trips_at_ns_precision(ns: int) -> None:
    seconds = ns / 1e9
    text = format_duration(seconds)
    assert parse_duration_ns(text, allow_negative=True) == ns
    assert parse_duration(text, allow_negative=True) == seconds
