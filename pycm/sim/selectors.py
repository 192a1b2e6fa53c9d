"""Label and field selectors, as list and watch take them, parsed as apimachinery parses them.

Label selectors (``labels.Parse``): ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x,y)``, ``a``, ``!a``, ``a>1``, ``a<1``; a comma means AND. ``()`` is the set of the
empty value (``a notin ()`` is valid, kube's own example). Keys are qualified names, values
label values, both checked with kube's messages. The parser is kube's lexer and recursive
descent, so a selector kube refuses is refused here with kube's words
(``unable to parse requirement: …``, ``found '…', expected: …``) as a 400, and one it accepts
selects the same objects.

Field selectors (``fields.ParseSelector``): ``path=value``, ``path==value``, ``path!=value``
(no spaces trimmed; ``\\,``, ``\\=`` and ``\\\\`` escape), over a kind's supported field labels.

Parsed label selectors are immutable and cached by their text: informers send the same few.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pycm.sim.errors import bad_request
from pycm.sim.gostrconv import parse_int64, quote

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "match_label_selector_object",
    "parse_field_selector",
    "parse_label_selector",
]

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_QUALIFIED_NAME_FMT}')"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN_FMT}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"
)


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName``: ``[prefix/]name``, a DNS-1123 subdomain prefix."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append("prefix part " + _DNS1123_SUBDOMAIN_MSG)
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    """apimachinery's ``IsValidLabelValue``."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists", "gt", "lt"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("gt", "lt"):
            # kube: both sides must be int64s, else no match.
            if not present:
                return False
            try:
                have, want = parse_int64(labels[self.key]), parse_int64(next(iter(self.values)))
            except ValueError:
                return False
            return have > want if self.op == "gt" else have < want
        # "!=" and "notin" match objects without the label too (kube's semantics).
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


# ---------------------------------------------------------------- labels.Parse
#
# Tokens: (kind, literal). Kinds are the literal itself for operators and punctuation, "id" for
# identifiers, "end" at the end of the string, "error" for a run of symbols that is no operator.
_END, _ID, _ERROR = "end", "id", "error"
_SYMBOLS = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_OPERATOR_TOKENS = frozenset({")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("})
_KEYWORDS = frozenset({"in", "notin"})
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPS = {"in": "in", "notin": "notin", "=": "=", "==": "=", "!=": "!=", ">": "gt", "<": "lt"}


def _lex(text: str) -> list[tuple[str, str]]:
    """kube's Lexer: identifiers run to a symbol or whitespace; a run of symbols is the longest
    operator it starts with."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append((_END, ""))
            return tokens
        if text[i] in _SYMBOLS:
            j, last = i, ""
            while j < n and text[j] in _SYMBOLS:
                if text[i : j + 1] in _OPERATOR_TOKENS:
                    last = text[i : j + 1]
                elif last:
                    break
                j += 1
            if not last:
                tokens.append((_ERROR, f"error expected: keyword found '{text[i:j]}'"))
                i = j
            else:
                tokens.append((last, last))
                i += len(last)
            continue
        j = i
        while j < n and text[j] not in _SYMBOLS and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        tokens.append((word if word in _KEYWORDS else _ID, word))
        i = j


class _Parser:
    """kube's label selector Parser (recursive descent over the lexed tokens)."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def _peek(self) -> tuple[str, str]:
        kind, lit = self.tokens[self.pos]
        return (_ID if kind in _KEYWORDS else kind), lit  # in a value, "in" is a word

    def _next(self, values: bool = True) -> tuple[str, str]:
        kind, lit = self.tokens[self.pos]
        self.pos += 1
        return (_ID if values and kind in _KEYWORDS else kind), lit

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, lit = self._peek()
            if kind == _END:
                return requirements
            if kind not in (_ID, "!"):
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except ValueError as err:
                raise ValueError(f"unable to parse requirement: {err}") from None
            kind, lit = self._next()
            if kind == _END:
                return requirements
            if kind != ",":
                raise ValueError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self._peek()
            if kind not in (_ID, "!"):
                raise ValueError(f"found '{lit}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        kind, key = self._next()
        negated = kind == "!"
        if negated:
            kind, key = self._next()
        if kind != _ID:
            raise ValueError(f"found '{key}', expected: identifier")
        errs = qualified_name_errors(key)
        if errs:
            # kube's path is nil here, printed "<nil>".
            raise ValueError(f"<nil>: Invalid value: {quote(key)}: {'; '.join(errs)}")
        if negated or self._peek()[0] in (_END, ","):
            return Requirement(key, "!exists" if negated else "exists")
        kind, lit = self._next(values=False)
        op = _OPS.get(kind)
        if op is None:
            raise ValueError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        values = self._values() if op in ("in", "notin") else self._exact_value()
        # kube's NewRequirement checks values.List() (sorted: so are the indexes) and reports
        # every error at once.
        ordered = sorted(values)
        problems: list[str] = []
        if op in ("gt", "lt"):
            for i, value in enumerate(ordered):
                try:
                    parse_int64(value)
                except ValueError:
                    problems.append(
                        f"values[{i}]: Invalid value: {quote(value)}: for 'Gt', 'Lt' operators, "
                        "the value must be an integer"
                    )
        for i, value in enumerate(ordered):
            errs = label_value_errors(value)
            if errs:
                where = f"values[{i}][{key}]"
                problems.append(f"{where}: Invalid value: {quote(value)}: {'; '.join(errs)}")
        if problems:
            unique = list(dict.fromkeys(problems))
            raise ValueError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
        return Requirement(key, op, frozenset(values))

    def _values(self) -> set[str]:
        kind, lit = self._next()
        if kind != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        kind, lit = self._peek()
        if kind == ")":  # "()" is the set of the empty value
            self._next()
            return {""}
        if kind not in (_ID, ","):
            raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self._identifiers()
        if self._next()[0] != ")":
            raise ValueError(f"found '{lit}', expected: ')'")
        return values

    def _identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            kind, lit = self._next()
            if kind == _ID:
                values.add(lit)
                after, after_lit = self._peek()
                if after == ",":
                    continue
                if after == ")":
                    return values
                raise ValueError(f"found '{after_lit}', expected: ',' or ')'")
            if kind == ",":  # "(,", ",,", ",)" each stand for the empty value
                if not values:
                    values.add("")
                after = self._peek()[0]
                if after == ")":
                    values.add("")
                    return values
                if after == ",":
                    values.add("")
                continue
            raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_END, ","):
            return {""}
        kind, lit = self._next()
        if kind == _ID:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str | None) -> LabelSelector:
    """``labels.Parse(text)``; a 400 with kube's message when it does not parse."""
    if not text:
        return LabelSelector()
    try:
        return _parse_label_selector(text)
    except ValueError as err:
        raise bad_request(str(err)) from None


