"""Limits on served connections, below HTTP: what Go's ``http.Server`` holds and uvicorn lacks.

kube-apiserver (and so KCM's secure port) serves with ``ReadHeaderTimeout: 32s``, ``IdleTimeout:
90s`` and ``MaxHeaderBytes: 1 MiB``, and Go bounds the TLS handshake by the same deadline.
uvicorn (0.55) has an idle keep-alive timeout and a header-size bound (h11's) but no deadline
for the TLS handshake (asyncio's default is 60 s), none for a request's head (a partial request
is held until the client gives up), and no cap on connections (``limit_concurrency`` answers
503 *after* accepting, completing TLS and parsing the request, so a flood still costs all of
that). Measured before this module: each partial TLS connection to the manager cost ~280 KB,
3,000 of them 933 MB, never returned.

:class:`ConnectionGate` is the protocol factory handed to the listening socket (uvicorn's
``http=``, called as uvicorn calls its protocol class) with TLS left to the gate. Per accepted
connection it

- **refuses past the cap**: at ``max_connections`` open connections a new one is closed at once,
  before any TLS or HTTP state exists for it (Go's ``netutil.LimitListener`` blocks ``Accept``
  instead; closing answers the client at once and keeps the backlog from hiding the refusal);
- **bounds the TLS handshake** (``tls_handshake_timeout``) and the TLS close (5 s, as Go's
  close-notify write deadline; asyncio waits 30 s for the peer's close_notify);
- **reads TLS records through one buffer per gate**: asyncio's ``SSLProtocol`` allocates (and
  zero-fills) a 256 KiB read buffer per connection, 256 KiB of RSS for a connection that sent
  nothing. The buffer only carries bytes from ``recv_into`` to the TLS object's memory BIO
  within one synchronous callback, so one per gate (one event loop) is safe. Measured: 2,000
  partial TLS connections cost 524 MB with asyncio's buffer, 23 MB with the shared one;
- **starts the TLS handshake at the client's first bytes**, not at accept: OpenSSL's record
  buffers are not allocated for a connection that never speaks (47 → 14 KB each, measured);
- **times out a request's head** (``read_header_timeout``, Go's ``ReadHeaderTimeout``): armed
  when the connection is ready (after the handshake) and whenever bytes arrive between
  requests, disarmed when the HTTP protocol hands a complete head to the ASGI app. Expired, the
  connection is aborted without an answer (as Go closes it). The idle timeout between requests
  is the HTTP protocol's own (uvicorn's keep-alive timeout);
- **closes after a response that left a large body unread** (Go's ``maxPostHandlerReadBytes``
  rule): when a request declaring a body over 256 KiB, or a chunked one, is answered without
  its body read to the end, the connection is aborted ``LINGER`` (2 s) later unless a new
  request began — time for the client to read the answer (a close with unread input is a
  reset, which can destroy it; Go waits 500 ms, nginx lingers), and ``Content-Length: 2**64``
  is not drained for ever;
- **gives memory back after bursts**: once 256 fewer connections are open than at the peak
  since the last time, glibc's ``malloc_trim`` runs (a second later), so RSS falls after a flood
  (:mod:`pycm.util.malloc`); and a closed connection lets go of its HTTP protocol, so no
  reference cycle waits for a full collection to be freed.

The "head received" signal is the ASGI app being called: both of uvicorn's HTTP protocols call
it exactly when a request's head is complete, and both keep the app in a public ``app``
attribute, which the gate wraps per connection (as :mod:`pycm.server.tls_extension` does).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import resource
import ssl
from asyncio import sslproto
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycm.util.malloc import release_free_memory

__all__ = [
    "DEFAULT_LIMITS",
    "LINGER",
    "MAX_UNREAD_BODY",
    "ConnectionGate",
    "ServingLimits",
    "fit_open_files",
]

_log = logging.getLogger("pycm.util.serving_limits")

# Go's maxPostHandlerReadBytes: an unread request body larger than this closes the connection.
MAX_UNREAD_BODY = 256 * 1024
# How long such a connection stays after its answer (discarding input) before it is aborted.
LINGER = 2.0
_TLS_SHUTDOWN_TIMEOUT = 5.0  # Go's tls.Conn.Close write deadline for the close_notify alert
_READ_BUFFER = 256 * 1024  # asyncio's SSLProtocol.max_size: one recv_into reads up to this
# A burst is over when this many fewer connections are open than at the peak since the last
# trim. Not "every N closes": under steady churn (a connection per request) the freed memory is
# reused at once, and trimming it away only makes the next connections fault it back in
# (measured: ~5% fewer requests/s on new connections).
_TRIM_AFTER_CLOSES = 256
_TRIM_DELAY = 1.0  # seconds; a burst closing over several loop turns is trimmed once
_REFUSAL_LOG_EVERY = 60.0  # seconds between two "refusing connections" warnings


@dataclass(frozen=True, slots=True)
class ServingLimits:
    """What a listener holds open, and for how long. Timeouts in seconds; 0 turns one off."""

    # Open connections at most (the listener's, not the process's); 0: no cap. A partial TLS
    # connection costs ~27 KB (bench flood), one that never starts TLS ~11 KB, plus what a
    # head being read holds (up to max_header_bytes): 4,096 partial ones ~110 MB, ~240 MB if
    # each also sends an almost full head. Well above what a manager is asked for (probes,
    # a scraper, a few dashboards), and below a typical open-files limit.
    max_connections: int = 4096
    # The TLS handshake, from accept (Go derives it from ReadHeaderTimeout; client-go's
    # transport gives up after 10 s, so a real client never needs longer).
    tls_handshake_timeout: float = 10.0
    # From a connection being ready, or the first byte of a later request, to the request's
    # complete head (kube-apiserver's ReadHeaderTimeout, "just shy of" its 34 s request bound).
    read_header_timeout: float = 32.0
    # An idle keep-alive connection (kube-apiserver's IdleTimeout, http.DefaultTransport's).
    idle_timeout: float = 90.0
    # A request's line and headers together (the parser's buffer for an incomplete head). Go
    # allows 1 MiB; that times the connection cap is gigabytes, and a token is ~1-2 KiB.
    max_header_bytes: int = 32 * 1024

    def validate(self) -> list[str]:
        problems = []
        if self.max_connections < 0:
            problems.append(f"max_connections must not be negative, got {self.max_connections}")
        for name in ("tls_handshake_timeout", "read_header_timeout", "idle_timeout"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative")
        if self.max_header_bytes < 1024:
            problems.append(f"max_header_bytes must be at least 1024, got {self.max_header_bytes}")
        return problems


DEFAULT_LIMITS = ServingLimits()


class ConnectionGate:
    """The protocol factory of one listener; see the module's docstring.

    ``protocol_factory`` makes the HTTP protocol (called with the gate's own arguments, which
    is how uvicorn calls ``http=``); ``ssl_context`` set, the gate does TLS itself (give the
    server none). Invariant: ``active`` counts connections admitted and not yet lost, and is at
    most ``limits.max_connections`` when that is set.
    """

    def __init__(
        self,
        protocol_factory: Callable[..., asyncio.Protocol],
        limits: ServingLimits = DEFAULT_LIMITS,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._factory = protocol_factory
        self.limits = limits
        self._ssl_context = ssl_context
        self.active = 0
        self.refused = 0  # connections closed at the cap
        self.header_timeouts = 0  # connections aborted waiting for a request's head
        self.unread_body_closes = 0  # connections aborted after a large body left unread
        self._read_buffer = memoryview(bytearray(_READ_BUFFER)) if ssl_context else None
        self._peak = 0  # the most connections open at once since the last trim
        self._next_refusal_log = 0.0  # loop time
        self._trim_handle: asyncio.TimerHandle | None = None
        self._handshaking: set[asyncio.BaseTransport] = set()

    def __call__(self, *args: Any, **kwargs: Any) -> asyncio.BaseProtocol:
        if self._full():
            # Checked here as well as when admitting, so a refused connection never gets TLS
            # or HTTP state (the authoritative count is in _admit: several accepts can be made
            # before any of them is connected).
            return _Refused(self)
        connection = _Connection(
            self, self._factory(*args, **kwargs), counted=not self._ssl_context
        )
        if self._ssl_context is None:
            return connection
        assert self._read_buffer is not None
        return _GatedSSLProtocol(self, connection, self._ssl_context, self._read_buffer)

    def _full(self) -> bool:
        cap = self.limits.max_connections
        return bool(cap) and self.active >= cap

    def _admit(self, transport: asyncio.BaseTransport) -> bool:
        if self._full():
            self._refuse(transport)
            return False
        self.active += 1
        if self.active > self._peak:
            self._peak = self.active
        return True

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        self.refused += 1
        transport.abort()  # type: ignore[attr-defined]
        # Refusals are otherwise silent: say so, once a minute at most while they go on.
        now = asyncio.get_running_loop().time()
        if now >= self._next_refusal_log:
            self._next_refusal_log = now + _REFUSAL_LOG_EVERY
            _log.warning(
                "refusing connections: %d open, the cap (max connections); %d refused so far",
                self.active,
                self.refused,
            )

    def _release(self) -> None:
        self.active -= 1
        if self._peak - self.active >= _TRIM_AFTER_CLOSES and self._trim_handle is None:
            loop = asyncio.get_running_loop()
            self._trim_handle = loop.call_later(_TRIM_DELAY, self._trim)

    def _trim(self) -> None:
        self._trim_handle = None
        self._peak = self.active
        release_free_memory()

    def abort_handshakes(self) -> None:
        """Abort connections still in their TLS handshake (at shutdown: they hold no request,
        and asyncio's ``Server.wait_closed`` would wait for them)."""
        for transport in list(self._handshaking):
            transport.abort()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop the pending trim (the gate's loop is going away)."""
        if self._trim_handle is not None:
            self._trim_handle.cancel()
            self._trim_handle = None


class _Refused(asyncio.Protocol):
    def __init__(self, gate: ConnectionGate) -> None:
        self._gate = gate

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._gate._refuse(transport)


class _GatedSSLProtocol(sslproto.SSLProtocol):
    """asyncio's TLS protocol, admitted by the gate, reading through the gate's buffer."""

    # What __init__ allocates (then dropped for the shared buffer) and the most one
    # SSLObject.read() returns (a TLS record carries at most 16 KiB anyway).
    max_size = 16 * 1024

    def __init__(
        self,
        gate: ConnectionGate,
        app_protocol: asyncio.Protocol,
        context: ssl.SSLContext,
        read_buffer: memoryview,
    ) -> None:
        limits = gate.limits
        super().__init__(
            asyncio.get_running_loop(),
            app_protocol,
            context,
            # No waiter: nothing awaits this handshake (a future nobody reads would log every
            # failed handshake as "exception never retrieved"); asyncio handles None.
            None,  # type: ignore[arg-type]
            server_side=True,
            # typeshed says int; asyncio hands it to call_later, which takes float.
            ssl_handshake_timeout=limits.tls_handshake_timeout or None,  # type: ignore[arg-type]
            ssl_shutdown_timeout=_TLS_SHUTDOWN_TIMEOUT,
        )
        self._gate = gate
        self._admitted = False
        # get_buffer() hands out _ssl_buffer_view (recv_into fills it) and buffer_updated()
        # copies it into the incoming BIO at once: nothing is kept there between callbacks.
        self._ssl_buffer = read_buffer.obj
        self._ssl_buffer_view = read_buffer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._gate._admit(transport):
            return
        self._admitted = True
        self._gate._handshaking.add(transport)
        super().connection_made(transport)

    def _start_handshake(self) -> None:
        # asyncio's, less its first _do_handshake(): the server speaks second, so until the
        # client's first bytes OpenSSL has nothing to do, and asking it at once makes it
        # allocate its record buffers (~33 KB measured) for a connection that may never send a
        # byte. The first bytes reach _do_handshake() through buffer_updated() (the state is
        # DO_HANDSHAKE); the handshake timeout runs from now, as asyncio's does.
        loop = self._loop
        self._handshake_start_time = loop.time() if loop.get_debug() else None
        self._set_state(sslproto.SSLProtocolState.DO_HANDSHAKE)  # type: ignore[attr-defined]
        timeout = self._ssl_handshake_timeout  # asyncio's default filled in when None was given
        assert timeout is not None
        self._handshake_timeout_handle = loop.call_later(timeout, self._check_handshake_timeout)

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if self._transport is not None:
            self._gate._handshaking.discard(self._transport)
        super()._on_handshake_complete(handshake_exc)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._transport is not None:
            self._gate._handshaking.discard(self._transport)
        try:
            super().connection_lost(exc)
        finally:
            if self._admitted:
                self._admitted = False
                self._gate._release()


_LOST = asyncio.Protocol()  # every method a no-op: what a closed connection delegates to


class _Connection(asyncio.Protocol):
    """Between the transport (plain, or TLS's application side) and the HTTP protocol: the
    header timer, and for plain connections the gate's count."""

    def __init__(self, gate: ConnectionGate, inner: asyncio.Protocol, *, counted: bool) -> None:
        self._gate = gate
        self._inner = inner
        self._counted = counted
        self._admitted = False
        self._transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._in_request = 0  # requests handed to the app and not finished
        app = getattr(inner, "app", None)
        if app is not None:
            inner.app = _RequestWatch(app, self)  # type: ignore[attr-defined]

    # -- asyncio.Protocol, delegated
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._counted:
            if not self._gate._admit(transport):
                return
            self._admitted = True
        self._transport = transport
        self._arm()  # the first request's head is due
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self._in_request and self._timer is None:
            self._arm()  # a later request began (or a body nobody reads keeps coming)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        try:
            if self._transport is not None:
                self._inner.connection_lost(exc)
        finally:
            # The HTTP protocol holds its transport, whose TLS side holds this connection: a
            # reference cycle, freed only by a full collection — and the emulator freezes the
            # survivors of full collections (pycm.sim.heap), so a connection open during one
            # would stay for good. Letting go of the protocol breaks the cycle: it is freed as
            # soon as its last request ends.
            self._inner, self._transport = _LOST, None
            if self._admitted:
                self._admitted = False
                self._gate._release()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    # -- the header timer
    def _arm(self) -> None:
        timeout = self._gate.limits.read_header_timeout
        if timeout:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(timeout, self._header_timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _header_timed_out(self) -> None:
        self._timer = None
        if self._in_request or self._transport is None or self._transport.is_closing():
            return
        self._gate.header_timeouts += 1
        _log.debug("closing a connection that sent no complete request head in time")
        self._transport.abort()  # type: ignore[attr-defined]

    def request_started(self) -> None:
        self._disarm()
        self._in_request += 1

    def request_finished(self, *, unread_body: bool = False) -> None:
        self._in_request -= 1
        if unread_body and self._timer is None:
            # The HTTP protocol now discards the rest of the body as it comes (uvicorn keeps
            # the connection for the next request). The client gets LINGER to read the answer
            # and stop sending; a closed-at-once connection with unread input would be reset,
            # and a reset can destroy the answer before the client reads it (why Go waits
            # 500 ms and nginx lingers). Then, unless a new request began, it is aborted.
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(LINGER, self._unread_body_lingered)

    def _unread_body_lingered(self) -> None:
        self._timer = None
        if self._in_request or self._transport is None or self._transport.is_closing():
            return
        self._gate.unread_body_closes += 1
        self._transport.abort()  # type: ignore[attr-defined]


def _declared_body(headers: Any) -> int:
    """The request's Content-Length; -1 for a chunked body; 0 for none."""
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0  # the HTTP parser refused it already
        if name == b"transfer-encoding":
            return -1
    return 0


class _RequestWatch:
    """The per-connection ASGI app wrapper: tells the connection a head arrived and a request
    ended, and closes a connection whose large request body was left unread."""

    __slots__ = ("app", "connection")

    def __init__(self, app: Any, connection: _Connection) -> None:
        self.app = app
        self.connection = connection

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.connection.request_started()
        unread = False
        try:
            declared = _declared_body(scope.get("headers", ())) if scope["type"] == "http" else 0
            if declared == -1 or declared > MAX_UNREAD_BODY:
                unread = await _run_counting_body(self.app, scope, receive, send, declared)
            else:
                await self.app(scope, receive, send)
        finally:
            self.connection.request_finished(unread_body=unread)


async def _run_counting_body(app: Any, scope: Any, receive: Any, send: Any, declared: int) -> bool:
    """Run ``app``; True when it left more than MAX_UNREAD_BODY of the request body (or an
    unknown amount of a chunked one) unread."""
    received = 0
    finished = False

    async def counting_receive() -> Any:
        nonlocal received, finished
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            finished = not message.get("more_body", False)
        else:
            finished = True  # disconnected
        return message

    await app(scope, counting_receive, send)
    return not finished and (declared == -1 or declared - received > MAX_UNREAD_BODY)


_FILES_RESERVE = 256  # descriptors left for everything else (clients, watches, files, logs)


def fit_open_files(limits: ServingLimits) -> ServingLimits:
    """``limits`` with a connection cap the process's open-files limit can hold: the soft
    limit is raised toward the hard one as Go's runtime does at start-up; when even that is
    too low, the cap is lowered (a warning says so) — otherwise accept() fails with EMFILE and
    asyncio stops accepting for a second at a time, /healthz included."""
    cap = limits.max_connections
    if not cap:
        return limits
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = cap + _FILES_RESERVE
    if soft == resource.RLIM_INFINITY or soft >= want:
        return limits
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= want:
        return limits
    fitted = max(1, soft - _FILES_RESERVE)
    _log.warning(
        "the open-files limit (%d) holds at most %d connections; serving at most that many",
        soft,
        fitted,
    )
    return dataclasses.replace(limits, max_connections=fitted)
