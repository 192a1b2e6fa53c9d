"""The part of CEL's syntax a shard selector is written in, parsed into a small expression tree.

kube-apiserver parses ``shardSelector`` with cel-go's parser (no macros) and then walks the tree
(:mod:`pycm.sim.shardselector`): the parse only has to tell a well-formed CEL expression from a
malformed one and give the walk the nodes cel-go would. The grammar here is CEL's expression
grammar without macros and message construction: ``?:``, ``||``, ``&&``, relations (``<``,
``<=``, ``>=``, ``>``, ``==``, ``!=``, ``in``), ``+ -``, ``* / %``, unary ``!`` and ``-``,
member selection, calls, indexing, list and map literals, and literals (strings with CEL's
escapes and ``r``/``b`` prefixes, ints, uints, doubles, ``true``, ``false``, ``null``).

Operators become calls named as CEL names them (``_||_``, ``_&&_``, ``_==_``, ``!_``,
``_[_]``, ``@in``…), which is how the walk reports them. Syntax errors carry ANTLR's usual
wording (``token recognition error at: '#'``, ``mismatched input … expecting …``, ``extraneous
input … expecting <EOF>``, ``missing ')' at …``); the emulator does not reproduce every
expectation set ANTLR would list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "CALL",
    "IDENT",
    "LIST",
    "LITERAL",
    "MAP",
    "SELECT",
    "Call",
    "Expr",
    "Ident",
    "ListExpr",
    "Literal",
    "MapExpr",
    "Select",
    "SyntaxProblem",
    "parse",
]

# cel-go's ast.ExprKind values, which kube prints with %v (an int: the type has no String).
CALL: Final = 1
IDENT: Final = 3
LIST: Final = 4
LITERAL: Final = 5
MAP: Final = 6
SELECT: Final = 7

MAX_DEPTH: Final = 250
"""cel-go's default parser recursion limit (``expression recursion limit exceeded: 250``)."""


class SyntaxProblem(ValueError):
    """The expression is not CEL; the message is what cel-go's first error says."""


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    args: tuple[Expr, ...]  # without the receiver of a member call (cel-go's Args())
    kind: int = CALL


@dataclass(frozen=True, slots=True)
class Ident:
    name: str
    kind: int = IDENT


@dataclass(frozen=True, slots=True)
class Select:
    operand: Expr
    field: str
    kind: int = SELECT


@dataclass(frozen=True, slots=True)
class Literal:
    value: object
    go_type: str  # what Go's %T prints for cel-go's native value ("string", "int64"…)
    kind: int = LITERAL


@dataclass(frozen=True, slots=True)
class ListExpr:
    items: tuple[Expr, ...]
    kind: int = LIST


@dataclass(frozen=True, slots=True)
class MapExpr:
    entries: tuple[tuple[Expr, Expr], ...]
    kind: int = MAP


Expr = Call | Ident | Select | Literal | ListExpr | MapExpr

