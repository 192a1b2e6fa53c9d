"""HTTP/1.1 response body framing, removed in bulk (sans-IO).

A body is framed one of three ways (RFC 9112 §6.3): ``Transfer-Encoding: chunked``, a
``Content-Length``, or "until the server closes the connection". Each framing here is fed the
bytes of one socket read at a time and hands back the body bytes they carry, joined into one
block: a watch stream is one chunk per event as kube-apiserver writes it (Go's net/http writes
about one HTTP/1.1 chunk per JSON event), and a read that brings forty of them gives forty
chunks' data as one block for one line split. h11, which parses one chunk per event object
and keeps state for each, is the cost this avoids; it still parses the response head.

Any split of the stream across reads is accepted (a size line, a chunk's closing CRLF or a
trailer line cut anywhere); chunk extensions and trailers are skipped. Bad framing raises
:class:`FramingError`, as does a connection that closes before the body is complete.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = ["Chunked", "Framing", "FramingError", "Length", "UntilClose", "framing_for"]

# A chunk-size line: hex size, optional whitespace and extensions (RFC 9112 §7.1.1; bare LF
# is not accepted, as h11 does not). Sixteen hex digits are 64 bits: a bigger size is an error.
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r\n")
# The longest size line or trailer line kept while waiting for its end (h11 allows 16 KiB for
# a whole head): longer means a broken or hostile stream, not a slow one.
MAX_LINE = 16 * 1024
# Trailer fields are skipped, but not without bound.
MAX_TRAILER = 64 * 1024


class FramingError(ValueError):
    """The body's framing is broken (or the connection closed before the body was whole)."""


class Framing(Protocol):
    """One response body's framing. ``done`` once the whole body has been fed; ``error`` is
    the framing error found after body bytes that :meth:`feed` returned first (the reader
    raises it before waiting for more)."""

    done: bool
    error: FramingError | None

    def feed(self, data: bytes) -> bytes:
        """The body bytes ``data`` carries (b"" if none). Bytes past the body's end are
        ignored: the connection is not reused after a framing has read to its end."""
        ...

    def end(self) -> None:
        """The connection closed: raise :class:`FramingError` if the body is incomplete."""
        ...


class Length:
    """A body of ``Content-Length`` bytes."""

    def __init__(self, length: int) -> None:
        self._left = length
        self.done = length == 0
        self.error: FramingError | None = None

    def feed(self, data: bytes) -> bytes:
        if self.done:
            return b""
        if len(data) < self._left:
            self._left -= len(data)
            return data
        body, self._left, self.done = data[: self._left], 0, True
        return body

    def end(self) -> None:
        if not self.done:
            raise FramingError(f"connection closed with {self._left} body bytes still to come")


class UntilClose:
    """A body that lasts until the server closes the connection."""

    def __init__(self) -> None:
        self.done = False
        self.error: FramingError | None = None

    def feed(self, data: bytes) -> bytes:
        return b"" if self.done else data

    def end(self) -> None:
        self.done = True


# Chunked states: what the bytes at the current position are.
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)


class Chunked:
    """A chunked body. Invariants: in ``_DATA``, ``_left`` bytes of the current chunk's data
    are still to come; in ``_DATA_END``, ``_left`` bytes of the CRLF that closes a chunk's
    data (2 or 1); ``_carry`` holds the start of a size or trailer line whose end has not
    arrived (empty otherwise); ``_trailer`` counts the trailer bytes seen."""

    def __init__(self) -> None:
        self.done = False
        self.error: FramingError | None = None
        self._state = _SIZE
        self._left = 0
        self._carry = b""
        self._trailer = 0

    def feed(self, data: bytes) -> bytes:
        if self.error is not None:
            raise self.error
        if self.done or not data:
            return b""
        if self._carry:
            data = self._carry + data
            self._carry = b""
        pieces: list[bytes] = []
        try:
            self._parse(data, pieces)
        except FramingError as e:
            if not pieces:
                raise
            self.error = e  # the body bytes before the error are given first
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)

    def _parse(self, data: bytes, pieces: list[bytes]) -> None:
        """Append the body bytes of ``data`` to ``pieces``, advancing the state."""
        n = len(data)
        pos = 0
        state = self._state
        left = self._left
        find = data.find
        size_line = _SIZE_LINE.match
        while pos < n:
            if state == _SIZE and (match := size_line(data, pos)) is not None:
                # The common case first: a whole size line, and usually its chunk's data and
                # CRLF in this read too, all taken in this one step.
                left = int(match.group(1), 16)
                pos = match.end()
                end = pos + left
                if left and end + 2 <= n and data.startswith(b"\r\n", end):
                    pieces.append(data[pos:end])
                    pos = end + 2
                else:
                    state = _DATA if left else _TRAILER
            elif state == _DATA:
                end = pos + left
                if end > n:  # the chunk goes on in the next read
                    pieces.append(data[pos:] if pos else data)
                    left = end - n
                    break
                pieces.append(data[pos:end])
                pos, state, left = end, _DATA_END, 2
            elif state == _DATA_END:
                if left == 2 and data.startswith(b"\r\n", pos):
                    pos += 2
                elif data[pos] == b"\r\n"[2 - left]:  # a CRLF cut by the end of a read
                    pos += 1
                    left -= 1
                    if left:
                        continue
                else:
                    raise FramingError("chunk data not followed by CRLF")
                state = _SIZE
            else:  # a size line that did not match (cut short, or bad), or a trailer line
                nl = find(b"\n", pos)
                if nl < 0:
                    self._keep_line(data, pos, state)
                    break
                if state == _SIZE:
                    raise FramingError(f"bad chunk size line {data[pos : nl + 1][:40]!r}")
                self._trailer += nl + 1 - pos
                if self._trailer > MAX_TRAILER:
                    raise FramingError("chunked trailer too long")
                if nl - pos <= 1 and (nl == pos or data[pos] == 13):  # b"\r\n" or b"\n"
                    self.done = True
                    break
                pos = nl + 1
        self._state, self._left = state, left

    def _keep_line(self, data: bytes, pos: int, state: int) -> None:
        """Keep a line's start until its end arrives (bounded: see MAX_LINE)."""
        if len(data) - pos > MAX_LINE:
            what = "trailer line" if state == _TRAILER else "chunk size line"
            raise FramingError(f"{what} longer than {MAX_LINE} bytes")
        self._carry = data[pos:]

    def end(self) -> None:
        if self.error is not None:
            raise self.error
        if not self.done:
            raise FramingError("connection closed in the middle of a chunked body")


def framing_for(status: int, headers: list[tuple[bytes, bytes]], method: bytes) -> Framing:
    """The framing of a response's body from its status and headers (RFC 9112 §6.3), after
    h11 validated the head (one Transfer-Encoding, ``chunked`` only; one Content-Length)."""
    if method == b"HEAD" or status in (204, 304) or 100 <= status < 200:
        return Length(0)
    length: int | None = None
    for name, value in headers:
        name = name.lower()
        if name == b"transfer-encoding":
            return Chunked()
        if name == b"content-length":
            length = int(value)
    return UntilClose() if length is None else Length(length)
