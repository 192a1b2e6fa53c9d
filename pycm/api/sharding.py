"""Shard selectors (KEP-5866, alpha in Kubernetes 1.36): the wire form, and matching.

A list or watch may carry ``shardSelector``: one or more hash ranges over one metadata field,
joined by ``||``::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
    shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') ||
        shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')

An object matches when the 64-bit FNV-1a hash of the field's value falls in any range
``[start, end)``. Bounds are ``0x`` and exactly 16 lowercase hex digits, except the end of the
space, ``0x10000000000000000`` (2**64); every range uses the same field; ``object.metadata.uid``
and ``object.metadata.namespace`` are the fields kube supports (a cluster-scoped object's
namespace is ""). The hash is kube's ``sharding.HashField``, so a member that filters on its
side (a server without the feature) keeps exactly what the server would have sent it.

Parsing follows kube-apiserver's walk of the expression (``apiserver/pkg/sharding``) and its
messages; the emulator has its own parser (``pycm/sim`` is an independent peer), and the tests
hold the two to the same answers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "FIELD_NAMESPACE",
    "FIELD_UID",
    "HASH_SPACE",
    "ShardRange",
    "ShardSelector",
    "ShardSelectorError",
    "fnv1a64",
    "hash_field",
    "parse",
]

FIELD_UID: Final = "object.metadata.uid"
FIELD_NAMESPACE: Final = "object.metadata.namespace"
_FIELDS: Final = (FIELD_UID, FIELD_NAMESPACE)
HASH_SPACE: Final = 1 << 64
"""The exclusive end of the hash space (``0x10000000000000000`` on the wire)."""

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK: Final = HASH_SPACE - 1


class ShardSelectorError(ValueError):
    """A shard selector the API server would refuse (400 BadRequest), with kube's words."""


def fnv1a64(data: bytes) -> int:
    """The 64-bit FNV-1a hash (Go's ``hash/fnv.New64a``)."""
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value


@functools.lru_cache(maxsize=16384)
def hash_field(value: str) -> int:
    """kube's ``sharding.HashField`` as a number: FNV-1a 64 of the value's UTF-8 bytes.

    Memoized: a member hashes every object it lists and watches, in pure Python (~10 µs a uid),
    and namespaces repeat."""
    return fnv1a64(value.encode())


def _hex(value: int) -> str:
    return "0x10000000000000000" if value == HASH_SPACE else f"0x{value:016x}"


