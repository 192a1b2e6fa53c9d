"""Label and field selectors, as list and watch take them.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a``,
``!a``; a comma means AND. Field selectors: ``path=value``, ``path==value``, ``path!=value``
over a kind's supported field labels. A selector that does not parse is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pycm.sim.errors import bad_request

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "match_label_selector_object",
    "parse_field_selector",
    "parse_label_selector",
]

_KEY = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
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


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise bad_request(f"unable to parse requirement: unbalanced ')' in {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise bad_request(f"unable to parse requirement: unbalanced '(' in {text!r}")
    parts.append("".join(current))
    return parts


def _check_key(key: str, text: str) -> str:
    if not key or len(key) > 316 or not _KEY.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in {text!r}")
    return key


def _check_value(value: str, text: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise bad_request(f"unable to parse requirement: invalid label value {value!r} in {text!r}")
    return value


_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")


def parse_label_selector(text: str | None) -> LabelSelector:
    if text is None or not text.strip():
        return LabelSelector()
    requirements: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise bad_request(f"unable to parse requirement: empty requirement in {text!r}")
        m = _SET_RE.match(part)
        if m:
            key = _check_key(m.group(1), text)
            values = frozenset(
                _check_value(v.strip(), text) for v in m.group(3).split(",") if v.strip() != ""
            )
            requirements.append(Requirement(key, "in" if m.group(2) == "in" else "notin", values))
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, _, value = part.partition(op)
                norm = "!=" if op == "!=" else "="
                requirements.append(
                    Requirement(
                        _check_key(key.strip(), text),
                        norm,
                        frozenset({_check_value(value.strip(), text)}),
                    )
                )
                break
        else:
            if part.startswith("!"):
                requirements.append(Requirement(_check_key(part[1:].strip(), text), "!exists"))
            else:
                requirements.append(Requirement(_check_key(part, text), "exists"))
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


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string value of a dotted field path, "" when absent (kube's field-set semantics)."""
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


def parse_field_selector(text: str | None, supported: tuple[str, ...], kind: str) -> FieldSelector:
    if text is None or not text.strip():
        return FieldSelector()
    allowed = {"metadata.name", "metadata.namespace", *supported}
    terms: list[tuple[str, bool, str]] = []
    for raw in text.split(","):
        part = raw.strip()
        for op in ("!=", "==", "="):
            if op in part:
                path, _, value = part.partition(op)
                path = path.strip()
                if path not in allowed:
                    raise bad_request(
                        f'"{path}" is not a known field selector: only '
                        f'"{", ".join(sorted(allowed))}" are supported for {kind}'
                    )
                terms.append((path, op != "!=", value.strip()))
                break
        else:
            raise bad_request(f"invalid selector: {text!r}; can't understand {part!r}")
    return FieldSelector(tuple(terms))
