"""A watch stream: newline-delimited JSON events decoded with orjson, one per line.

:class:`Watch` is an async context manager: entering it sends the request (through the client's
rate limiter, as client-go throttles the watch request too) and waits for the headers; the
stream is then an async iterator of :class:`WatchEvent`. An ``ERROR`` event carrying a Status
raises the mapped exception (``410`` → :class:`~pycm.kube.errors.Expired`); the iterator ends
when the server closes the stream (``timeoutSeconds`` reached). Leaving the block closes the
connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx
import orjson

from pycm.kube.errors import KubeError, Timeout, TransportError, error_from_status
from pycm.kube.wire import WIRE_BODY, WireBody

__all__ = ["Watch", "WatchEvent"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the object as sent."""

    type: str
    object: dict[str, Any]


class Watch:
    """One watch request. Invariants: ``_response`` is set between enter and exit; the bytes
    received and not yet returned are ``_ready[_next:]`` (complete lines) followed by the
    pieces in ``_partial`` (the start of a line whose newline has not arrived)."""

    def __init__(self, opener: Callable[[], Awaitable[httpx.Response]]) -> None:
        self._opener = opener
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._partial: list[bytes] = []
        self._ready: list[bytes] = []
        self._next = 0
        self._done = False
        self.events = 0  # events returned so far

    async def __aenter__(self) -> Watch:
        self._response = response = await self._opener()
        body = response.extensions.get(WIRE_BODY)
        if isinstance(body, WireBody) and _identity(response):
            # The wire transport's blocks as they are (each all the body bytes of one socket
            # read): httpx's per-block layers add nothing to an unencoded body.
            self._chunks = aiter(body)
        else:
            self._chunks = response.aiter_bytes()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._done = True
        chunks, self._chunks = self._chunks, None
        if chunks is not None and hasattr(chunks, "aclose"):
            await chunks.aclose()
        if self._response is not None:
            await self._response.aclose()

    @property
    def response(self) -> httpx.Response:
        if self._response is None:
            raise RuntimeError("the watch is not open (use it as `async with`)")
        return self._response

    def __aiter__(self) -> Watch:
        return self

    async def line_batches(self) -> AsyncIterator[list[bytes]]:
        """The stream's raw lines, undecoded, in bulk: the complete lines of each read in one
        list (for a caller with its own bulk decoder; ERROR events are not raised here)."""
        if self._next < len(self._ready):  # lines split off but not returned yet
            ready = self._ready[self._next :]
            self._ready, self._next = [], 0
            self.events += len(ready)
            yield ready
        while (lines := await self._read_lines()) is not None:
            self.events += len(lines)
            yield lines

    async def _read_lines(self) -> list[bytes] | None:
        """The non-blank lines completed by the next chunks (at least one line), or None at
        the end of the stream (an unterminated last line is returned first, as a line)."""
        while True:
            chunk = await self._next_chunk()
            if chunk is None:
                rest = b"".join(self._partial)
                self._partial = []
                return [rest] if rest.strip() else None
            lines = self._split(chunk)
            if lines:
                return lines

    def _split(self, chunk: bytes) -> list[bytes]:
        """The non-blank lines ``chunk`` completes; its unfinished last line is kept for the
        next chunk. A read can hold many pod-sized lines (a replayed backlog fills the socket
        buffer faster than the reader drains it): newlines are found with ``bytes.find``
        (memchr) and each line sliced out once, because ``bytes.split`` walks every byte in a
        C loop (~4.6 instructions a byte, 27k for a 5.7 KB pod). A line that straddles reads
        is joined from its pieces once, however many reads a very long one spans."""
        lines: list[bytes] = []
        find = chunk.find
        start = 0
        nl = find(b"\n")
        if nl >= 0 and self._partial:
            self._partial.append(chunk[:nl])
            lines.append(b"".join(self._partial))
            self._partial = []
            start = nl + 1
            nl = find(b"\n", start)
        while nl >= 0:
            lines.append(chunk[start:nl])
            start = nl + 1
            nl = find(b"\n", start)
        if start < len(chunk):
            self._partial.append(chunk[start:] if start else chunk)
        return [line for line in lines if line.strip()]  # no copy: a JSON line has no blanks

    async def _next_chunk(self) -> bytes | None:
        """The next chunk received, or None at the end of the stream."""
        if self._done or self._chunks is None:
            return None
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            self._done = True
            return None
        except httpx.TimeoutException:
            self._done = True
            raise Timeout("watch stream read timed out (client-side)", reason="Timeout") from None
        except httpx.HTTPError as e:
            self._done = True
            raise TransportError(f"watch stream broken: {type(e).__name__}: {e}") from None

    async def __anext__(self) -> WatchEvent:
        if self._next >= len(self._ready):
            lines = await self._read_lines()
            if lines is None:
                raise StopAsyncIteration
            self._ready, self._next = lines, 0
        line = self._ready[self._next]
        self._next += 1
        return self._decode(line)

    def _decode(self, line: bytes) -> WatchEvent:
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise KubeError("undecodable watch event (not JSON)") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("object"), dict):
            raise KubeError("malformed watch event (no object)")
        kind = str(raw.get("type") or "")
        obj: dict[str, Any] = raw["object"]
        if kind == "ERROR":
            raise error_from_status(obj)
        self.events += 1
        return WatchEvent(kind, obj)


def _identity(response: httpx.Response) -> bool:
    """The body is sent as is (no Content-Encoding for httpx to undo)."""
    encoding: str = response.headers.get("content-encoding", "identity")
    return encoding.strip().lower() == "identity"
