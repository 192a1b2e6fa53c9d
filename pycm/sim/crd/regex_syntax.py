"""The syntax of a CRD ``pattern:``: Go's RE2 regular expressions, parsed to a tree.

Literals, ``.``, classes with ranges and negation, ``\\d \\w \\s`` and their negations, POSIX
``[[:alpha:]]`` classes, ``\\pL`` / ``\\p{Lu}`` Unicode categories, groups (capturing, named,
non-capturing, with flags), alternation, ``* + ? {n} {n,} {n,m}`` greedy or lazy, the anchors
``^ $ \\A \\z`` and word boundaries ``\\b \\B``, flags ``i m s U``. What Go's parser
refuses is refused with its ``error parsing regexp: …`` message (backreferences,
look-arounds, repeat counts above 1000, unbalanced brackets, unknown escapes).

A tree node is a tuple: ``("set", CharSet)`` one character, ``("cat", [nodes])``,
``("alt", [nodes])``, ``("rep", node, min, max or None)``, ``("assert", kind)`` with kind one of
``bot eot bol eol wordb nwordb``, ``("empty",)``. :mod:`pycm.sim.crd.regex` compiles it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_REPEAT", "CharSet", "Node", "RegexError", "is_word", "parse_pattern"]

MAX_REPEAT = 1000  # Go's maximum repeat count


class RegexError(ValueError):
    """A pattern Go's regexp would refuse; ``str()`` is Go's message."""


# ---------------------------------------------------------------- character sets

_Pred = Callable[[str], bool]


def is_word(c: str) -> bool:
    return c == "_" or ("0" <= c <= "9") or ("a" <= c <= "z") or ("A" <= c <= "Z")


_PERL: dict[str, tuple[tuple[int, int], ...]] = {
    "d": ((48, 57),),
    "s": ((9, 10), (12, 13), (32, 32)),
    "w": ((48, 57), (65, 90), (95, 95), (97, 122)),
}
_POSIX: dict[str, tuple[tuple[int, int], ...]] = {
    "alnum": ((48, 57), (65, 90), (97, 122)),
    "alpha": ((65, 90), (97, 122)),
    "ascii": ((0, 127),),
    "blank": ((9, 9), (32, 32)),
    "cntrl": ((0, 31), (127, 127)),
    "digit": ((48, 57),),
    "graph": ((33, 126),),
    "lower": ((97, 122),),
    "print": ((32, 126),),
    "punct": ((33, 47), (58, 64), (91, 96), (123, 126)),
    "space": ((9, 13), (32, 32)),
    "upper": ((65, 90),),
    "word": ((48, 57), (65, 90), (95, 95), (97, 122)),
    "xdigit": ((48, 57), (65, 70), (97, 102)),
}


@dataclass
class CharSet:
    """A set of characters: code-point ranges and Unicode-category predicates, maybe negated."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    preds: list[_Pred] = field(default_factory=list)
    negated: bool = False

    def has(self, c: str) -> bool:
        o = ord(c)
        hit = any(lo <= o <= hi for lo, hi in self.ranges) or any(p(c) for p in self.preds)
        return hit != self.negated

    def fold(self) -> None:
        """Add the other case of every ASCII letter range (flag ``i``)."""
        extra = []
        for lo, hi in self.ranges:
            for a, b, delta in ((65, 90, 32), (97, 122, -32)):
                start, end = max(lo, a), min(hi, b)
                if start <= end:
                    extra.append((start + delta, end + delta))
        self.ranges += extra


def _category(name: str, negated: bool) -> _Pred:
    def pred(c: str) -> bool:
        cat = unicodedata.category(c)
        hit = cat == name if len(name) == 2 else cat.startswith(name)
        return hit != negated

    return pred


_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No"}
_CATEGORIES |= {"P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So"}
_CATEGORIES |= {"Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cs"}


# ---------------------------------------------------------------- syntax tree

# A node: ("set", CharSet) | ("cat", list) | ("alt", list) | ("rep", node, lo, hi|None)
# | ("assert", kind) | ("empty",)
Node = tuple[Any, ...]


