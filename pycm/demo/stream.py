"""One replica's event stream for ``pycm demo --no-tui``: the shared stream client
(:class:`pycm.trace.stream.StreamClient`) and the one-line form (:mod:`pycm.trace.format`),
with the demo's policy of hiding repeats.

The replica serves a self-signed pair it writes into the ``--cert-dir`` the demo gives it; the
stream trusts exactly that file (it holds the serving certificate and its CA, and is read
again before every attempt: it appears once the replica started), so nothing skips TLS
verification. Authentication is the emulator's admin token (the replica reviews it with a
TokenReview, and authorizes it with a SubjectAccessReview).

Reconnecting: after an error or an end the client waits ``RECONNECT_DELAY`` and resumes after
the last seq it delivered — unless the replica was restarted (its generation changed), whose
seq starts again from 1, so it then starts from the beginning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pycm.trace.events import Event
from pycm.trace.format import attributes, format_event, kind_of
from pycm.trace.stream import SourceStatus, StreamClient
from pycm.util.backoff import Backoff

__all__ = ["KINDS", "EventFormatter", "ReplicaStream"]

KINDS = ("lease.*", "startup.*", "controller.*", "informers.*", "server.*")
RECONNECT_DELAY = 0.5
KIND_WIDTH = 24
VALUE_LIMIT = 60
# Attributes that change on every repetition (timings): ignored when deciding whether an event
# repeats the previous one of its kind (a standby's attempt each retry period, each renewal).
_VOLATILE = frozenset({"latency_ms", "waited_ms", "skew_ms"})
# Kinds that repeat every retry period while nothing changes: printed when their attributes
# change, not each time.
_REPEATING = frozenset({"lease.renewed", "lease.acquire_attempt"})
_OMIT = frozenset({"lease"})  # the demo has one lease


class EventFormatter:
    """Formats events as ``HH:MM:SS.mmm replica-a  lease.acquired  identity=… dur=…`` (the one-line
    form of :func:`~pycm.trace.format.format_event`, local time, aligned) and hides repeats.
    Invariant: ``_last[(replica, kind)]`` is the attribute tuple last printed."""

    def __init__(self, width: int = 9) -> None:
        self.width = width
        self._last: dict[tuple[str, str], tuple[tuple[str, object], ...]] = {}

    def format(self, replica: str, event: Event) -> str | None:
        """The line for this event, or None for a repeat that is not worth a line."""
        kind = kind_of(event)
        if kind in _REPEATING:
            key = tuple(
                (name, value)
                for name, value in attributes(event)
                if name not in _VOLATILE and name not in _OMIT
            )
            if self._last.get((replica, kind)) == key:
                return None
            self._last[(replica, kind)] = key
        else:
            self._last.pop((replica, "lease.renewed"), None)  # the next renewal shows again
        return format_event(
            event,
            utc=False,
            instance=replica,
            instance_width=self.width,
            kind_width=KIND_WIDTH,
            omit=_OMIT,
            value_limit=VALUE_LIMIT,
        )


class _Calls:
    """A :class:`~pycm.trace.stream.StreamSink` that calls ``on_event`` for each event."""

    def __init__(self, identity: str, on_event: Callable[[str, Event], None]) -> None:
        self.identity = identity
        self.on_event = on_event

    def push(self, source: str, events: Sequence[Event]) -> None:
        for event in events:
            self.on_event(self.identity, event)

    def push_snapshot(self, source: str, snapshot: Mapping[str, Any]) -> None:
        pass  # the demo asks for none

    def set_status(self, source: str, status: SourceStatus) -> None:
        pass  # not up yet, restarting, or gone: the client tries again shortly


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
        self.on_event = on_event
        self.client = StreamClient(
            url,
            name=identity,
            token=token,
            ca_file=str(cert_file),
            kinds=KINDS,
            snapshots=False,
            since=0,
            run_id=generation,
            backoff=Backoff(RECONNECT_DELAY, factor=0.0),
        )

    @property
    def last_seq(self) -> int:
        return self.client.last_seq or 0

    @property
    def connects(self) -> int:
        return self.client.connects

    async def run(self) -> None:
        await self.client.run(_Calls(self.identity, self.on_event))