_TOKEN: Final = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>(?P<prefix>[rRbB]{0,2})(?P<quote>'|")(?P<body>(?:\\.|(?!(?P=quote)).)*?)(?P=quote))
    |(?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\|\||&&|==|!=|<=|>=|[<>+\-*/%!?:.,()\[\]{}])""",
    re.VERBOSE | re.DOTALL,
)
_EOF: Final = ("eof", "<EOF>")
_OPERAND_START: Final = (
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
    "STRING, BYTES, IDENTIFIER}"
)
# Binary operators by precedence (higher binds tighter) and the name CEL gives each.
_BINARY: Final = {
    "||": (1, "_||_"),
    "&&": (2, "_&&_"),
    "==": (3, "_==_"),
    "!=": (3, "_!=_"),
    "<": (3, "_<_"),
    "<=": (3, "_<=_"),
    ">": (3, "_>_"),
    ">=": (3, "_>=_"),
    "in": (3, "@in"),
    "+": (4, "_+_"),
    "-": (4, "_-_"),
    "*": (5, "_*_"),
    "/": (5, "_/_"),
    "%": (5, "_%_"),
}
_SIMPLE_ESCAPES: Final = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_ESCAPE: Final = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-3][0-7]{2}|.)")


def _unescape(body: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        value = -1
        if code[0] in "xuU" and len(code) > 1:
            value = int(code[1:], 16)
        elif code[0] in "0123" and len(code) == 3:
            value = int(code, 8)
        if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
            return chr(value)
        raise SyntaxProblem(f"Syntax error: token recognition error at: '\\{code}'")

    return _ESCAPE.sub(one, body) if "\\" in body else body


def _literal(kind: str, match: re.Match[str]) -> Literal:
    if kind == "string":
        prefix = match.group("prefix").lower()
        body = match.group("body")
        text = body if "r" in prefix else _unescape(body)
        if "b" in prefix:
            return Literal(text.encode(), "[]uint8")
        return Literal(text, "string")
    text = match.group("number")
    if text[-1] in "uU":
        return Literal(int(text[:-1], 0), "uint64")
    if text[:2] in ("0x", "0X"):
        return Literal(int(text, 16), "int64")
    if any(c in text for c in ".eE"):
        return Literal(float(text), "float64")
    return Literal(int(text), "int64")


def _tokens(expr: str) -> list[tuple[str, str, object]]:
    """(kind, text, literal or None) for each token, then EOF."""
    out: list[tuple[str, str, object]] = []
    at = 0
    while at < len(expr):
        match = _TOKEN.match(expr, at)
        if match is None:
            raise SyntaxProblem(f"Syntax error: token recognition error at: '{expr[at]}'")
        at = match.end()
        kind = match.lastgroup or ""
        if kind in ("prefix", "quote", "body"):
            kind = "string"
        if kind == "space":
            continue
        text = match.group(0)
        if kind in ("string", "number"):
            out.append(("literal", text, _literal(kind, match)))
        elif kind == "ident" and text in ("true", "false"):
            out.append(("literal", text, Literal(text == "true", "bool")))
        elif kind == "ident" and text == "null":
            out.append(("literal", text, Literal(None, "structpb.NullValue")))
        elif kind == "ident" and text == "in":
            out.append(("op", text, None))
        else:
            out.append((kind, text, None))
    out.append((*_EOF, None))
    return out


class _Parser:
    def __init__(self, expr: str) -> None:
        self.tokens = _tokens(expr)
        self.at = 0
        self.depth = 0

    def peek(self) -> tuple[str, str, object]:
        return self.tokens[self.at]

    def take(self) -> tuple[str, str, object]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expect(self, text: str) -> None:
        kind, got, _ = self.peek()
        if got != text or kind not in ("op",):
            raise SyntaxProblem(f"Syntax error: missing '{text}' at '{got}'")
        self.at += 1

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SyntaxProblem(f"expression recursion limit exceeded: {MAX_DEPTH}")

    def expression(self) -> Expr:
        self.nested()
        cond = self.binary(1)
        if self.peek()[1] == "?" and self.peek()[0] == "op":
            self.at += 1
            yes = self.binary(1)
            self.expect(":")
            no = self.expression()
            cond = Call("_?_:_", (cond, yes, no))
        self.depth -= 1
        return cond

    def binary(self, floor: int) -> Expr:
        # Precedence climbing; a chain of one operator is a loop (left-deep), not recursion.
        left = self.unary()
        while True:
            kind, text, _ = self.peek()
            if kind != "op" or text not in _BINARY or _BINARY[text][0] < floor:
                return left
            precedence, name = _BINARY[text]
            self.at += 1
            right = self.binary(precedence + 1)
            left = Call(name, (left, right))

    def unary(self) -> Expr:
        kind, text, _ = self.peek()
        if kind == "op" and text in ("!", "-"):
            self.at += 1
            nxt = self.peek()
            if text == "-" and nxt[0] == "literal" and isinstance(nxt[2], Literal):
                value = nxt[2].value
                if isinstance(value, (int, float)) and nxt[2].go_type != "uint64":
                    self.at += 1  # CEL's grammar reads a signed number as one literal
                    return self.postfix(Literal(-value, nxt[2].go_type))
            self.nested()
            operand = self.unary()
            self.depth -= 1
            return Call("!_" if text == "!" else "-_", (operand,))
        return self.postfix(self.primary())

    def postfix(self, expr: Expr) -> Expr:
        while True:
            kind, text, _ = self.peek()
            if kind != "op" or text not in (".", "["):
                return expr
            self.at += 1
            if text == "[":
                index = self.expression()
                self.expect("]")
                expr = Call("_[_]", (expr, index))
                continue
            name_kind, name, _ = self.take()
            if name_kind != "ident":
                raise SyntaxProblem(f"Syntax error: mismatched input '{name}' expecting IDENTIFIER")
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                expr = Call(name, self.arguments(")"))
            else:
                expr = Select(expr, name)

    def arguments(self, closer: str) -> tuple[Expr, ...]:
        self.at += 1  # the opening bracket
        args: list[Expr] = []
        if self.peek()[1] == closer and self.peek()[0] == "op":
            self.at += 1
            return ()
        while True:
            args.append(self.expression())
            if self.peek()[1] == "," and self.peek()[0] == "op":
                self.at += 1
                continue
            self.expect(closer)
            return tuple(args)

    def primary(self) -> Expr:
        kind, text, value = self.take()
        if kind == "literal" and isinstance(value, Literal):
            return value
        if kind == "ident":
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                return Call(text, self.arguments(")"))
            return Ident(text)
        if kind == "op" and text == ".":
            return self.primary()  # a leading dot names the root scope: .a is still a
        if kind == "op" and text == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        if kind == "op" and text == "[":
            self.at -= 1
            return ListExpr(self.arguments("]"))
        if kind == "op" and text == "{":
            return self.map_literal()
        raise SyntaxProblem(f"Syntax error: mismatched input '{text}' expecting {_OPERAND_START}")

    def map_literal(self) -> Expr:
        entries: list[tuple[Expr, Expr]] = []
        while not (self.peek()[1] == "}" and self.peek()[0] == "op"):
            key = self.expression()
            self.expect(":")
            entries.append((key, self.expression()))
            if self.peek()[1] == "," and self.peek()[0] == "op":
                self.at += 1
                continue
            break
        self.expect("}")
        return MapExpr(tuple(entries))


def parse(expr: str) -> Expr:
    """The expression tree of ``expr``, or :class:`SyntaxProblem`."""
    parser = _Parser(expr)
    try:
        tree = parser.expression()
    except RecursionError:  # deeper than Python's stack, before MAX_DEPTH counted it
        raise SyntaxProblem(f"expression recursion limit exceeded: {MAX_DEPTH}") from None
    kind, text, _ = parser.peek()
    if kind != "eof":
        raise SyntaxProblem(f"Syntax error: extraneous input '{text}' expecting <EOF>")
    return tree
