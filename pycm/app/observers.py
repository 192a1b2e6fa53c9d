"""The OBSERVERS group: the bus's subscribers that start before anything emits — the trace
recorder (``--trace-file``), the OpenTelemetry sink, the state reducer — and what the
debug routes and the dashboard read of them (the reducer's snapshot, a key's last error)."""

from __future__ import annotations

import functools
from typing import Any

from pycm.app.errors import ManagerError
from pycm.app.parts import Parts
from pycm.app.runnables import Group
from pycm.otel import start_otel_sink
from pycm.server.debug import Snapshot
from pycm.server.debug_queues import LastError
from pycm.trace.recorder import Recorder

__all__ = ["Observers"]


class Observers:
    """Built once, before anything runs; :meth:`start` adds them to the OBSERVERS group."""

    def __init__(self, parts: Parts) -> None:
        self.config = parts.config
        self.bus = parts.bus
        self.identity = parts.identity
        self.metrics_registry = parts.metrics_registry
        self.groups = parts.groups
        self.recorder: Recorder | None = None
        # The share of traces exported by ratio (0 without an exporter): the traceparent flag.
        self.export_ratio = 0.0
        self.snapshot: Snapshot | None = None
        # What a backing-off key last failed with, from the state reducer (GET /debug/pycm/queues).
        self.last_error: LastError | None = None
        self.state: Any = None  # the reducer's State (object histories are read from it)

    def start(self) -> None:
        cfg = self.config
        trace_file = cfg.tracing.trace_file
        if trace_file:
            self.recorder = Recorder(trace_file)
            # since=0: the ring still holds what came before (FlagsParsed), so it is recorded.
            recorded = self.bus.subscribe(name="recorder", maxsize=16384, since=0)
            self.groups.add(
                Group.OBSERVERS, "trace recorder", functools.partial(self.recorder.run, recorded)
            )
        try:  # --otlp-endpoint / OTEL_EXPORTER_OTLP_*: None when neither asks for export
            otel = start_otel_sink(self.bus, cfg.tracing, self.identity, self.metrics_registry)
        except ValueError as exc:
            raise ManagerError(f"invalid OpenTelemetry configuration: {exc}") from None
        if otel is not None:
            self.export_ratio = cfg.tracing.sample_ratio
            self.groups.add(Group.OBSERVERS, "otel sink", otel.run)  # it flushes, bounded
        try:
            from pycm.trace.state import State
        except ImportError:  # the reducer module is optional for the manager to run
            return
        from pycm.trace.state.queue_contents import last_error

        state = State(histories=cfg.tracing.object_histories)
        sub = self.bus.subscribe(name="state", maxsize=65536, since=0)

        async def feed() -> None:
            while True:
                await sub.wait()
                for event in sub.drain():
                    state.apply(event)

        self.snapshot = state.snapshot
        instance = self.bus.instance
        self.last_error = lambda controller, key: last_error(state, instance, controller, key)
        self.state = state
        self.groups.add(Group.OBSERVERS, "state reducer", feed)

    async def close(self) -> None:
        """Close the trace file, once the last event (ManagerStopped) was emitted."""
        if self.recorder is not None:
            await self.recorder.close()