@dataclass(frozen=True, slots=True)
class ShardRange:
    """Hashes ``start <= h < end`` of one field."""

    field: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.field not in _FIELDS:
            raise ShardSelectorError(
                f'unsupported field path "{self.field}"; supported: {", ".join(_FIELDS)}'
            )
        if not 0 <= self.start < self.end <= HASH_SPACE:
            raise ShardSelectorError(
                f"shard range start {_hex(self.start)} must be less than end {_hex(self.end)}"
            )

    def __str__(self) -> str:
        return f"shardRange({self.field}, '{_hex(self.start)}', '{_hex(self.end)}')"

    def __contains__(self, hashed: object) -> bool:
        return isinstance(hashed, int) and self.start <= hashed < self.end


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """One or more ranges of one field, any of which matches (``||``)."""

    ranges: tuple[ShardRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ShardSelectorError(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists"
            )
        fields = {r.field for r in self.ranges}
        if len(fields) > 1:
            first, other = (
                self.ranges[0].field,
                next(f for f in fields if f != self.ranges[0].field),
            )
            raise ShardSelectorError(
                f'all shard ranges must use the same field, got "{first}" and "{other}"'
            )

    @classmethod
    def of(cls, field: str, spans: Iterable[tuple[int, int]]) -> ShardSelector:
        """The selector for these ``(start, end)`` spans of ``field``, in order."""
        return cls(tuple(ShardRange(field, start, end) for start, end in spans))

    @property
    def field(self) -> str:
        return self.ranges[0].field

    def __str__(self) -> str:
        """The wire form, as kube's ``Selector.String`` writes it."""
        return " || ".join(str(r) for r in self.ranges)

    def contains_hash(self, hashed: int) -> bool:
        return any(r.start <= hashed < r.end for r in self.ranges)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the server would send ``obj`` (a dict with ``metadata``) to this shard."""
        metadata = obj.get("metadata") or {}
        name = "uid" if self.field == FIELD_UID else "namespace"
        return self.contains_hash(hash_field(str(metadata.get(name) or "")))


# The expression kube accepts is a CEL expression limited to shardRange calls joined by ||: a
# tokenizer is enough to walk it (kube parses with cel-go and walks the AST the same way).
_TOKEN = re.compile(
    r"""\s*(?:(?P<or>\|\|)|(?P<punct>[(),])|(?P<string>'[^'\\]*'|"[^"\\]*")"""
    r"""|(?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)|(?P<bad>\S))"""
)


def _tokens(expr: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:  # only trailing whitespace is left
            break
        pos = match.end()
        kind = match.lastgroup or "bad"
        text = match.group(kind)
        if kind == "bad":
            raise ShardSelectorError(
                f"CEL parse error: Syntax error: token recognition error at: '{text}'"
            )
        out.append((kind, re.sub(r"\s+", "", text) if kind == "ident" else text))
    return out


def _bound(token: tuple[str, str], name: str) -> int:
    kind, text = token
    if kind != "string":
        raise ShardSelectorError(f"{name} must be a string literal (e.g. '0xff'), got {text!r}")
    literal = text[1:-1]
    if not literal.startswith("0x"):
        raise ShardSelectorError(f"{name} must have '0x' prefix, got \"{literal}\"")
    digits = literal[2:]
    if not digits:
        raise ShardSelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise ShardSelectorError(
            f'{name}: hex value too long ({len(digits)} chars, max 17): "{digits}"'
        )
    bad = next((c for c in digits if c not in "0123456789abcdef"), None)
    if bad is not None:
        raise ShardSelectorError(f'{name}: invalid hex character "{bad}" in "{literal}"')
    if len(digits) == 17 and literal != "0x10000000000000000":
        raise ShardSelectorError(
            f"{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got \"{literal}\""
        )
    if len(digits) < 16:
        padded = "0x" + digits.rjust(16, "0")
        raise ShardSelectorError(
            f'{name} must be a 0x-prefixed 16-digit hex value, got "{literal}" '
            f'(did you mean "{padded}"?)'
        )
    return int(digits, 16)


def parse(expr: str) -> ShardSelector:
    """The selector the ``shardSelector`` parameter names, or :class:`ShardSelectorError`."""
    tokens = _tokens(expr.strip())
    if not tokens:
        raise ShardSelectorError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    ranges: list[ShardRange] = []
    at = 0
    while True:
        call = tokens[at : at + 8]
        shape = [kind if kind != "punct" else text for kind, text in call]
        if shape[:2] != ["ident", "("]:
            raise ShardSelectorError(
                "unexpected expression; expected shardRange() call or || operator"
            )
        if call[0][1] != "shardRange":
            raise ShardSelectorError(
                f'unsupported function "{call[0][1]}"; only shardRange() and || are allowed'
            )
        if shape[2:8] != ["ident", ",", "string", ",", "string", ")"]:
            raise ShardSelectorError(
                "shardRange() requires exactly 3 arguments: a field path and two hex strings"
            )
        field = call[2][1]
        if field not in _FIELDS:
            raise ShardSelectorError(
                f'unsupported field path "{field}"; supported: {", ".join(_FIELDS)}'
            )
        ranges.append(ShardRange(field, _bound(call[4], "hexStart"), _bound(call[6], "hexEnd")))
        at += 8
        if at == len(tokens):
            return ShardSelector(tuple(ranges))
        if tokens[at][0] != "or":
            raise ShardSelectorError(
                "unexpected expression; expected shardRange() call or || operator"
            )
        at += 1
