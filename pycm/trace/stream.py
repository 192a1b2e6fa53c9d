"""The one client of a manager's event stream (``GET /debug/pycm/events``), for every viewer.

`pycm top`, `pycm demo --no-tui` and the web dashboard's fan-in read a replica through
:class:`StreamClient`, which pushes into a :class:`StreamSink`: decoded events in seq order,
state snapshots, and a typed :class:`SourceStatus` whenever the connection's state changes.

Behaviour:

- **SSE** is parsed by :class:`SseParser` (the WHATWG ``text/event-stream`` rules pycm needs);
  ``event: trace`` messages are decoded by the codec (an unknown kind arrives as
  :class:`~pycm.trace.codec.UnknownEvent`; a line that is not an event is counted in
  ``malformed``), ``event: snapshot`` messages are handed over as parsed JSON.
- **Resume**: a reconnect asks for ``since=<seq of the last event pushed>``, so the server's
  ring backfills the gap; what it no longer holds arrives as a ``bus.lagged`` event (a lag
  notice: its ``lost`` is added to :attr:`StreamClient.lost` and the event is pushed, so a
  State counts it). Events at or below the last seq are never pushed twice.
- **A restarted server** starts its seqs again from 1. The client notices it two ways: the
  first snapshot after a reconnect shows one of the instances it knows with another
  ``first_ts`` (a new process), or the first event after a reconnect has a seq at or below the
  last one. It then reconnects at once with ``since=0``, so the new run's ring is delivered
  from its start, and continues from there.
- **Backoff**: 0.5 s doubling to 30 s with full jitter between attempts (so several viewers of
  a restarted replica do not reconnect in step), reset once a connection delivers.
- **Auth and TLS**: a bearer token, or a token file read again before every attempt (a rotated
  token is picked up); a client certificate; a CA file (read before every attempt: a demo
  replica writes its certificate when it starts), an :class:`ssl.SSLContext`, or no
  verification.
- **Status**: :class:`SourceState` ``connecting`` → ``connected``; a failed attempt reports
  why (``reconnecting``, ``unauthorized`` on 401, ``forbidden`` on 403, ``tls_error`` when the
  handshake fails, ``failed`` when the client's own configuration cannot be used: an unreadable
  token file, CA or client certificate) with the reason and the next delay. Every one of them
  is retried with the backoff — a token may be fixed, a file may appear — so :meth:`run` only
  ends when it is cancelled; it never raises for network, auth or configuration errors.
"""

from __future__ import annotations

import asyncio
import enum
import random
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import orjson

from pycm.trace.codec import CodecError, decode
from pycm.trace.events import Event
from pycm.trace.kinds import SubscriberLagged
from pycm.util.backoff import Backoff

__all__ = [
    "EVENTS_PATH",
    "RECONNECT_BACKOFF",
    "SourceState",
    "SourceStatus",
    "SseMessage",
    "SseParser",
    "StreamClient",
    "StreamSink",
]

EVENTS_PATH = "/debug/pycm/events"
# Reconnect: 0.5 s doubling to 30 s with full jitter; reset once a connection delivers.
RECONNECT_BACKOFF = Backoff(0.5, factor=2.0, jitter=1.0, cap=30.0)
# The server pings an idle stream every 15 s; two missed pings mean the stream is dead.
READ_TIMEOUT_S = 35.0
CONNECT_TIMEOUT_S = 10.0


# ---------------------------------------------------------------------------------------------
# Source status
# ---------------------------------------------------------------------------------------------


class SourceState(enum.Enum):
    """The state of one source of events; the values are the wire strings (dashboard API)."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    TLS_ERROR = "tls_error"
    FAILED = "failed"
    ENDED = "ended"

    @property
    def healthy(self) -> bool:
        """Events flow (or flowed to their end)."""
        return self in (SourceState.CONNECTED, SourceState.ENDED)

    @property
    def broken(self) -> bool:
        """Not receiving, for a reason a viewer should see."""
        return self not in (SourceState.CONNECTING, SourceState.CONNECTED, SourceState.ENDED)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A source's state and, for the states that have one, a one-line reason."""

    state: SourceState
    reason: str = ""

    def to_dict(self) -> dict[str, str]:
        """The wire form: ``{"state": "connected", "reason": ""}``."""
        return {"state": self.state.value, "reason": self.reason}


class StreamSink(Protocol):
    """What a source pushes into. ``source`` is the source's name."""

    def push(self, source: str, events: Sequence[Event]) -> None: ...

    def push_snapshot(self, source: str, snapshot: Mapping[str, Any]) -> None: ...

    def set_status(self, source: str, status: SourceStatus) -> None: ...


# ---------------------------------------------------------------------------------------------
# SSE
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SseMessage:
    event: str  # "message" when the stream did not name one
    data: str
    id: str  # the last event id seen on the stream ("" before any)


