"""The event recorder: core/v1 Events with client-go's correlation, never blocking a worker.

- :mod:`~pycm.record.correlator` — aggregation of similar events, de-duplication of repeats
  (count and lastTimestamp) and the per-object spam filter; pure, clock-injected.
- :mod:`~pycm.record.recorder` — ``EventRecorder.event(obj, type, reason, message)``: a
  non-blocking call that queues (bounded) for a writer task that correlates and writes.
"""

from pycm.record.correlator import CorrelatorOptions, EventCorrelator
from pycm.record.recorder import EventRecorder, EventSink

__all__ = ["CorrelatorOptions", "EventCorrelator", "EventRecorder", "EventSink"]
