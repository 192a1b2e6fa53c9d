"""A bulk-reading HTTP/1.1 transport for watch streams and list pages: bodies read in large blocks.

Why: through httpx → httpcore → h11, every chunk of a watch stream (one per event, as
kube-apiserver writes them) becomes one h11 ``Data`` event and climbs half a dozen Python
layers before the decoder sees it: about a third of an informer's time per event. Here the
socket's bytes are taken as the event loop received them (up to 256 KiB a recv, all that
waits in one block), the chunked framing is removed in bulk (:mod:`pycm.kube.chunked`), and
the body is handed up one block per read: a read that brought forty events is one block,
split into forty lines at once by :class:`~pycm.kube.watch.Watch`.

:class:`WireTransport` is an ``httpx.AsyncBaseTransport``, so the client's pipeline is
unchanged (headers, auth, retries, metrics, error mapping): it gets the same ``httpx.Request``
and answers an ``httpx.Response`` whose stream is a :class:`WireBody`, also published in the
response's extensions under :data:`WIRE_BODY` for a reader that wants the blocks without
httpx's per-block layers. h11 writes the request and parses the response head. A connection
serves one request at a time; once a response's body has been read to its end, and neither
side asked to close, the connection waits idle for the next request (at most
:data:`MAX_IDLE` of them an origin): list pages (MBs each, one after another) come through here
too, and a connection per page would cost a handshake each. A watch holds its connection for
minutes and ends it, as a rule, by closing it. Errors are httpx's:
``ConnectError``/``ConnectTimeout``, ``ReadError``/``ReadTimeout``, ``RemoteProtocolError``; a
GET on an idle connection the server closed meanwhile (before any byte of an answer) is sent
again on a new one, as Go's net/http does for idempotent requests.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import h11
import httpx

from pycm.kube.chunked import Framing, FramingError, framing_for

__all__ = ["WIRE_BODY", "WireBody", "WireTransport"]

WIRE_BODY = "pycm.wire_body"
"""The response extension that holds the :class:`WireBody` (for :class:`Watch`)."""

# Reading pauses while this many received bytes wait to be taken (a slow consumer must not
# buffer a fast stream without bound); one take then holds up to this plus one recv.
HIGH_WATER = 512 * 1024
# The longest response head accepted (h11's own default limit for a head is 16 KiB).
MAX_HEAD = 64 * 1024
# Idle connections kept an origin (a prefetched list page runs beside the page being read).
MAX_IDLE = 2
# The end of a response head: an empty line, CRLF or bare LF (as h11 accepts).
_HEAD_END = re.compile(rb"\n\r?\n")


class _Socket(asyncio.Protocol):
    """A connection's received bytes, buffered until taken. Invariants: ``_pieces`` holds the
    bytes received and not taken, ``_size`` their length; reading is paused iff ``_paused``;
    ``_waiter`` is the future a reader waits on for more (None when nobody waits)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self._pieces: list[bytes] = []
        self._size = 0
        self._eof = False
        self._error: BaseException | None = None
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._pieces.append(data)
        self._size += len(data)
        if self._size >= HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None and self._error is None:
            self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @staticmethod
    def _time_out(waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(httpx.ReadTimeout("timed out waiting for the server"))

    async def read(self, read_timeout: float | None) -> bytes:
        """Every byte received and not yet taken, waiting up to ``read_timeout`` s for one;
        b"" once the server closed its side."""
        if not self._pieces:
            if self._error is not None:
                raise httpx.ReadError(f"connection lost: {self._error}") from self._error
            if self._eof:
                return b""
            waiter = self._waiter = self._loop.create_future()
            timer = (
                self._loop.call_later(read_timeout, self._time_out, waiter)
                if read_timeout is not None
                else None
            )
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not self._pieces:
                return await self.read(read_timeout)  # the end (or an error) arrived instead
        pieces = self._pieces
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self._pieces = []
        self._size = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def reusable(self) -> bool:
        """Open, and with nothing received that no request asked for."""
        transport = self.transport
        return (
            transport is not None
            and not transport.is_closing()
            and not self._eof
            and self._error is None
            and not self._pieces
            and not self._paused
        )

    def close(self, *, clean: bool) -> None:
        """Close the connection: at once (no TLS close_notify exchange) unless the response
        ended cleanly, so a cancelled watch lets its socket go promptly."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if clean:
            transport.close()
        else:
            transport.abort()


class WireBody(httpx.AsyncByteStream):
    """A response body read in blocks: each :meth:`read` gives the body bytes of one take of
    the socket's buffer (many events of a busy watch), or None at the end. Closing it closes
    the connection."""

    def __init__(
        self,
        sock: _Socket,
        framing: Framing,
        first: bytes,
        read_timeout: float | None,
        release: Callable[[_Socket], None] | None = None,
    ) -> None:
        self._sock = sock
        self._framing = framing
        self._first = first  # bytes that came with the head
        self._timeout = read_timeout
        self._closed = False
        # Takes the connection back once the body is read to its end (None: close it then).
        self._release = release
        self._handed_back = False  # the connection released or closed: no longer this body's

    def _done_with(self, sock: _Socket) -> None:
        """The connection after this body (once): kept for another request if the body ended
        cleanly and the response allows it, else closed."""
        if self._handed_back:
            return
        self._handed_back = True
        if self._release is not None and self._framing.done and not self._first:
            self._release(sock)
        else:
            sock.close(clean=self._framing.done)

    async def read(self) -> bytes | None:
        framing = self._framing
        while not framing.done and not self._closed:
            if framing.error is not None:
                self.close()
                raise httpx.RemoteProtocolError(str(framing.error))
            if self._first:
                data, self._first = self._first, b""
            else:
                try:
                    data = await self._sock.read(self._timeout)
                except httpx.HTTPError:  # timed out or broken: the connection is done with
                    self.close()
                    raise
            try:
                if not data:
                    framing.end()
                    break
                body = framing.feed(data)
            except FramingError as e:
                self.close()
                raise httpx.RemoteProtocolError(str(e)) from None
            if body:
                return body
        self._done_with(self._sock)
        return None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (block := await self.read()) is not None:
            yield block

    def close(self) -> None:
        self._closed = True
        self._done_with(self._sock)

    async def aclose(self) -> None:
        self.close()


class WireTransport(httpx.AsyncBaseTransport):
    """One connection per request, over TCP or TLS (``ssl_context``), HTTP/1.1 only.

    The request's ``timeout`` extension applies as httpx applies it: ``connect`` to the TCP and
    TLS handshake, ``read`` to each wait for bytes (the head, then every block); its
    ``sni_hostname`` extension names the TLS server when it is not the URL's host.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        self._ssl = ssl_context
        # Invariant: at most MAX_IDLE connections an origin, each reusable when put here.
        self._idle: dict[tuple[str, str, int], list[_Socket]] = {}

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for socks in idle.values():
            for sock in socks:
                sock.close(clean=True)

    def _idle_socket(self, origin: tuple[str, str, int]) -> _Socket | None:
        socks = self._idle.get(origin)
        while socks:
            sock = socks.pop()
            if sock.reusable():
                return sock
            sock.close(clean=False)  # the server closed it meanwhile
        return None

    def _releaser(self, origin: tuple[str, str, int]) -> Callable[[_Socket], None]:
        def release(sock: _Socket) -> None:
            socks = self._idle.setdefault(origin, [])
            if len(socks) < MAX_IDLE and sock.reusable():
                socks.append(sock)
            else:
                sock.close(clean=True)

        return release

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout") or {}
        url = request.url
        if url.scheme not in ("http", "https") or (url.scheme == "https" and self._ssl is None):
            raise httpx.UnsupportedProtocol(f"the wire transport cannot serve {url.scheme!r}")
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        content = await request.aread()
        idle = self._idle_socket(origin)
        if idle is not None:
            try:
                return await self._exchange(request, content, idle, timeouts, origin)
            except _StaleConnection:
                if request.method != "GET":
                    raise httpx.RemoteProtocolError(_DISCONNECTED) from None
        sock = await self._connect(request, timeouts.get("connect"))
        try:
            return await self._exchange(request, content, sock, timeouts, origin)
        except _StaleConnection:
            raise httpx.RemoteProtocolError(_DISCONNECTED) from None

    async def _exchange(
        self,
        request: httpx.Request,
        content: bytes,
        sock: _Socket,
        timeouts: dict[str, float | None],
        origin: tuple[str, str, int],
    ) -> httpx.Response:
        try:
            conn = h11.Connection(h11.CLIENT)
            data = conn.send(
                h11.Request(
                    method=request.method,
                    target=request.url.raw_path,
                    headers=list(request.headers.raw),
                )
            )
            if content:
                data += conn.send(h11.Data(data=content))
            data += conn.send(h11.EndOfMessage())
            assert sock.transport is not None
            sock.transport.write(data)
            return await self._response(request, conn, sock, timeouts.get("read"), origin)
        except BaseException:
            sock.close(clean=False)
            raise

    async def _connect(self, request: httpx.Request, connect_timeout: float | None) -> _Socket:
        loop = asyncio.get_running_loop()
        url = request.url
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        sock = _Socket(loop)
        sni = request.extensions.get("sni_hostname")
        try:
            async with asyncio.timeout(connect_timeout):
                await loop.create_connection(
                    lambda: sock,
                    url.host,
                    port,
                    ssl=self._ssl if tls else None,
                    server_hostname=(sni or url.host) if tls else None,
                )
        except TimeoutError:
            sock.close(clean=False)
            raise httpx.ConnectTimeout("timed out connecting") from None
        except (OSError, ssl.SSLError) as e:
            raise httpx.ConnectError(str(e) or type(e).__name__) from e
        return sock

    async def _response(
        self,
        request: httpx.Request,
        conn: h11.Connection,
        sock: _Socket,
        read_timeout: float | None,
        origin: tuple[str, str, int],
    ) -> httpx.Response:
        """Read and parse the head (skipping 1xx answers); the body stays on the socket."""
        buffered = b""
        answered = False
        while True:
            end = _HEAD_END.search(buffered)
            if end is None:
                if len(buffered) > MAX_HEAD:
                    raise httpx.RemoteProtocolError("response head too long")
                more = await sock.read(read_timeout)
                if not more:
                    if not answered:
                        raise _StaleConnection
                    raise httpx.RemoteProtocolError(_DISCONNECTED)
                answered = True
                buffered += more
                continue
            head, buffered = buffered[: end.end()], buffered[end.end() :]
            try:
                conn.receive_data(head)
                event = conn.next_event()
            except h11.RemoteProtocolError as e:
                raise httpx.RemoteProtocolError(str(e)) from None
            if isinstance(event, h11.InformationalResponse):
                continue  # 100 Continue and the like: the real answer follows
            if not isinstance(event, h11.Response):
                raise httpx.RemoteProtocolError(f"unexpected response event {event!r}")
            break
        headers = list(event.headers)
        framing = framing_for(event.status_code, headers, request.method.encode("ascii"))
        keep = event.http_version == b"1.1" and not _closes(headers, request.headers)
        release = self._releaser(origin) if keep else None
        body = WireBody(sock, framing, buffered, read_timeout, release)
        extensions: dict[str, Any] = {
            "http_version": b"HTTP/" + event.http_version,
            "reason_phrase": event.reason,
            WIRE_BODY: body,
        }
        return httpx.Response(
            event.status_code, headers=headers, stream=body, extensions=extensions
        )


_DISCONNECTED = "Server disconnected without sending a response."


class _StaleConnection(Exception):
    """The connection ended before any byte of an answer (an idle one the server closed)."""


def _closes(headers: list[tuple[bytes, bytes]], request_headers: httpx.Headers) -> bool:
    """Whether either side said ``Connection: close``."""
    for name, value in headers:
        if name.lower() == b"connection" and b"close" in value.lower():
            return True
    return "close" in request_headers.get("connection", "").lower()
