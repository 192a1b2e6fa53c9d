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

__all__ = ["Watch", "WatchEvent"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the object as sent."""

    type: str
    object: dict[str, Any]


class Watch:
    """One watch request. Invariants: ``_response`` is set between enter and exit;
    ``_buf[_pos:]`` holds the bytes received and not yet returned as events."""

    def __init__(self, opener: Callable[[], Awaitable[httpx.Response]]) -> None:
        self._opener = opener
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._buf = b""
        self._pos = 0
        self._done = False
        self.events = 0  # events returned so far

    async def __aenter__(self) -> Watch:
        self._response = await self._opener()
        self._chunks = self._response.aiter_bytes()
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
        """The stream's raw lines, undecoded, in bulk: every complete line received so far in
        one list (for a caller with its own bulk decoder; ERROR events are not raised here)."""
        while True:
            end = self._buf.rfind(b"\n", self._pos)
            if end >= 0:
                block = self._buf[self._pos : end]
                self._pos = end + 1
                lines = [line for line in block.split(b"\n") if line.strip()]
                if lines:
                    self.events += len(lines)
                    yield lines
                continue
            chunk = await self._next_chunk()
            if chunk is None:
                rest = self._buf[self._pos :]
                self._buf, self._pos = b"", 0
                if rest.strip():
                    self.events += 1
                    yield [rest]
                return
            self._buf = self._buf[self._pos :] + chunk
            self._pos = 0

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
        while True:
            nl = self._buf.find(b"\n", self._pos)
            if nl >= 0:
                line = self._buf[self._pos : nl]
                self._pos = nl + 1
                if line.strip():
                    return self._decode(line)
                continue
            if self._done or self._chunks is None:
                raise StopAsyncIteration
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._done = True
                rest = self._buf[self._pos :]
                self._buf, self._pos = b"", 0
                if rest.strip():
                    return self._decode(rest)
                raise
            except httpx.TimeoutException:
                self._done = True
                raise Timeout(
                    "watch stream read timed out (client-side)", reason="Timeout"
                ) from None
            except httpx.HTTPError as e:
                self._done = True
                raise TransportError(f"watch stream broken: {type(e).__name__}: {e}") from None
            self._buf = self._buf[self._pos :] + chunk
            self._pos = 0

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
