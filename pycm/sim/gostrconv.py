"""Go's scalar parsing, with its error texts: what kube-apiserver's query decoding says.

kube decodes query parameters with Go's ``strconv`` and ``time`` (apimachinery's
``runtime.Convert_Slice_string_To_*`` and the request-deadline filter), and a 400 it answers
carries their error verbatim (``strconv.ParseInt: parsing "1e20": invalid syntax``). These
functions accept what Go accepts and raise :class:`ValueError` with Go's message otherwise, so
the emulator's 400s read as kube's. Everything is a few string operations and int conversions:
they run on the request path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["parse_bool", "parse_duration", "parse_int64", "quote"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES |= {"\v": "\\v", "\\": "\\\\", '"': '\\"'}


def quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints): printable characters as they are, the rest
    escaped as Go escapes them (``\\n``, ``\\x01``, ``\\u200b``)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # the common case: nothing to escape
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def parse_int64(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``: an optional sign and ASCII digits, within int64."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"strconv.ParseInt: parsing {quote(text)}: invalid syntax")
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"strconv.ParseInt: parsing {quote(text)}: value out of range")
    return value


def parse_bool(text: str) -> bool:
    """A boolean query parameter as apimachinery reads one (``Convert_Slice_string_To_bool``):
    only "0" and "false" (any case) are false; anything else, even "" or "no", is true."""
    return not (text == "0" or text.lower() == "false")


# Nanoseconds per unit, as Go's time.ParseDuration names them.
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``, in nanoseconds: ``[-+]`` then one or more decimal numbers,
    each with a unit (``300ms``, ``-1.5h``, ``2h45m``); "0" alone needs none. Go's messages."""
    shown = quote(text)
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {shown}")
    total = 0
    while s:
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        whole, s = s[:i], s[i:]
        fraction = ""
        if s[:1] == ".":
            j = 1
            while j < len(s) and "0" <= s[j] <= "9":
                j += 1
            fraction, s = s[1:j], s[j:]
        if not whole and not fraction:
            raise ValueError(f"time: invalid duration {shown}")  # no digits (".s", "s")
        j = 0
        while j < len(s) and s[j] != "." and not ("0" <= s[j] <= "9"):
            j += 1
        unit_name, s = s[:j], s[j:]
        if not unit_name:
            raise ValueError(f"time: missing unit in duration {shown}")
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {quote(unit_name)} in duration {shown}")
        value = int(whole or "0") * unit
        if fraction:
            value += int(fraction) * unit // 10 ** len(fraction)
        total += value
        if total > 2**63 - (0 if negative else 1):
            raise ValueError(f"time: invalid duration {shown}")
    return -total if negative else total


def go_strings(values: Iterable[Any]) -> str:
    """Go's ``%#v`` of a ``[]string`` (kube prints a list value so in its causes)."""
    return "[]string{" + ", ".join(quote(str(v)) for v in values) + "}"
