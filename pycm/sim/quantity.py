"""Resource quantities (``10Gi``, ``500m``, ``1e3``) as kube's ``resource.Quantity`` parses
them: the syntax, the suffixes, and the value (as an exact fraction) to compare.

A quantity that does not parse fails the request's decoding in kube, so it is a 400 with
Quantity's own error text (:data:`FORMAT_ERROR` or :data:`SUFFIX_ERROR`).
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["FORMAT_ERROR", "SUFFIX_ERROR", "canonical_quantity", "parse_quantity"]

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"
_SYNTAX = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_EXPONENT = re.compile(r"^[eE][-+]?[0-9]+$")


def parse_quantity(text: str) -> Fraction:
    """The value of ``text``; ValueError with kube's message if it is not a quantity."""
    match = _SYNTAX.match(text.strip()) if text == text.strip() else None
    if match is None:
        raise ValueError(FORMAT_ERROR)
    number, suffix = match.groups()
    if not _NUMBER.match(number):
        raise ValueError(FORMAT_ERROR)
    value = Fraction(number)
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    if _EXPONENT.match(suffix):
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:  # kube's bound on the scale it keeps
            raise ValueError(SUFFIX_ERROR)
        return value * Fraction(10) ** exponent
    raise ValueError(SUFFIX_ERROR)


# Decimal suffixes by power of ten, for the canonical form (kube's DecimalSI).
_DECIMAL_BY_EXPONENT = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_NANO = 10**9  # kube keeps nine decimal digits and rounds anything finer up


def canonical_quantity(text: str) -> str:
    """``text`` as kube's ``Quantity.String()`` writes it back (``0.5`` → ``500m``, ``1.5Gi`` →
    ``1536Mi``, ``2000`` → ``2k``): the value in the format its suffix chose (binary, decimal
    or exponent), with the largest suffix that keeps the number whole. ValueError as
    :func:`parse_quantity`."""
    value = parse_quantity(text)
    suffix = _SYNTAX.match(text)[2]  # type: ignore[index]  # parse_quantity matched it
    sign = "-" if value < 0 else ""
    nanos = -((-abs(value.numerator) * _NANO) // value.denominator)  # |value| × 10⁹, rounded up
    if suffix in _BINARY and nanos % _NANO == 0 and nanos >= 1024 * _NANO:
        whole = nanos // _NANO
        for name, size in sorted(_BINARY.items(), key=lambda item: -item[1]):
            if whole % size == 0:
                return f"{sign}{whole // size}{name}"
        return f"{sign}{whole}"
    exponent = -9
    while nanos and nanos % 1000 == 0 and (exponent < 18 or _EXPONENT.match(suffix)):
        nanos //= 1000
        exponent += 3
    if not nanos:
        return "0"
    if _EXPONENT.match(suffix):
        return f"{sign}{nanos}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{nanos}{_DECIMAL_BY_EXPONENT[exponent]}"
