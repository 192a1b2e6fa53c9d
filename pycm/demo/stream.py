"""One replica's event stream: ``/debug/pycm/events`` over HTTPS, reconnecting, one line each.

The replica serves a self-signed pair it writes into the ``--cert-dir`` the demo gives it; the
stream trusts exactly that file (it holds the serving certificate and its CA), so nothing skips
TLS verification. Authentication is the emulator's admin token (the replica reviews it with a
TokenReview, and authorizes it with a SubjectAccessReview).

Reconnecting: after an error or an end the stream waits ``RECONNECT_DELAY`` and connects again
with ``since`` = the last seq it printed — unless the replica was restarted (its generation
changed), whose seq starts again from 1, so it then starts from the beginning.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from pycm.trace.codec import CodecError, decode, to_dict
from pycm.trace.events import ENVELOPE_FIELDS, Event

__all__ = ["KINDS", "EventFormatter", "ReplicaStream"]

KINDS = "lease.*,startup.*,controller.*,informers.*,server.*"
RECONNECT_DELAY = 0.5
# Attributes that change on every repetition (timings): ignored when deciding whether an event
# repeats the previous one of its kind (a standby's attempt each retry period, each renewal).
_VOLATILE = frozenset({"latency_ms", "waited_ms", "skew_ms"})
# Kinds that repeat every retry period while nothing changes: printed when their attributes
# change, not each time.
_REPEATING = frozenset({"lease.renewed", "lease.acquire_attempt"})


class EventFormatter:
    """Formats events as ``HH:MM:SS.mmm replica-a  lease.acquired  transitions=0 …`` and hides
    repeats. Invariant: ``_last[(replica, kind)]`` is the attribute tuple last printed."""

    def __init__(self, width: int = 9) -> None:
        self.width = width
        self._last: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {}

    def format(self, replica: str, event: Event) -> str | None:
        """The line for this event, or None for a repeat that is not worth a line."""
        data = to_dict(event)
        kind = str(data.pop("kind", event.KIND))
        attrs = tuple(
            (k, v)
            for k, v in data.items()
            if k not in ENVELOPE_FIELDS and v not in ("", None, 0.0) and k != "lease"
        )
        if kind in _REPEATING:
            key = tuple(item for item in attrs if item[0] not in _VOLATILE)
            if self._last.get((replica, kind)) == key:
                return None
            self._last[(replica, kind)] = key
        else:
            self._last.pop((replica, "lease.renewed"), None)  # the next renewal shows again
        when = dt.datetime.fromtimestamp(event.ts / 1e9).strftime("%H:%M:%S.%f")[:-3]
        text = " ".join(f"{k}={_value(v)}" for k, v in attrs)
        if event.dur_ns:
            text = f"{text} took={event.dur_ns / 1e6:.0f}ms".strip()
        return f"{when} {replica:<{self.width}} {kind:<24} {text}".rstrip()


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


class ReplicaStream:
    """Reads one replica's stream until cancelled, calling ``on_event`` for each event."""

    def __init__(
        self,
        identity: str,
        url: str,
        cert_file: Path,
        token: str,
        on_event: Callable[[str, Event], None],
        generation: Callable[[], int],
    ) -> None:
        self.identity = identity
        self.url = url
        self.cert_file = cert_file
        self.token = token
        self.on_event = on_event
        self._generation = generation
        self.last_seq = 0
        self.connects = 0
        self._seq_generation = 0  # the replica generation last_seq belongs to

    async def run(self) -> None:
        while True:
            try:
                await self._once()
            except (httpx.HTTPError, ssl.SSLError, OSError):
                pass  # not up yet, restarting, or gone: try again shortly
            await asyncio.sleep(RECONNECT_DELAY)

    async def _once(self) -> None:
        if not self.cert_file.is_file():
            return
        context = await asyncio.to_thread(ssl.create_default_context, cafile=str(self.cert_file))
        generation = self._generation()
        if generation != self._seq_generation:
            self.last_seq, self._seq_generation = 0, generation
        params = {"kinds": KINDS, "snapshot": "0", "since": str(self.last_seq)}
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
        timeout = httpx.Timeout(5.0, read=None)
        async with (
            httpx.AsyncClient(verify=context, timeout=timeout) as http,
            http.stream(
                "GET", f"{self.url}/debug/pycm/events", params=params, headers=headers
            ) as response,
        ):
            if response.status_code != 200:
                return
            self.connects += 1
            kind, data = "", ""
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data = line[5:].strip()
                elif not line:
                    if kind == "trace" and data:
                        self._dispatch(data)
                    kind, data = "", ""

    def _dispatch(self, data: str) -> None:
        try:
            event = decode(data)
        except CodecError:
            return
        if event.seq <= self.last_seq:
            return
        self.last_seq = event.seq
        self.on_event(self.identity, event)
