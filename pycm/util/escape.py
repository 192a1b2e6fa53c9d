"""Escaping what a client controls before it reaches a log line or a trace event.

A request path, query, user agent or user name is the client's text. Written raw, ``%0a`` in a
path (decoded to LF by the server) starts a new, forged log line; CR rewrites the line on a
terminal; NUL truncates it for C tools; ESC drives the reader's terminal (ANSI sequences). So
every control character is written as a visible escape, as klog quotes values:

- ``\\r``, ``\\n``, ``\\t`` for CR, LF and TAB;
- ``\\xNN`` for the other C0 controls (U+0000–U+001F, NUL and ESC among them), DEL (U+007F)
  and the C1 controls (U+0080–U+009F, whose NEL is a line break to some readers);
- ``\\uNNNN`` for U+2028 and U+2029 (the Unicode line and paragraph separators, line breaks
  to JSON-in-JavaScript and some viewers).

Everything else — printable ASCII, other Unicode, the backslash itself — is kept, so escaping
is idempotent (escaped text has no control characters left) and readable paths stay as they
were. A literal backslash sequence sent by a client therefore looks like an escape; it cannot
break a line, which is the property that matters.
"""

from __future__ import annotations

import re

__all__ = ["escape_control"]

_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _replacement(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every control character written as a visible escape (see the module)."""
    if _CONTROL.search(text) is None:  # the common case: nothing to copy
        return text
    return _CONTROL.sub(_replacement, text)
