"""A linear-time regular expression matcher for CRD ``pattern:`` values.

kube-apiserver checks ``pattern`` with Go's ``regexp`` (RE2: no backtracking, time linear in
the input). Python's ``re`` backtracks, so a hostile pattern such as ``^(a+)+$`` against a long
string of ``a``\\s followed by ``b`` would hold the emulator's only event loop for minutes. Here
a pattern is parsed (RE2's syntax, :mod:`pycm.sim.crd.regex_syntax`) into a Thompson NFA and
matched by a lazily built DFA: each input character costs at most one pass over the NFA's
states, and a cache of DFA states (bounded, cleared when full) makes the common case one dict
look-up per character.

What Go refuses, this refuses with Go's ``error parsing regexp: …`` wording (backreferences,
look-arounds, repeat counts above 1000, unbalanced brackets); a program above
:data:`MAX_STATES` NFA states is "expression too large", as in Go.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pycm.sim.crd.regex_syntax import Node, RegexError, is_word, parse_pattern

__all__ = ["MAX_STATES", "Regex", "RegexError", "compile_regex"]

MAX_STATES = 20_000  # NFA states; Go's limit is on its program size, of the same order
_DFA_CACHE = 4_096  # DFA states kept before the cache is cleared (memory bound)


# ---------------------------------------------------------------- NFA and DFA

_CHAR, _SPLIT, _ASSERT, _MATCH = 0, 1, 2, 3
# Context bits of a position, for the assertions.
_BOT, _EOT, _BOL, _EOL, _WORDB = 1, 2, 4, 8, 16
_ASSERT_OK: dict[str, Callable[[int], bool]] = {
    "bot": lambda ctx: bool(ctx & _BOT),
    "eot": lambda ctx: bool(ctx & _EOT),
    "bol": lambda ctx: bool(ctx & _BOL),
    "eol": lambda ctx: bool(ctx & _EOL),
    "wordb": lambda ctx: bool(ctx & _WORDB),
    "nwordb": lambda ctx: not ctx & _WORDB,
}


class _Compiler:
    def __init__(self) -> None:
        self.kind: list[int] = [_MATCH]
        self.arg: list[object] = [None]  # a _CharSet, an assertion kind
        self.out: list[int] = [-1]
        self.out2: list[int] = [-1]

    def new(self, kind: int, arg: object, out: int, out2: int = -1) -> int:
        if len(self.kind) >= MAX_STATES:
            raise RegexError("error parsing regexp: expression too large")
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        self.out2.append(out2)
        return len(self.kind) - 1

    def comp(self, node: Node, nxt: int) -> int:
        """Compile ``node`` to continue at state ``nxt``; its start state."""
        tag = node[0]
        if tag == "set":
            return self.new(_CHAR, node[1], nxt)
        if tag == "empty":
            return nxt
        if tag == "assert":
            return self.new(_ASSERT, node[1], nxt)
        if tag == "cat":
            for item in reversed(node[1]):
                nxt = self.comp(item, nxt)
            return nxt
        if tag == "alt":
            starts = [self.comp(b, nxt) for b in node[1]]
            start = starts[-1]
            for s in reversed(starts[:-1]):
                start = self.new(_SPLIT, None, s, start)
            return start
        _, body, lo, hi = node
        if hi is None:
            loop = self.new(_SPLIT, None, -1, nxt)
            self.out[loop] = self.comp(body, loop)
            tail = loop
        else:
            tail = nxt
            for _ in range(hi - lo):
                tail = self.new(_SPLIT, None, self.comp(body, tail), nxt)
        for _ in range(lo):
            tail = self.comp(body, tail)
        return tail


@dataclass
class _DState:
    chars: tuple[int, ...]  # the CHAR states of the closure
    matches: bool
    step: dict[str, frozenset[int]] = field(default_factory=dict)
    # The next state after a character, at a position inside the text (context 0); only for
    # patterns whose assertions are all ^/$/\A/\z (the common case: one look-up a character).
    nxt: dict[str, _DState] = field(default_factory=dict)


class Regex:
    """A compiled pattern; :meth:`search` answers Go's ``MatchString`` (a match anywhere)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        tree = parse_pattern(pattern)
        c = _Compiler()
        self._start = c.comp(tree, 0)
        self._kind, self._arg, self._out, self._out2 = c.kind, c.arg, c.out, c.out2
        self._has_asserts = _ASSERT in c.kind
        kinds = {str(a) for k, a in zip(c.kind, c.arg, strict=True) if k == _ASSERT}
        # Only text-boundary assertions: every position inside the text has context 0.
        self._boundary_only = kinds <= {"bot", "eot"}
        self._dstates: dict[tuple[frozenset[int], int], _DState] = {}

    def _closure(self, kernel: frozenset[int], ctx: int) -> _DState:
        key = (kernel, ctx)
        found = self._dstates.get(key)
        if found is not None:
            return found
        if len(self._dstates) >= _DFA_CACHE:
            self._dstates.clear()
        kind, out, out2, arg = self._kind, self._out, self._out2, self._arg
        seen: set[int] = set()
        stack = [self._start, *kernel]  # the start joins at every position: an unanchored search
        chars: list[int] = []
        matches = False
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            k = kind[s]
            if k == _CHAR:
                chars.append(s)
            elif k == _SPLIT:
                stack.append(out2[s])
                stack.append(out[s])
            elif k == _ASSERT:
                if _ASSERT_OK[str(arg[s])](ctx):
                    stack.append(out[s])
            else:
                matches = True
        state = _DState(tuple(chars), matches)
        self._dstates[key] = state
        return state

    def _ctx(self, text: str, i: int) -> int:
        n = len(text)
        prev = text[i - 1] if i > 0 else ""
        nxt = text[i] if i < n else ""
        ctx = 0
        if i == 0:
            ctx |= _BOT | _BOL
        elif prev == "\n":
            ctx |= _BOL
        if i == n:
            ctx |= _EOT | _EOL
        elif nxt == "\n":
            ctx |= _EOL
        if (bool(prev) and is_word(prev)) != (bool(nxt) and is_word(nxt)):
            ctx |= _WORDB
        return ctx

    def _step(self, d: _DState, c: str) -> frozenset[int]:
        nk = d.step.get(c)
        if nk is None:
            arg, out = self._arg, self._out
            nk = frozenset(out[s] for s in d.chars if arg[s].has(c))  # type: ignore[attr-defined]
            if len(d.step) < 256:  # per-state memo of characters, bounded
                d.step[c] = nk
        return nk

    def search(self, text: str) -> bool:
        n = len(text)
        if not self._boundary_only:
            return self._search_in_context(text)
        d = self._closure(frozenset(), _BOT | _BOL | (_EOT | _EOL if n == 0 else 0))
        last = n - 1
        for i, c in enumerate(text):
            if d.matches:
                return True
            if i < last:
                nd = d.nxt.get(c)
                if nd is None:
                    nd = self._closure(self._step(d, c), 0)
                    if len(d.nxt) < 256:
                        d.nxt[c] = nd
                d = nd
            else:
                d = self._closure(self._step(d, c), _EOT | _EOL)
        return d.matches

    def _search_in_context(self, text: str) -> bool:
        """The search for patterns with line or word assertions: each position's context."""
        kernel: frozenset[int] = frozenset()
        n = len(text)
        for i in range(n + 1):
            d = self._closure(kernel, self._ctx(text, i))
            if d.matches:
                return True
            if i == n:
                return False
            kernel = self._step(d, text[i])
        return False


def compile_regex(pattern: str) -> Regex:
    """Compile ``pattern`` (RE2 syntax); :class:`RegexError` with Go's message if Go would not."""
    return Regex(pattern)
