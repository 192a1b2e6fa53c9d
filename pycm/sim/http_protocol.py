"""The emulator's HTTP protocol: uvicorn's httptools protocol with a bound on a request's head.

uvicorn's httptools protocol (the C parser the emulator serves with, for its send path) has no
limit on a request's line and headers: llhttp has none, httptools concatenates a header's value
as it arrives, and uvicorn appends every header to a list — a client sending one endless header
grows the process until it gives up. kube-apiserver (Go) answers a head over 1 MiB
(``MaxHeaderBytes``) with 431 Request Header Fields Too Large and closes; here the bound is
``ServingLimits.max_header_bytes`` (32 KiB: one megabyte times the connection cap is gigabytes).

Bytes are counted as they are fed while a head is being read (from the end of one request, or
the connection's start, until the parser calls ``on_headers_complete``), so the parser holds
at most one read (the transport's, 256 KiB) past the bound before the connection is answered
431 and closed.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeadLimitedHttpToolsProtocol"]

_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: 35\r\n"
    b"connection: close\r\n"
    b"\r\n"
    b"431 Request Header Fields Too Large"
)


class HeadLimitedHttpToolsProtocol(HttpToolsProtocol):
    """Invariant: ``_head_bytes`` counts the bytes fed since the current head began, while
    ``_in_head``; it is 0 otherwise."""

    def __init__(self, *args: Any, max_head_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_head_bytes = max_head_bytes
        self._in_head = True
        self._head_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self._max_head_bytes:
            self._in_head = False
            if not self.transport.is_closing():
                self.transport.write(_TOO_LARGE)
                self.transport.close()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0
