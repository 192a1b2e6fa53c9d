"""Label selectors: the string form, the LabelSelector dict form, and matching.

The string grammar is apimachinery's ``labels.Parse``::

    selector    := "" | requirement ("," requirement)*
    requirement := key                      (Exists)
                 | "!" key                  (DoesNotExist)
                 | key ("=" | "==" | "!=") value
                 | key ("in" | "notin") "(" value ("," value)* ")"
                 | key (">" | "<") integer

e.g. ``"a=b,c!=d,e in (x,y),f notin (z),g,!h"``. Whitespace between tokens is ignored.

Semantics (as in apimachinery): ``!=`` and ``notin`` also match objects that lack the key; an
empty selector matches everything; ``metav1.LabelSelectorAsSelector`` turns a nil selector into
one that matches nothing (:data:`NOTHING`) and an empty one (``{}``) into one that matches
everything (:data:`EVERYTHING`).

Errors are :class:`SelectorError` (a ValueError) whose message names the offending part.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "parse",
    "selector_from_dict",
    "selector_from_set",
    "validate_label_key",
    "validate_label_value",
]


class SelectorError(ValueError):
    """A label selector (string or dict form) or one of its keys or values is invalid."""


class Operator(enum.StrEnum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_NAME_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_MAX = 63
_PREFIX_MAX = 253


def validate_label_key(k: str) -> None:
    """A qualified name: ``[prefix/]name``, name ≤ 63 characters of ``[A-Za-z0-9-_.]`` starting
    and ending alphanumeric, prefix a DNS subdomain ≤ 253 characters."""
    prefix, sep, local = k.rpartition("/")
    if sep and not prefix:
        raise SelectorError(f"invalid label key {k!r}: prefix part must be non-empty")
    if prefix and (len(prefix) > _PREFIX_MAX or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        raise SelectorError(
            f"invalid label key {k!r}: prefix part must be a lowercase DNS-1123 subdomain"
        )
    if not local:
        raise SelectorError(f"invalid label key {k!r}: name part must be non-empty")
    if len(local) > _NAME_MAX:
        raise SelectorError(
            f"invalid label key {k!r}: name part must be no more than 63 characters"
        )
    if not _NAME_RE.match(local):
        raise SelectorError(
            f"invalid label key {k!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


def validate_label_value(v: str) -> None:
    """Empty, or ≤ 63 characters of ``[A-Za-z0-9-_.]`` starting and ending alphanumeric."""
    if len(v) > _NAME_MAX:
        raise SelectorError(f"invalid label value {v!r}: must be no more than 63 characters")
    if not _NAME_RE.match(v):
        raise SelectorError(
            f"invalid label value {v!r}: must be empty or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term. Invariant (checked by :meth:`new`): In/NotIn have ≥ 1 value,
    the equality operators exactly one, Gt/Lt one integer, Exists/DoesNotExist none."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    @classmethod
    def new(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        vals = frozenset(values)
        validate_label_key(key)
        if operator in (Operator.IN, Operator.NOT_IN):
            if not vals:
                raise SelectorError(
                    f"key {key!r}: for 'in', 'notin' operators, values set can't be empty"
                )
        elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
            if len(vals) != 1:
                raise SelectorError(f"key {key!r}: exact-match compatibility requires one value")
        elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            if vals:
                raise SelectorError(
                    f"key {key!r}: values set must be empty for exists and does not exist"
                )
        else:
            if len(vals) != 1:
                raise SelectorError(f"key {key!r}: for 'Gt', 'Lt' operators, exactly one value")
            (only,) = vals
            try:
                int(only)
            except ValueError:
                raise SelectorError(
                    f"key {key!r}: for 'Gt', 'Lt' operators, the value must be an integer"
                ) from None
        if operator not in (Operator.GREATER_THAN, Operator.LESS_THAN):
            for v in vals:
                validate_label_value(v)
        return cls(key, operator, vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
            return value is not None and value in self.values
        if op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        (want,) = (int(v) for v in self.values)
        return have > want if op is Operator.GREATER_THAN else have < want

    def to_string(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {op.value} ({','.join(sorted(self.values))})"
        (value,) = self.values
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{value}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements (sorted by key). ``nothing`` marks the selector that
    matches no object (what a nil LabelSelector converts to)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def to_string(self) -> str:
        """The string form (``""`` for everything and for nothing, as apimachinery prints)."""
        return ",".join(r.to_string() for r in self.requirements)

    def __str__(self) -> str:
        return self.to_string()


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _selector(reqs: Iterable[Requirement]) -> Selector:
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every key must equal its value (empty set → everything)."""
    return _selector(Requirement.new(k, Operator.EQUALS, (v,)) for k, v in labels.items())


