"""EventRecorder: ``event(obj, type, reason, message)`` queues an Event and returns at once.

A writer task (``run()``) correlates each event (see :mod:`pycm.record.correlator`) and writes
it through an :class:`EventSink` — create for new events, patch for repeats — retrying a few
times with backoff. The queue between callers and the writer is bounded (client-go's
broadcaster holds 1000): when it is full the newest event is dropped and counted, because a
worker must never wait on event writing. Every outcome is an ``event.recorded`` trace event
(without the message: names, reasons and counts only).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import deque
from typing import Any, Protocol

from pycm.kube.errors import is_not_found
from pycm.record.correlator import CorrelatorOptions, EventCorrelator
from pycm.trace.bus import Bus, default_bus
from pycm.trace.kinds import EventAction, EventRecorded
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["EventRecorder", "EventSink"]

log = logging.getLogger(__name__)

QUEUE_LENGTH = 1000
WRITE_ATTEMPTS = 3
RETRY_DELAY_S = 1.0


class EventSink(Protocol):
    """Where events go (pycm.kube.Client fits through a small adapter)."""

    async def create_event(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def patch_event(
        self, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]: ...


def _time_text(wall_ns: int) -> str:
    return dt.datetime.fromtimestamp(wall_ns / 1e9, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(
        self,
        sink: EventSink,
        *,
        component: str,
        host: str = "",
        clock: Clock = REAL_CLOCK,
        bus: Bus | None = None,
        queue_length: int = QUEUE_LENGTH,
        correlator_options: CorrelatorOptions | None = None,
    ) -> None:
        self._sink = sink
        self.component = component
        self.host = host
        self._clock = clock
        self._bus = bus or default_bus()
        # client-go's broadcaster option WithCorrelatorOptions; its clock defaults to ours.
        self._correlator = EventCorrelator(
            correlator_options,
            clock=None if correlator_options and correlator_options.clock else clock,
        )
        self._queue: deque[dict[str, Any]] = deque()
        self._queue_length = queue_length
        self._wakeup = asyncio.Event()
        self.dropped = 0
        self.written = 0

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (a plain API object). Never blocks, never raises."""
        meta = obj.get("metadata", {})
        wall_ns = self._clock.wall_ns()
        now = _time_text(wall_ns)
        namespace = meta.get("namespace") or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name', '')}.{wall_ns:x}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        if len(self._queue) >= self._queue_length:
            self.dropped += 1
            self._emit(body, EventAction.DROPPED)
            return
        self._queue.append(body)
        self._wakeup.set()

    def eventf(self, obj: dict[str, Any], type_: str, reason: str, fmt: str, *args: object) -> None:
        self.event(obj, type_, reason, fmt % args if args else fmt)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _emit(self, body: dict[str, Any], action: EventAction) -> None:
        obj = body.get("involvedObject", {})
        self._bus.point(
            EventRecorded(
                type=body.get("type", ""),
                reason=body.get("reason", ""),
                object_kind=obj.get("kind", ""),
                namespace=obj.get("namespace", ""),
                name=obj.get("name", ""),
                count=int(body.get("count", 1)),
                action=action,
            )
        )

    async def run(self) -> None:
        """The writer: correlate and write queued events until cancelled."""
        while True:
            while not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            await self._write(self._queue.popleft())

    async def flush(self) -> None:
        """Write everything queued now (for shutdown and tests)."""
        while self._queue:
            await self._write(self._queue.popleft())

    async def _write(self, body: dict[str, Any]) -> None:
        result = self._correlator.correlate(body)
        if result.skip:
            self._emit(body, EventAction.SPAM_FILTERED)
            return
        event = result.event
        namespace = event["metadata"]["namespace"]
        # client-go's recordEvent: a count above 1 updates the Event first written.
        patch = result.patch if int(event.get("count") or 0) > 1 else None
        for attempt in range(WRITE_ATTEMPTS):
            try:
                written: Any = None
                action = EventAction.PATCHED
                if patch is not None:
                    try:
                        written = await self._sink.patch_event(
                            namespace, event["metadata"]["name"], patch
                        )
                    except Exception as exc:
                        if not is_not_found(exc):
                            raise
                        # The repeated Event was deleted (TTL): write it anew, as client-go,
                        # without the resourceVersion of the deleted one.
                        meta = {
                            k: v for k, v in event["metadata"].items() if k != "resourceVersion"
                        }
                        written = await self._sink.create_event(
                            namespace, {**event, "metadata": meta}
                        )
                else:
                    written = await self._sink.create_event(namespace, event)
                    action = EventAction.CREATED
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt + 1 == WRITE_ATTEMPTS:
                    log.warning("could not write event %s: %s", event.get("reason"), exc)
                    self.dropped += 1
                    self._emit(event, EventAction.DROPPED)
                    return
                await self._clock.sleep(RETRY_DELAY_S * (attempt + 1))
                continue
            self.written += 1
            if isinstance(written, dict) and "involvedObject" in written:
                # The server's name, count and resourceVersion (client-go's UpdateState).
                self._correlator.update_state(written)
            self._emit(event, EventAction.AGGREGATED if result.aggregated else action)
            return
