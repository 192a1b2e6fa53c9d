"""The snapshot's schema, declared once: what ``State.snapshot()`` returns, the SSE
``snapshot`` payload and ``GET /debug/pycm/state`` carry, and what views read.

Each domain module declares its section (``InstanceSnapshot`` in
:mod:`~pycm.trace.state.startup`, ``LeaseSnapshot`` in :mod:`~pycm.trace.state.leases`, ...);
this module assembles them under :class:`Snapshot`. Every field is annotated with its meaning
(``Annotated[type, "text"]``): docs/state.md is generated from these declarations
(``pycm trace state-schema --markdown``, ``make state-doc``) and a test keeps it current and
checks that real snapshots have exactly these keys and types.

Versioning: ``v`` is :data:`SNAPSHOT_VERSION`. Adding a field keeps the version (readers
must ignore fields they do not know and default fields they miss); renaming, removing or
changing the meaning of a field raises it.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from pycm.trace.state.api import ApiSnapshot
from pycm.trace.state.controllers import ControllerSnapshot
from pycm.trace.state.informers import InformerSnapshot
from pycm.trace.state.leases import LeaseSnapshot
from pycm.trace.state.object_steps import ObjectHistorySnapshot
from pycm.trace.state.queues import QueueSnapshot
from pycm.trace.state.startup import InstanceSnapshot
from pycm.trace.state.steps import InFlightSnapshot

__all__ = ["SNAPSHOT_VERSION", "CountersSnapshot", "ErrorEntry", "Snapshot"]

SNAPSHOT_VERSION = 1


class CountersSnapshot(TypedDict):
    """Counts about the stream itself."""

    applied: Annotated[int, "events applied"]
    lost: Annotated[int, "events lost upstream (the sum of bus.lagged events' lost)"]
    lag_events: Annotated[int, "bus.lagged events"]
    out_of_order: Annotated[int, "events whose seq was not above their instance's last"]
    in_flight_evicted: Annotated[int, "open steps evicted (the in-flight table was full)"]
    malformed: Annotated[int, "events whose attributes had the wrong types (not folded)"]
    unknown: Annotated[dict[str, int], 'events of unknown kinds, by kind ("(other)" past 64)']


class ErrorEntry(TypedDict):
    """One recent error (a failed step, an error result, a lost lease, ...)."""

    ts: Annotated[int, "when (Unix ns)"]
    instance: Annotated[str, "where"]
    kind: Annotated[str, "the event kind that reported it"]
    text: Annotated[str, "what happened"]
    trace_id: Annotated[str, 'its trace ("" none)']


class Snapshot(TypedDict):
    """The folded state of an event stream (times are Unix ns, ``*_ms`` milliseconds; rates are
    per second over the last 10 s of event time ending at ``now_ts``)."""

    v: Annotated[int, "the snapshot format version"]
    now_ts: Annotated[int, "the newest event ts seen"]
    counters: Annotated[CountersSnapshot, "counts about the stream itself"]
    instances: Annotated[dict[str, InstanceSnapshot], "instance name -> replica"]
    leases: Annotated[dict[str, LeaseSnapshot], "namespace/name -> lease"]
    informers: Annotated[dict[str, dict[str, InformerSnapshot]], "instance -> resource -> informer"]
    controllers: Annotated[
        dict[str, dict[str, ControllerSnapshot]], "instance -> controller name -> controller"
    ]
    queues: Annotated[dict[str, dict[str, QueueSnapshot]], "instance -> queue name -> queue"]
    api: Annotated[dict[str, ApiSnapshot], "instance -> its API requests"]
    in_flight: Annotated[InFlightSnapshot, "steps begun and not ended"]
    errors: Annotated[list[ErrorEntry], "recent errors, oldest first (the last 200)"]
    objects: Annotated[
        dict[str, ObjectHistorySnapshot],
        "resource/namespace/name -> the history of each object asked for (the stream's "
        "objects=, State.snapshot(objects=...)); empty otherwise",
    ]