class SseParser:
    """Incremental ``text/event-stream`` parser. Feed it decoded lines without their terminators
    (``httpx.Response.aiter_lines`` splits on ``\\n``, ``\\r\\n`` and ``\\r``); :meth:`feed`
    returns a :class:`SseMessage` when a blank line ends one.

    Rules kept from the spec: a line starting with ``:`` is a comment; ``field: value`` drops
    one leading space of the value; a line without ``:`` is a field with an empty value; several
    ``data`` lines join with ``\\n``; an ``id`` containing NUL is ignored; the last ``id``
    persists across messages; a message without data is not dispatched; unknown fields are
    ignored; ``retry`` is kept as the server's suggested reconnection delay (ms), if an integer.
    Invariant: ``_data`` holds the data lines of the message being read.
    """

    __slots__ = ("_data", "_event", "last_id", "retry_ms")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self.last_id = ""
        self.retry_ms: int | None = None

    def feed(self, line: str) -> SseMessage | None:
        """Consume one line; the message it completes, if any."""
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SseMessage | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SseMessage(event=event or "message", data="\n".join(data), id=self.last_id)


# ---------------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------------

Sleep = Callable[[float], Awaitable[None]]


class _ConfigError(Exception):
    """The client's own configuration cannot be used (reported as FAILED)."""


class _Restarted(Exception):
    """The server restarted: reconnect at once from its new run's start."""


