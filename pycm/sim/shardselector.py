"""Shard selectors (KEP-5866, kube 1.36's ``ShardedListAndWatch`` gate): which objects a list or
watch's ``shardSelector`` keeps.

The parameter is a CEL expression: one or more ``shardRange(<field>, '<start>', '<end>')`` calls
joined by ``||``, every one over the same field, ``object.metadata.uid`` or
``object.metadata.namespace``. An object is kept when the 64-bit FNV-1a hash of that field's
value (its UTF-8 bytes; a cluster-scoped object's namespace is "") lies in any ``[start, end)``.
Bounds are ``0x`` and 16 lowercase hex digits, or ``0x10000000000000000`` for the end of the
space. uid and namespace never change, so an object never moves into or out of a shard: a watch
needs no selector transitions for it.

Parsing is kube-apiserver's: cel-go parses the text (:mod:`pycm.sim.celexpr`), then the tree is
walked for ``shardRange`` calls and ``||`` only, left to right, each error in kube's words; the
same-field rule is checked after the walk. The apiserver answers a selector it cannot parse with
400 BadRequest, ``invalid shard selector: <reason>``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from pycm.sim import errors
from pycm.sim.celexpr import LITERAL, Call, Expr, Ident, Literal, Select, SyntaxProblem
from pycm.sim.celexpr import parse as parse_cel
from pycm.sim.gostrconv import quote
from pycm.sim.objects import Obj

__all__ = ["FIELDS", "ShardSelector", "fnv1a_64", "parse_shard_selector"]

FIELDS: Final = {"object.metadata.uid": "uid", "object.metadata.namespace": "namespace"}
"""The field paths kube shards by, and the metadata key each reads."""
_SPACE_END: Final = "0x10000000000000000"  # 2**64, the one 17-digit bound
_HEX_DIGITS: Final = frozenset("0123456789abcdef")
_OFFSET_BASIS: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3
_MASK: Final = (1 << 64) - 1


class _Refused(ValueError):
    """A selector kube-apiserver refuses; the message is its reason."""


def fnv1a_64(value: str) -> int:
    """FNV-1a, 64 bits, of ``value``'s UTF-8 bytes (Go's ``hash/fnv.New64a``)."""
    h = _OFFSET_BASIS
    for byte in value.encode():
        h = ((h ^ byte) * _PRIME) & _MASK
    return h


# Every watcher with a selector hashes each object it is offered, and one write is offered to
# every watcher in a row: the recent hashes are remembered (8192 of them, about 2 MB at most,
# and nothing at all until a selector is used).
_hash: Final = functools.lru_cache(maxsize=1 << 13)(fnv1a_64)


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """A parsed ``shardSelector``: ``text`` as the client sent it (echoed back in
    ``metadata.shardInfo.selector``), the metadata key it hashes and its ``[start, end)`` ranges."""

    text: str
    key: str  # "uid" or "namespace"
    ranges: tuple[tuple[int, int], ...]

    def matches(self, obj: Obj) -> bool:
        value = (obj.get("metadata") or {}).get(self.key) or ""
        h = _hash(value if isinstance(value, str) else str(value))
        return any(start <= h < end for start, end in self.ranges)


def _field_path(expr: Expr) -> str:
    if isinstance(expr, Ident):
        return expr.name
    if isinstance(expr, Select):
        return f"{_field_path(expr.operand)}.{expr.field}"
    raise _Refused(
        f"expected field path (e.g. object.metadata.uid), got expression kind {expr.kind}"
    )


def _bound(expr: Expr, name: str) -> str:
    """The hex literal of a ``shardRange`` argument, checked as kube checks it, in its order."""
    if not isinstance(expr, Literal) or expr.kind != LITERAL:
        raise _Refused(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind {expr.kind}"
        )
    if not isinstance(expr.value, str):
        raise _Refused(f"{name} must be a string literal, got {expr.go_type}")
    text = expr.value
    if not text.startswith("0x"):
        raise _Refused(f"{name} must have '0x' prefix, got {quote(text)}")
    digits = text[2:]
    if not digits:
        raise _Refused(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise _Refused(f"{name}: hex value too long ({len(digits)} chars, max 17): {quote(digits)}")
    for ch in digits:
        if ch not in _HEX_DIGITS:
            raise _Refused(f"{name}: invalid hex character {quote(ch)} in {quote(text)}")
    if len(digits) == 17 and text != _SPACE_END:
        raise _Refused(
            f"{name}: 17-digit hex value must be '{_SPACE_END}' (2^64), got {quote(text)}"
        )
    if len(digits) < 16:
        padded = "0x" + digits.rjust(16, "0")
        raise _Refused(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {quote(text)} "
            f"(did you mean {quote(padded)}?)"
        )
    return text


def _shard_range(call: Call) -> tuple[str, str, str]:
    if len(call.args) != 3:
        raise _Refused(f"shardRange() requires exactly 3 arguments, got {len(call.args)}")
    try:
        path = _field_path(call.args[0])
    except _Refused as err:
        raise _Refused(f"shardRange() first argument: {err}") from None
    if path not in FIELDS:
        raise _Refused(f"unsupported field path {quote(path)}; supported: {', '.join(FIELDS)}")
    start, end = _bound(call.args[1], "hexStart"), _bound(call.args[2], "hexEnd")
    # kube compares the canonical strings: the longer is larger, else lexically.
    if not (len(start), start) < (len(end), end):
        raise _Refused(f"shard range start {start} must be less than end {end}")
    return path, start, end


def _walk(tree: Expr) -> list[tuple[str, str, str]]:
    """The shardRange calls of ``tree``, left to right (kube's walkExpr, without recursion: a
    long || chain is a deep tree)."""
    found: list[tuple[str, str, str]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Call) and node.function == "_||_":
            stack.extend(reversed(node.args))
        elif isinstance(node, Call) and node.function == "shardRange":
            found.append(_shard_range(node))
        elif isinstance(node, Call):
            raise _Refused(
                f"unsupported function {quote(node.function)}; only shardRange() and || are allowed"
            )
        else:
            raise _Refused(
                f"unexpected expression kind {node.kind}; expected shardRange() call or || operator"
            )
    return found


def _parse(text: str) -> ShardSelector:
    expr = text.strip()
    if not expr:
        raise _Refused(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    try:
        tree = parse_cel(expr)
    except SyntaxProblem as err:
        raise _Refused(f"CEL parse error: {err}") from None
    found = _walk(tree)
    for path, _, _ in found[1:]:
        if path != found[0][0]:
            raise _Refused(
                f"all shard ranges must use the same field, got {quote(found[0][0])} and "
                f"{quote(path)}"
            )
    ranges = tuple((int(start, 16), int(end, 16)) for _, start, end in found)
    return ShardSelector(text, FIELDS[found[0][0]], ranges)


def parse_shard_selector(text: str) -> ShardSelector:
    """The selector ``shardSelector=text`` names, or kube's 400 BadRequest."""
    try:
        return _parse(text)
    except _Refused as err:
        raise errors.bad_request(f"invalid shard selector: {err}") from None