_DICT_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_dict(d: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: None → :data:`NOTHING`; ``{}`` → :data:`EVERYTHING`."""
    if d is None:
        return NOTHING
    if not isinstance(d, Mapping):
        raise SelectorError(f"a label selector must be an object, not {type(d).__name__}")
    match_labels = d.get("matchLabels") or {}
    match_expressions = d.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be an object of key: value")
    if not isinstance(match_expressions, list):
        raise SelectorError("matchExpressions must be a list")
    reqs: list[Requirement] = []
    for k, v in match_labels.items():
        if not isinstance(v, str):
            raise SelectorError(f"matchLabels[{k!r}]: the value must be a string")
        reqs.append(Requirement.new(str(k), Operator.EQUALS, (v,)))
    for i, expr in enumerate(match_expressions):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}] must be an object")
        raw_op = expr.get("operator")
        op = _DICT_OPERATORS.get(raw_op) if isinstance(raw_op, str) else None
        if op is None:
            raise SelectorError(
                f"matchExpressions[{i}]: {raw_op!r} is not a valid label selector operator"
                " (In, NotIn, Exists, DoesNotExist)"
            )
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"matchExpressions[{i}]: values must be a list of strings")
        reqs.append(Requirement.new(str(expr.get("key", "")), op, values))
    return _selector(reqs)


# --- the string form ---------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s*(?:(!=|==|=|!|\(|\)|,|>|<)|([^\s!=(),<>]+))")
_EOS = ""


class _Lexer:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []  # (kind, text); kind is "sym", "id" or "eos"
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if m is None:  # only trailing whitespace is left
                break
            pos = m.end()
            if m.group(1):
                self.tokens.append(("sym", m.group(1)))
            elif m.group(2):
                self.tokens.append(("id", m.group(2)))
        self.tokens.append(("eos", _EOS))
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i]

    def next(self) -> tuple[str, str]:
        tok = self.tokens[self.i]
        if tok[0] != "eos":
            self.i += 1
        return tok


def _show(tok: tuple[str, str]) -> str:
    return "end of string" if tok[0] == "eos" else repr(tok[1])


_STRING_OPERATORS = {
    "=": Operator.EQUALS,
    "==": Operator.DOUBLE_EQUALS,
    "!=": Operator.NOT_EQUALS,
    "in": Operator.IN,
    "notin": Operator.NOT_IN,
    ">": Operator.GREATER_THAN,
    "<": Operator.LESS_THAN,
}


def parse(text: str) -> Selector:
    """Parse the string form; ``""`` (or only whitespace) is the selector for everything."""
    lex = _Lexer(text)
    reqs: list[Requirement] = []
    if lex.peek()[0] == "eos":
        return EVERYTHING
    while True:
        reqs.append(_parse_requirement(lex, text))
        tok = lex.next()
        if tok[0] == "eos":
            return _selector(reqs)
        if tok != ("sym", ","):
            raise SelectorError(
                f"unable to parse requirement in {text!r}: found {_show(tok)}, "
                "expected: ',' or end of string"
            )
        follow = lex.peek()
        if follow[0] != "id" and follow != ("sym", "!"):
            raise SelectorError(
                f"unable to parse requirement in {text!r}: found {_show(follow)}, "
                "expected: identifier after ','"
            )


def _parse_requirement(lex: _Lexer, text: str) -> Requirement:
    tok = lex.next()
    negated = tok == ("sym", "!")
    if negated:
        tok = lex.next()
    if tok[0] != "id":
        raise SelectorError(
            f"unable to parse requirement in {text!r}: found {_show(tok)}, expected: identifier"
        )
    key = tok[1]
    follow = lex.peek()
    if follow[0] == "eos" or follow == ("sym", ","):
        return Requirement.new(key, Operator.DOES_NOT_EXIST if negated else Operator.EXISTS)
    if negated:
        raise SelectorError(
            f"unable to parse requirement in {text!r}: found {_show(follow)}, "
            f"expected: ',' or end of string after '!{key}'"
        )
    op_tok = lex.next()
    op = _STRING_OPERATORS.get(op_tok[1]) if op_tok[0] != "eos" else None
    if op is None:
        raise SelectorError(
            f"unable to parse requirement in {text!r}: found {_show(op_tok)}, "
            "expected one of: '=', '!=', '==', 'in', 'notin', '>', '<'"
        )
    if op in (Operator.IN, Operator.NOT_IN):
        return Requirement.new(key, op, _parse_values(lex, text))
    value_tok = lex.peek()
    if value_tok[0] == "eos" or value_tok == ("sym", ","):
        return Requirement.new(key, op, ("",))
    lex.next()
    if value_tok[0] != "id":
        raise SelectorError(
            f"unable to parse requirement in {text!r}: found {_show(value_tok)}, "
            f"expected: a value for {key!r}"
        )
    return Requirement.new(key, op, (value_tok[1],))


def _parse_values(lex: _Lexer, text: str) -> list[str]:
    tok = lex.next()
    if tok != ("sym", "("):
        raise SelectorError(
            f"unable to parse requirement in {text!r}: found {_show(tok)}, expected: '('"
        )
    values: list[str] = []
    expect_value = True
    while True:
        tok = lex.next()
        if tok == ("sym", ")"):
            if values and expect_value:  # "(a,)": a trailing empty value, as apimachinery allows
                values.append("")
            return values
        if expect_value and tok[0] == "id":
            values.append(tok[1])
            expect_value = False
        elif tok == ("sym", ","):
            if expect_value:
                values.append("")
            expect_value = True
        else:
            raise SelectorError(
                f"unable to parse requirement in {text!r}: found {_show(tok)}, "
                "expected: ',', ')' or a value"
            )
