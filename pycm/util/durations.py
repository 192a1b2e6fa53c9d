"""Go-style durations: ``"15s"``, ``"1m30s"``, ``"500ms"`` parsed and printed.

KCM's flags are Go ``time.Duration`` values (``--leader-elect-lease-duration=15s``), so pycm reads
and prints them exactly as Go does: :func:`parse_duration` follows ``time.ParseDuration`` and
:func:`format_duration` follows ``Duration.String()``. Values are float seconds at the API (what
:class:`~pycm.util.clock.Clock` takes); underneath they are whole nanoseconds, Go's resolution,
and the ``*_ns`` variants expose that exactly.

Two departures from Go, both for flags: negative durations are rejected unless
``allow_negative=True``, and error messages say what is wrong and what is expected.
"""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction

__all__ = [
    "DurationError",
    "duration_arg",
    "format_duration",
    "format_duration_ns",
    "parse_duration",
    "parse_duration_ns",
]

_NS_PER: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign (what Go prints)
    "μs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_UNITS_HINT = "units: ns, us, ms, s, m, h"
# Go durations are int64 nanoseconds: about 292 years either way.
_MAX_NS = 2**63 - 1
_MIN_NS = -(2**63)
_OUT_OF_RANGE = "out of range (at most 2562047h47m16.854775807s)"
_NUMBER_CHARS = frozenset("0123456789.")
# A longer whole part is out of range anyway (and int() refuses very long strings).
_MAX_DIGITS = 30


class DurationError(ValueError):
    """A duration string that cannot be parsed; the message says why and what is expected."""


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def parse_duration_ns(text: str, *, allow_negative: bool = False) -> int:
    """Parse a Go duration string into whole nanoseconds.

    The grammar is Go's: an optional sign, then one or more ``<decimal><unit>`` terms, where the
    decimal may have a fraction (``"1.5h"``, ``".5s"``) and the unit is one of ns, us (µs), ms,
    s, m, h; a bare ``"0"`` is zero. Fractions finer than a nanosecond are truncated, as in Go.
    """
    quoted = _quote(text)

    def error(reason: str) -> DurationError:
        return DurationError(f"invalid duration {quoted}: {reason}")

    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        what = "empty" if not text else f"sign {_quote(text)} without a value"
        raise error(f'{what} (use e.g. "15s" or "1m30s"; {_UNITS_HINT})')

    total = 0
    while rest:
        # A term is a maximal run of [0-9.] (the number) then of anything else (the unit).
        cut = 0
        while cut < len(rest) and rest[cut] in _NUMBER_CHARS:
            cut += 1
        number, rest = rest[:cut], rest[cut:]
        cut = 0
        while cut < len(rest) and rest[cut] not in _NUMBER_CHARS:
            cut += 1
        unit, rest = rest[:cut], rest[cut:]

        if not number:
            raise error(f'expected a number before {_quote(unit)} (e.g. "15s")')
        whole, _, fraction = number.partition(".")
        if "." in fraction or not (whole or fraction):
            raise error(f'malformed number {_quote(number)} (use e.g. "1.5s")')
        if not unit:
            raise error(f'missing unit (use e.g. "{number}s"; {_UNITS_HINT})')
        scale = _NS_PER.get(unit)
        if scale is None:
            raise error(f"unknown unit {_quote(unit)} ({_UNITS_HINT})")

        if len(whole.lstrip("0")) > _MAX_DIGITS:
            raise error(_OUT_OF_RANGE)
        value = int(whole or "0") * scale
        if fraction:
            # Exact integer arithmetic; Go truncates sub-nanosecond remainders too. Go stops
            # reading fraction digits at about the 19th; 30 is past any nanosecond that matters.
            fraction = fraction[:_MAX_DIGITS]
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        if total > 2**63:
            break

    result = -total if negative else total
    if not _MIN_NS <= result <= _MAX_NS:
        raise error(_OUT_OF_RANGE)
    if result < 0 and not allow_negative:
        raise error(f'negative durations are not allowed (use e.g. "{text[1:]}")')
    return result


def parse_duration(text: str, *, allow_negative: bool = False) -> float:
    """Parse a Go duration string (``"15s"``, ``"1m30s"``, ``"300µs"``) into seconds.

    Raises :class:`DurationError` for anything Go would reject, and for negative durations
    unless ``allow_negative`` is set.
    """
    return parse_duration_ns(text, allow_negative=allow_negative) / 1_000_000_000


def duration_arg(text: str) -> float:
    """An argparse ``type=`` for non-negative duration flags; returns seconds."""
    try:
        return parse_duration(text)
    except DurationError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def format_duration_ns(ns: int) -> str:
    """Print nanoseconds as Go's ``Duration.String()`` does: ``"1h2m3.5s"``, ``"1.5µs"``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_decimal(u, 3)}µs"
    if u < 1_000_000_000:
        return f"{sign}{_decimal(u, 6)}ms"
    seconds = _decimal(u % 60_000_000_000, 9)
    minutes, hours = (u // 60_000_000_000) % 60, u // 3_600_000_000_000
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _decimal(value: int, places: int) -> str:
    """``value / 10**places`` without trailing zeros (nor a bare trailing point)."""
    whole, fraction = divmod(value, 10**places)
    digits = f"{fraction:0{places}d}".rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def format_duration(seconds: float) -> str:
    """Print seconds as Go prints the duration: 90 → ``"1m30s"``, 0.5 → ``"500ms"``.

    The value is rounded to the nearest nanosecond first (Go's resolution), exactly: below
    about 52 days a float of seconds round-trips through :func:`parse_duration` unchanged.
    """
    if not math.isfinite(seconds):
        raise ValueError(f"cannot format a non-finite duration: {seconds!r}")
    # Not round(seconds * 1e9): that multiplication rounds too, and is off by 1 ns past ~26 days.
    return format_duration_ns(round(Fraction(seconds) * 1_000_000_000))
