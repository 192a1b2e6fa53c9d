"""The state model: every consumer's one view of an event stream (TUI, web, tests).

``state.apply(event)`` folds events into typed records, one module per domain; ``snapshot()``
returns the typed, versioned :class:`Snapshot` (:mod:`pycm.trace.state.schema`, documented in
docs/state.md) and :meth:`State.restore` rebuilds a state from one that continues exactly as
the original would have.

The state is pure: no I/O and no clock — time comes only from events' ``ts`` (rates are
computed against the newest ts seen). It accepts any stream (the live bus, SSE, a recording)
and tolerates anything:

- unknown kinds (:class:`~pycm.trace.codec.UnknownEvent`) are counted by kind name;
- :class:`~pycm.trace.kinds.SubscriberLagged` adds its ``lost`` to ``counters.lost``;
- a step end without its begin (a viewer attached mid-step) is applied from the end alone;
  a begin without its end stays "in flight" (bounded; the oldest is evicted and counted);
  a begin arriving after its end (out-of-order merge) is not counted in flight;
- seq going backwards for an instance is counted (``counters.out_of_order``), never fatal;
- an event whose attributes have the wrong types is counted (``counters.malformed``);
- events of several instances (a viewer attached to three replicas) land in per-instance
  records.

Memory is bounded: every keyed collection is a :class:`~pycm.trace.state.record.BoundedTable`
(least recently touched evicted) and every history a bounded ring.

Modules: :mod:`~pycm.trace.state.core` (the engine), :mod:`~pycm.trace.state.domain` (what a
domain is), :mod:`~pycm.trace.state.domains` (the one tuple of domains, and ``State`` over
them), :mod:`~pycm.trace.state.registry` (which handler folds which kind),
:mod:`~pycm.trace.state.record` (records, tables, rate windows),
:mod:`~pycm.trace.state.schema` (the snapshot), and the domains: ``startup`` (instances, the
start-up waterfall, health), ``leases``, ``informers``, ``controllers``, ``queues`` (with
``queue_contents``: the keys each queue holds), ``api``,
``steps`` (in flight), ``errors`` (the ring of recent errors), ``objects`` (object histories).
"""

from pycm.trace.state.api import ApiSnapshot
from pycm.trace.state.controllers import (
    FAILING_KEYS,
    SLOWEST_KEYS,
    ControllerSnapshot,
    KeySnapshot,
)
from pycm.trace.state.core import RATE_WINDOW_S
from pycm.trace.state.domains import State
from pycm.trace.state.errors import MAX_ERRORS
from pycm.trace.state.informers import InformerSnapshot
from pycm.trace.state.leases import HolderChange, HolderSnapshot, LeaseSnapshot, RenewAttempt
from pycm.trace.state.queues import QueueSnapshot
from pycm.trace.state.record import HistogramSnapshot
from pycm.trace.state.schema import SNAPSHOT_VERSION, CountersSnapshot, ErrorEntry, Snapshot
from pycm.trace.state.startup import HealthSnapshot, InstanceSnapshot, StepBarSnapshot
from pycm.trace.state.steps import MAX_IN_FLIGHT, InFlightSnapshot

__all__ = [
    "FAILING_KEYS",
    "MAX_ERRORS",
    "MAX_IN_FLIGHT",
    "RATE_WINDOW_S",
    "SLOWEST_KEYS",
    "SNAPSHOT_VERSION",
    "ApiSnapshot",
    "ControllerSnapshot",
    "CountersSnapshot",
    "ErrorEntry",
    "HealthSnapshot",
    "HistogramSnapshot",
    "HolderChange",
    "HolderSnapshot",
    "InFlightSnapshot",
    "InformerSnapshot",
    "InstanceSnapshot",
    "KeySnapshot",
    "LeaseSnapshot",
    "QueueSnapshot",
    "RenewAttempt",
    "Snapshot",
    "State",
    "StepBarSnapshot",
]