@functools.lru_cache(maxsize=256)
def _parse_label_selector(text: str) -> LabelSelector:
    requirements = _Parser(text).parse()
    requirements.sort(key=lambda r: r.key)  # kube sorts by key (a deterministic order)
    return LabelSelector(tuple(requirements))


def match_label_selector_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` (matchLabels / matchExpressions) as a :class:`LabelSelector`."""
    if not selector:
        return LabelSelector()
    requirements = [
        Requirement(str(k), "=", frozenset({str(v)}))
        for k, v in (selector.get("matchLabels") or {}).items()
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise bad_request(f"invalid label selector operator {expr.get('operator')!r}")
        values = frozenset(str(v) for v in expr.get("values") or [])
        requirements.append(Requirement(str(expr.get("key", "")), op, values))
    return LabelSelector(tuple(requirements))


# ---------------------------------------------------------------- fields.ParseSelector


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string value of a dotted field path, "" when absent (kube's field-set semantics).
    Two of kube's selectable fields are not paths: an Event's ``source`` (its component) and a
    Job's ``status.successful`` (``status.succeeded``, 0 when unset)."""
    if path == "status.successful":
        status = obj.get("status")
        return str((status.get("succeeded") if isinstance(status, Mapping) else None) or 0)
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    if isinstance(current, Mapping) and path == "source":
        return str(current.get("component", ""))
    return str(current)


@dataclass(frozen=True, slots=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (path, equal?, value)

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in self.terms)

    def value_of(self, path: str) -> str | None:
        """The value an equality term pins ``path`` to, if any (for namespace short-cuts)."""
        for p, equal, value in self.terms:
            if p == path and equal:
                return value
        return None


_FIELD_OPERATORS = ("!=", "==", "=")  # tried in this order at each position, as kube's


def _split_terms(text: str) -> list[str]:
    """Split on commas that no backslash escapes (kube's splitTerms)."""
    if "\\" not in text:
        return text.split(",")
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """(lhs, operator, rhs) at the first position where an operator starts (kube's splitTerm)."""
    for i in range(len(term)):
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    """kube's fields.UnescapeValue: a backslash before a backslash, ``,`` or ``=`` escapes it;
    a bare ``,`` or ``=`` and any other escape are errors."""
    if not any(c in value for c in "\\,="):
        return value
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the rune with %v: its code point.
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str | None, supported: tuple[str, ...], kind: str) -> FieldSelector:
    """``fields.ParseSelector(text)`` then kube's field-label conversion for ``kind``: the
    labels it supports are ``metadata.name``, ``metadata.namespace`` and ``supported``. 400s
    with kube's messages (a kind with its own labels names the one it does not support; one
    without lists the two it has, as DefaultMetaV1FieldSelectorConversion does)."""
    if not text:
        return FieldSelector()
    terms: list[tuple[str, bool, str]] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = split
        terms.append((path, op != "!=", _unescape(value)))
    for path, _, _ in terms:
        if path in ("metadata.name", "metadata.namespace") or path in supported:
            continue
        if supported:
            raise bad_request(f"field label not supported: {path}")
        raise bad_request(
            f'{quote(path)} is not a known field selector: only "metadata.name", '
            '"metadata.namespace"'
        )
    return FieldSelector(tuple(terms))