def _is_tls_error(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # httpx wraps the ssl error in a ConnectError, itself maybe wrapped
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _short(exc: BaseException) -> str:
    text = str(exc)
    return type(exc).__name__ + (f": {text}" if text else "")


class StreamClient:
    """One replica's ``GET /debug/pycm/events``, pushed into a :class:`StreamSink`.

    ``url`` is the replica's serving URL (``https://127.0.0.1:10257``; a URL that already ends
    with the events path is used as it is). ``kinds`` asks the server for those kinds only
    (wire names or ``prefix.*``); ``snapshots=False`` asks for no snapshots; ``since`` starts
    with a backlog (0: all the server's ring holds). ``run_id``, if given, names the server's
    current run (a process generation its supervisor knows): when it changes, the client starts
    again from ``since=0`` without waiting to notice the restart in the stream. ``transport``,
    ``backoff``, ``sleep`` and ``rng`` are for tests.

    Invariant: ``last_seq`` is the seq of the newest event pushed in the server's current run
    (``None`` before the first connection, which starts live, without a backlog).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        token_file: str | None = None,
        client_cert: tuple[str, str] | None = None,
        verify: ssl.SSLContext | bool = True,
        ca_file: str | None = None,
        kinds: Sequence[str] = (),
        snapshots: bool = True,
        since: int | None = None,
        run_id: Callable[[], object] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: Backoff = RECONNECT_BACKOFF,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        base = url.rstrip("/")
        self.server = base.removesuffix(EVENTS_PATH)  # the replica's serving URL
        self.url = self.server + EVENTS_PATH
        self.name = name or self.server.split("://", 1)[-1]
        self._token = token or ""
        self._token_file = token_file or ""
        self._client_cert = client_cert
        self._verify = verify
        self._ca_file = ca_file or ""
        self._kinds = ",".join(kinds)
        self._snapshots = snapshots
        self._transport = transport
        self._timer = backoff.timer(rng)
        self._initial_delay = backoff.initial
        self._sleep = sleep
        self.last_seq: int | None = since
        self.status = SourceStatus(SourceState.CONNECTING)
        self.connects = 0
        self.restarts = 0  # server restarts noticed
        self.malformed = 0  # messages that were not events or snapshots
        self.duplicates = 0  # events at or below last_seq, not pushed again
        self.lost = 0  # events the server's ring no longer held (lag notices)
        self._first_ts: dict[str, int] = {}  # instance -> first_ts of the run we read
        self._run_id = run_id
        self._last_run_id: object = run_id() if run_id is not None else None

    # --- running --------------------------------------------------------------------------------

    async def run(self, sink: StreamSink) -> None:
        """Read the stream into ``sink`` until cancelled; reconnects with backoff forever."""
        while True:
            self._set(sink, SourceStatus(SourceState.CONNECTING))
            if self._run_id is not None:
                run_id = self._run_id()
                if run_id != self._last_run_id:
                    self._last_run_id = run_id
                    self.restarts += 1
                    self.last_seq = 0
            try:
                outcome = await self._attempt(sink)
            except _Restarted:
                self.restarts += 1
                self.last_seq = 0
                continue  # at once: the new run's ring holds what we have not seen
            delay = self._timer.next_delay() or self._initial_delay
            reason = f"{outcome.reason}; retrying in {delay:.1f}s"
            self._set(sink, SourceStatus(outcome.state, reason))
            await self._sleep(delay)

    def _set(self, sink: StreamSink, status: SourceStatus) -> None:
        if status != self.status:
            self.status = status
            sink.set_status(self.name, status)
        elif status.state is SourceState.CONNECTING:
            sink.set_status(self.name, status)  # every attempt is shown, even a repeated one

    async def _settings(self) -> tuple[dict[str, str], ssl.SSLContext | bool]:
        """The headers and TLS settings of one attempt (files are read again each time)."""
        headers = {"Accept": "text/event-stream"}
        token = self._token
        if self._token_file:
            try:
                token = (await asyncio.to_thread(_read_text, self._token_file)).strip()
            except OSError as exc:
                raise _ConfigError(
                    f"token file {self._token_file}: {exc.strerror or exc}"
                ) from None
            if not token:
                raise _ConfigError(f"token file {self._token_file} is empty")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        verify = self._verify
        if self._ca_file or self._client_cert:
            verify = await asyncio.to_thread(self._context)
        return headers, verify

    def _context(self) -> ssl.SSLContext:
        try:
            if self._ca_file:
                context = ssl.create_default_context(cafile=self._ca_file)
            elif isinstance(self._verify, ssl.SSLContext):
                context = self._verify
            else:
                context = ssl.create_default_context()
                if not self._verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
            if self._client_cert:
                context.load_cert_chain(*self._client_cert)
        except (OSError, ssl.SSLError) as exc:
            raise _ConfigError(f"TLS configuration: {exc}") from None
        return context

    def _params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self.last_seq is not None:
            params["since"] = str(self.last_seq)
        if self._kinds:
            params["kinds"] = self._kinds
        if not self._snapshots:
            params["snapshot"] = "0"
        return params

    async def _attempt(self, sink: StreamSink) -> SourceStatus:
        """One connection; the status saying why it ended. Raises only :class:`_Restarted` and
        cancellation."""
        try:
            headers, verify = await self._settings()
        except _ConfigError as exc:
            return SourceStatus(SourceState.FAILED, str(exc))
        timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
        try:
            async with (
                httpx.AsyncClient(
                    verify=verify, transport=self._transport, headers=headers, timeout=timeout
                ) as client,
                client.stream("GET", self.url, params=self._params()) as response,
            ):
                code = response.status_code
                if code != 200:
                    body = (await response.aread())[:200].decode(errors="replace").strip()
                    reason = f"HTTP {code}" + (f": {body}" if body else "")
                    if code == 401:
                        return SourceStatus(SourceState.UNAUTHORIZED, reason)
                    if code == 403:
                        return SourceStatus(SourceState.FORBIDDEN, reason)
                    return SourceStatus(SourceState.RECONNECTING, reason)
                self.connects += 1
                self._set(sink, SourceStatus(SourceState.CONNECTED))
                await self._read(response, sink)
                return SourceStatus(SourceState.RECONNECTING, "the stream ended")
        except _Restarted:
            raise
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            if _is_tls_error(exc):
                return SourceStatus(SourceState.TLS_ERROR, _short(exc))
            return SourceStatus(SourceState.RECONNECTING, _short(exc))

    async def _read(self, response: httpx.Response, sink: StreamSink) -> None:
        parser = SseParser()
        first_event = True
        first_snapshot = True
        delivered = False
        name = self.name
        for_sink = sink.push
        async for line in response.aiter_lines():
            message = parser.feed(line)
            if message is None:
                continue
            if not delivered:
                delivered = True
                self._timer.reset()
            if message.event == "trace":
                event = self._decode(message.data)
                if event is None:
                    continue
                seq = event.seq if event.seq.__class__ is int else 0
                last = self.last_seq
                if seq and last is not None and seq <= last:
                    if first_event and last:
                        raise _Restarted  # the server's seqs began again
                    self.duplicates += 1
                    continue
                if seq:
                    first_event = False  # a lag notice (seq 0) may come before the first
                    self.last_seq = seq
                if isinstance(event, SubscriberLagged) and event.lost.__class__ is int:
                    self.lost += event.lost
                for_sink(name, (event,))  # the sink buffers; consumers drain per tick
            elif message.event == "snapshot":
                snapshot = self._snapshot(message.data)
                if snapshot is None:
                    continue
                if first_snapshot:
                    first_snapshot = False
                    if self._run_changed(snapshot):
                        raise _Restarted
                sink.push_snapshot(name, snapshot)

    def _run_changed(self, snapshot: Mapping[str, Any]) -> bool:
        """Whether an instance this client read is a new process now (another ``first_ts``)."""
        instances = snapshot.get("instances")
        if not isinstance(instances, dict):
            return False
        changed = False
        for instance, record in instances.items():
            first = record.get("first_ts") if isinstance(record, dict) else None
            if not isinstance(first, int) or not first:
                continue
            known = self._first_ts.get(instance)
            if known is not None and known != first and self.last_seq:
                changed = True
            self._first_ts[instance] = first
        return changed

    def _decode(self, data: str) -> Event | None:
        try:
            return decode(data)
        except (CodecError, TypeError, ValueError):
            self.malformed += 1
            return None

    def _snapshot(self, data: str) -> dict[str, Any] | None:
        try:
            snapshot = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.malformed += 1
            return None
        if not isinstance(snapshot, dict):
            self.malformed += 1
            return None
        return snapshot


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