@dataclass
class _Flags:
    i: bool = False
    m: bool = False
    s: bool = False


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def fail(self, what: str, arg: str) -> RegexError:
        return RegexError(f"error parsing regexp: {what}: `{arg}`")

    def parse(self) -> Node:
        node = self.alt(_Flags(), depth=0)
        if self.i < len(self.p):  # only a stray ")" stops the top-level alternation
            raise self.fail("unexpected )", self.p)
        return node

    def alt(self, flags: _Flags, depth: int) -> Node:
        if depth > 1000:
            raise RegexError("error parsing regexp: expression nests too deeply")
        branches = [self.cat(flags, depth)]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            branches.append(self.cat(flags, depth))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def cat(self, flags: _Flags, depth: int) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.atom(flags, depth)
            if atom is None:  # a flag group such as (?i): changes flags, matches nothing
                continue
            items.append(self.quantified(atom))
        if not items:
            return ("empty",)
        return items[0] if len(items) == 1 else ("cat", items)

    def quantified(self, atom: Node) -> Node:
        seen = False
        first_op = self.i
        while self.i < len(self.p):
            c = self.p[self.i]
            op_start = self.i
            if c in "*+?":
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                self.i += 1
            elif c == "{":
                bounds = self.repeat_bounds()
                if bounds is None:
                    break
                lo, hi = bounds
            else:
                break
            if self.i < len(self.p) and self.p[self.i] == "?":
                self.i += 1  # lazy: the same set of matches, so the same answer
            if seen:
                raise self.fail("invalid nested repetition operator", self.p[first_op : self.i])
            if atom[0] == "empty":
                raise self.fail("missing argument to repetition operator", self.p[op_start])
            seen = True
            atom = ("rep", atom, lo, hi)
        return atom

    def repeat_bounds(self) -> tuple[int, int | None] | None:
        """``{n}``, ``{n,}`` or ``{n,m}`` at ``self.i``; None (a literal "{") otherwise."""
        j = self.p.find("}", self.i)
        if j < 0:
            return None
        body = self.p[self.i + 1 : j]
        lo_text, comma, hi_text = body.partition(",")
        if not lo_text.isdigit() or (hi_text and not hi_text.isdigit()):
            return None
        lo = int(lo_text)
        hi = (int(hi_text) if hi_text else None) if comma else lo
        if lo > MAX_REPEAT or (hi is not None and (hi > MAX_REPEAT or hi < lo)):
            raise self.fail("invalid repeat count", self.p[self.i : j + 1])
        self.i = j + 1
        return lo, hi

    def atom(self, flags: _Flags, depth: int) -> Node | None:
        c = self.p[self.i]
        if c == "(":
            return self.group(flags, depth)
        if c in "*+?":
            raise self.fail("missing argument to repetition operator", c)
        self.i += 1
        if c == "[":
            return ("set", self.char_class(flags))
        if c == ".":
            if flags.s:
                return ("set", CharSet(negated=True))
            return ("set", CharSet([(10, 10)], negated=True))
        if c == "^":
            return ("assert", "bol" if flags.m else "bot")
        if c == "$":
            return ("assert", "eol" if flags.m else "eot")
        if c == "\\":
            return self.escape(flags)
        return ("set", self.literal(c, flags))

    def literal(self, c: str, flags: _Flags) -> CharSet:
        cs = CharSet([(ord(c), ord(c))])
        if flags.i:
            cs.fold()
        return cs

    def group(self, flags: _Flags, depth: int) -> Node | None:
        open_at = self.i
        self.i += 1
        inner = _Flags(flags.i, flags.m, flags.s)
        if self.p.startswith("?", self.i):
            if self.p.startswith("?P<", self.i) or self.p.startswith("?<", self.i):
                end = self.p.find(">", self.i)
                name = self.p[self.p.index("<", self.i) + 1 : end] if end > 0 else ""
                if end < 0 or not name or not all(is_word(ch) for ch in name):
                    raise self.fail("invalid named capture", self.p[open_at:])
                self.i = end + 1
            else:
                j = self.i + 1
                on = True
                while j < len(self.p) and self.p[j] not in ":)":
                    ch = self.p[j]
                    if ch == "-" and on:
                        on = False
                    elif ch in "imsU":
                        if ch != "U":
                            setattr(inner, ch, on)
                    else:
                        raise self.fail(
                            "invalid or unsupported Perl syntax", self.p[open_at : j + 1]
                        )
                    j += 1
                if j >= len(self.p):
                    raise self.fail("missing closing )", self.p)
                if self.p[j] == ")":  # (?flags): for the rest of the enclosing group
                    flags.i, flags.m, flags.s = inner.i, inner.m, inner.s
                    self.i = j + 1
                    return None
                self.i = j + 1
        node = self.alt(inner, depth + 1)
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise self.fail("missing closing )", self.p)
        self.i += 1
        return node

    def escape(self, flags: _Flags) -> Node:
        if self.i >= len(self.p):
            raise self.fail("trailing backslash at end of expression", "")
        c = self.p[self.i]
        self.i += 1
        if c in "AzbB":
            return ("assert", {"A": "bot", "z": "eot", "b": "wordb", "B": "nwordb"}[c])
        cs = self.class_escape(c, flags)
        return ("set", cs)

    def class_escape(self, c: str, flags: _Flags) -> CharSet:
        """The set an escape ``\\c`` (its backslash and ``c`` consumed) stands for."""
        if c.lower() in _PERL:
            return CharSet(list(_PERL[c.lower()]), negated=c.isupper())
        if c in "pP":
            name = ""
            if self.i < len(self.p) and self.p[self.i] == "{":
                end = self.p.find("}", self.i)
                if end < 0:
                    raise self.fail("invalid character class range", self.p[self.i - 2 :])
                name, self.i = self.p[self.i + 1 : end], end + 1
            elif self.i < len(self.p):
                name, self.i = self.p[self.i], self.i + 1
            negated = c == "P"
            if name.startswith("^"):
                name, negated = name[1:], not negated
            if name == "Any":
                return CharSet(negated=not negated)
            if name not in _CATEGORIES:
                raise self.fail("invalid character class range", f"\\{c}{{{name}}}")
            return CharSet(preds=[_category(name, negated)])
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
        if c in simple:
            return self.literal(simple[c], flags)
        if c == "x":
            return self.literal(chr(self.hex_escape()), flags)
        if c in "01234567":
            if c != "0" and not (self.i < len(self.p) and self.p[self.i] in "01234567"):
                raise self.fail("invalid escape sequence", f"\\{c}")  # a backreference
            digits = c
            while len(digits) < 3 and self.i < len(self.p) and self.p[self.i] in "01234567":
                digits += self.p[self.i]
                self.i += 1
            return self.literal(chr(int(digits, 8)), flags)
        if c.isascii() and not c.isalnum():
            return self.literal(c, flags)
        raise self.fail("invalid escape sequence", f"\\{c}")

    def hex_escape(self) -> int:
        if self.i < len(self.p) and self.p[self.i] == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1 : end] if end > 0 else ""
            self.i = end + 1 if end > 0 else len(self.p)
        else:
            digits = self.p[self.i : self.i + 2]
            self.i += 2
        try:
            value = int(digits, 16)
        except ValueError:
            raise self.fail("invalid escape sequence", f"\\x{digits}") from None
        if value > 0x10FFFF:
            raise self.fail("invalid escape sequence", f"\\x{digits}")
        return value

    def char_class(self, flags: _Flags) -> CharSet:
        open_at = self.i - 1
        cs = CharSet()
        if self.i < len(self.p) and self.p[self.i] == "^":
            cs.negated = True
            self.i += 1
        first = True
        while True:
            if self.i >= len(self.p):
                raise self.fail("missing closing ]", self.p[open_at:])
            c = self.p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.p.startswith("[:", self.i):
                end = self.p.find(":]", self.i)
                name = self.p[self.i + 2 : end] if end > 0 else ""
                negated = name.startswith("^")
                ranges = _POSIX.get(name.lstrip("^"))
                if ranges is None:
                    raise self.fail("invalid character class range", self.p[self.i : end + 2])
                self.i = end + 2
                if negated:
                    cs.preds.append(_negated_ranges(ranges))
                else:
                    cs.ranges += ranges
                continue
            range_at = self.i
            lo = self.class_char(cs, flags)
            if lo is None:
                continue
            if self.p.startswith("-", self.i) and not self.p.startswith("-]", self.i):
                self.i += 1
                hi = self.class_char(cs, flags)
                if hi is None or hi < lo:
                    raise self.fail("invalid character class range", self.p[range_at : self.i])
                cs.ranges.append((lo, hi))
            else:
                cs.ranges.append((lo, lo))
        if flags.i:
            cs.fold()
        return cs

    def class_char(self, cs: CharSet, flags: _Flags) -> int | None:
        """One character of a class (its code point), or None when it was a class escape
        (``\\d``) that was added to ``cs`` whole."""
        c = self.p[self.i]
        self.i += 1
        if c != "\\":
            return ord(c)
        if self.i >= len(self.p):
            raise self.fail("missing closing ]", self.p)
        e = self.p[self.i]
        self.i += 1
        if e.lower() in _PERL or e in "pP":
            sub = self.class_escape(e, flags)
            if sub.negated or sub.preds:
                cs.preds.append(sub.has)
            else:
                cs.ranges += sub.ranges
            return None
        single = self.class_escape(e, _Flags())
        return single.ranges[0][0]


def _negated_ranges(ranges: tuple[tuple[int, int], ...]) -> _Pred:
    def pred(c: str) -> bool:
        o = ord(c)
        return not any(lo <= o <= hi for lo, hi in ranges)

    return pred


def parse_pattern(pattern: str) -> Node:
    """The tree of ``pattern``; :class:`RegexError` with Go's message if Go would refuse it."""
    return _Parser(pattern).parse()
