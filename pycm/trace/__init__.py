"""The trace spine: every step pycm takes is a typed event on one bus.

Public surface:

- kinds: :mod:`pycm.trace.kinds` (the registry, :data:`REGISTRY`); bases :class:`Event`,
  :class:`StepBegin`, :class:`StepEnd`; :class:`Outcome`.
- emitting: :class:`Bus` (``emit``, ``point``, ``step``, ``subscribe``), :func:`default_bus`.
- reading: :class:`Subscription` (``async for``, ``drain``), the codec (:func:`encode`,
  :func:`decode`), the state (:mod:`pycm.trace.state`), the recorder and reader
  (:mod:`pycm.trace.recorder`).
"""

from pycm.trace.bus import Bus, Subscription, default_bus, set_default_bus
from pycm.trace.codec import CodecError, UnknownEvent, decode, encode, to_dict
from pycm.trace.context import current_span
from pycm.trace.events import REGISTRY, Event, Outcome, StepBegin, StepEnd

__all__ = [
    "REGISTRY",
    "Bus",
    "CodecError",
    "Event",
    "Outcome",
    "StepBegin",
    "StepEnd",
    "Subscription",
    "UnknownEvent",
    "current_span",
    "decode",
    "default_bus",
    "encode",
    "set_default_bus",
    "to_dict",
]
