"""Go's scalar parsing as the emulator reproduces it: values Go accepts, and Go's messages."""

from __future__ import annotations

import pytest

from pycm.sim.gostrconv import parse_bool, parse_duration, parse_int64, quote

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        pytest.param("0", 0, id="zero-needs-no-unit"),
        pytest.param("-0", 0, id="signed-zero"),
        pytest.param("300ms", 300_000_000, id="ms"),
        pytest.param("1.5h", 5400 * S, id="fraction"),
        pytest.param("2h45m", (2 * 3600 + 45 * 60) * S, id="compound"),
        pytest.param("-1m30.5s", -90_500_000_000, id="negative-compound"),
        pytest.param("+10us", 10_000, id="plus-us"),
        pytest.param("1µs", 1_000, id="micro-sign"),
        pytest.param(".5s", S // 2, id="leading-dot"),
        pytest.param("1.s", S, id="trailing-dot"),
        pytest.param("9223372036854775807ns", 2**63 - 1, id="max"),
        pytest.param("-9223372036854775808ns", -(2**63), id="min"),
    ],
)
def test_parse_duration_accepts_what_go_accepts(text: str, nanoseconds: int) -> None:
    assert parse_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", 'time: invalid duration ""', id="empty"),
        pytest.param("abc", 'time: invalid duration "abc"', id="no-number"),
        pytest.param("5", 'time: missing unit in duration "5"', id="no-unit"),
        pytest.param("5y", 'time: unknown unit "y" in duration "5y"', id="unknown-unit"),
        pytest.param(".s", 'time: invalid duration ".s"', id="dot-only"),
        pytest.param("-", 'time: invalid duration "-"', id="sign-only"),
        pytest.param("9223372036854775808ns", "time: invalid duration", id="overflow"),
        pytest.param("3000000h", "time: invalid duration", id="overflow-hours"),
    ],
)
def test_parse_duration_refuses_with_gos_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "value", "error"),
    [
        pytest.param("42", 42, None, id="plain"),
        pytest.param("+7", 7, None, id="plus"),
        pytest.param("-7", -7, None, id="minus"),
        pytest.param("007", 7, None, id="leading-zeros"),
        pytest.param("9223372036854775807", 2**63 - 1, None, id="max"),
        pytest.param("9223372036854775808", None, "value out of range", id="past-max"),
        pytest.param("1e3", None, "invalid syntax", id="exponent"),
        pytest.param("1_000", None, "invalid syntax", id="underscore"),
        pytest.param(" 1", None, "invalid syntax", id="space"),
        pytest.param("", None, "invalid syntax", id="empty"),
        pytest.param("٣", None, "invalid syntax", id="non-ascii-digit"),
    ],
)
def test_parse_int64_is_strconv_parseint(text: str, value: int | None, error: str | None) -> None:
    if error is None:
        assert parse_int64(text) == value
        return
    with pytest.raises(ValueError) as err:
        parse_int64(text)
    assert str(err.value) == f"strconv.ParseInt: parsing {quote(text)}: {error}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", False), ("false", False), ("FALSE", False), ("1", True), ("", True), ("no", True)],
)
def test_parse_bool_only_0_and_false_are_false(text: str, expected: bool) -> None:
    assert parse_bool(text) is expected


def test_quote_escapes_as_go_does() -> None:
    assert quote("plain") == '"plain"'
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert quote("\n\t\x01\x7f") == '"\\n\\t\\x01\\x7f"'
    assert quote("é\u200b") == '"é\\u200b"'
