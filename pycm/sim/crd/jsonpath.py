"""The JSONPath of ``additionalPrinterColumns[].jsonPath``, as kube-apiserver evaluates it.

kube parses a printer column's path with client-go's ``util/jsonpath`` (wrapped in ``{}``) and
prints the first result. Supported here is what CRDs write: child names (``.spec.replicas``),
quoted names (``['app.kubernetes.io/name']``, ``.metadata.labels.app``), indexes and slices
(``[0]``, ``[-1]``, ``[0:2]``), wildcards (``[*]``, ``.*``), recursive descent (``..name``)
and filters comparing a relative path with a literal or testing that it exists
(``.status.conditions[?(@.type=="Ready")].status``, ``[?(@.ready)]``; ``==``, ``!=``, ``<``,
``<=``, ``>``, ``>=``). :func:`parse_json_path` raises :class:`JSONPathError` for anything
else; evaluation never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONPath", "JSONPathError", "parse_json_path"]

_NAME = re.compile(r"[A-Za-z0-9_$-]+")
_INT = re.compile(r"-?\d+")
_OPS = ("==", "!=", "<=", ">=", "<", ">")


class JSONPathError(ValueError):
    """A path kube's jsonpath parser would refuse."""


@dataclass(frozen=True, slots=True)
class _Step:
    # "child" (arg: name), "index" (arg: (start, stop) or int), "all", "descend" (arg: name or
    # None for every value), "filter" (arg: (path steps, op, literal) ; op "" tests existence)
    kind: str
    arg: Any = None


class JSONPath:
    """A parsed path; :meth:`find` yields every value it reaches in a document."""

    def __init__(self, text: str, steps: list[_Step]) -> None:
        self.text = text
        self.steps = steps

    def find(self, doc: Any) -> list[Any]:
        values = [doc]
        for step in self.steps:
            values = [out for v in values for out in _apply(step, v)]
        return values

    def first(self, doc: Any) -> tuple[bool, Any]:
        """(found?, the first value)."""
        found = self.find(doc)
        return (True, found[0]) if found else (False, None)


def _apply(step: _Step, value: Any) -> Iterator[Any]:
    if step.kind == "child":
        if isinstance(value, dict) and step.arg in value:
            yield value[step.arg]
    elif step.kind == "all":
        if isinstance(value, dict):
            yield from value.values()
        elif isinstance(value, list):
            yield from value
    elif step.kind == "index":
        if isinstance(value, list):
            if isinstance(step.arg, int):
                i = step.arg + len(value) if step.arg < 0 else step.arg
                if 0 <= i < len(value):
                    yield value[i]
            else:
                start, stop = step.arg
                yield from value[start:stop]
    elif step.kind == "descend":
        yield from _descend(value, step.arg)
    elif step.kind == "filter":
        items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        path, op, literal = step.arg
        for item in items:
            if _test(item, path, op, literal):
                yield item


def _descend(value: Any, name: str | None) -> Iterator[Any]:
    stack = [value]
    while stack:
        v = stack.pop(0)
        if isinstance(v, dict):
            if name is None:
                yield from v.values()
            elif name in v:
                yield v[name]
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _test(item: Any, path: JSONPath, op: str, literal: Any) -> bool:
    found = path.find(item)
    if not op:
        return bool(found)
    for v in found:
        if isinstance(literal, str) != isinstance(v, str):
            continue
        try:
            ok = {
                "==": v == literal,
                "!=": v != literal,
                "<": v < literal,
                "<=": v <= literal,
                ">": v > literal,
                ">=": v >= literal,
            }[op]
        except TypeError:
            ok = False
        if ok:
            return True
    return False


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, why: str) -> JSONPathError:
        return JSONPathError(f"unrecognized character in action: {why}")

    def steps(self, stop: str = "") -> list[_Step]:
        out: list[_Step] = []
        t = self.text
        while self.i < len(t) and t[self.i] not in stop:
            c = t[self.i]
            if t.startswith("..", self.i):
                self.i += 2
                if self.i < len(t) and t[self.i] == "*":
                    self.i += 1
                    out.append(_Step("descend", None))
                else:
                    out.append(_Step("descend", self.name()))
            elif c == ".":
                self.i += 1
                if self.i < len(t) and t[self.i] == "*":
                    self.i += 1
                    out.append(_Step("all"))
                elif self.i < len(t) and t[self.i] not in ".[":
                    out.append(_Step("child", self.name()))
            elif c == "[":
                out.append(self.bracket())
            else:
                raise self.fail(repr(c))
        return out

    def name(self) -> str:
        m = _NAME.match(self.text, self.i)
        if m is None:
            raise self.fail(repr(self.text[self.i : self.i + 1]))
        self.i = m.end()
        return m.group()

    def bracket(self) -> _Step:
        t = self.text
        end = t.find("]", self.i)
        if end < 0:
            raise JSONPathError("unclosed array expect ]")
        if t.startswith("[?(", self.i):
            return self.filter()
        body = t[self.i + 1 : end]
        self.i = end + 1
        if body == "*":
            return _Step("all")
        if len(body) >= 2 and body[0] == body[-1] and body[0] in "'\"":
            return _Step("child", body[1:-1])
        if _INT.fullmatch(body):
            return _Step("index", int(body))
        if ":" in body:
            parts = body.split(":")
            if len(parts) == 2 and all(p == "" or _INT.fullmatch(p) for p in parts):
                start, stop = (int(p) if p else None for p in parts)
                return _Step("index", (start, stop))
        raise JSONPathError(f"invalid array index {body}")

    def filter(self) -> _Step:
        t = self.text
        self.i += 3
        if not t.startswith("@", self.i):
            raise self.fail(repr(t[self.i : self.i + 1]))
        self.i += 1
        path = JSONPath("", self.steps(stop="=!<>)"))
        op = ""
        for candidate in _OPS:
            if t.startswith(candidate, self.i):
                op = candidate
                self.i += len(candidate)
                break
        literal: Any = None
        if op:
            literal = self.literal()
        if not t.startswith(")]", self.i):
            raise JSONPathError("unclosed filter, expect )]")
        self.i += 2
        return _Step("filter", (path, op, literal))

    def literal(self) -> Any:
        t = self.text
        if self.i < len(t) and t[self.i] in "'\"":
            quote = t[self.i]
            end = t.find(quote, self.i + 1)
            if end < 0:
                raise JSONPathError("unclosed quote in filter")
            value = t[self.i + 1 : end]
            self.i = end + 1
            return value
        m = re.compile(r"-?\d+(\.\d+)?|true|false").match(t, self.i)
        if m is None:
            raise self.fail(repr(t[self.i : self.i + 1]))
        self.i = m.end()
        text = m.group()
        if text in ("true", "false"):
            return text == "true"
        return float(text) if "." in text else int(text)


def parse_json_path(text: str) -> JSONPath:
    """Parse a printer column's path (with or without kube's ``{}``)."""
    body = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    parser = _Parser(body)
    steps = parser.steps()
    return JSONPath(text, steps)
