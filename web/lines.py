"""The event log's one-line form, fast: exactly :func:`pycm.trace.format.format_event` (UTC, no
padding), for the hub, which formats every event while someone watches.

``format_event`` looks up a kind's dataclass fields and formats a timestamp for every event
(~15 µs here), which at a busy manager's event rate was most of what a watched mounted
dashboard cost it. This keeps, per kind, the attribute names and defaults once, and the
timestamp text of the current second once; values go through the same
:func:`~pycm.trace.format.value_text` and :func:`~pycm.trace.format.duration_text`. A test keeps
it equal to ``format_event`` for every kind. (A candidate for pycm/trace/format.py itself.)
"""

from __future__ import annotations

import dataclasses

from pycm.trace.codec import UnknownEvent
from pycm.trace.events import ENVELOPE_FIELDS, Event, StepEnd
from pycm.trace.format import duration_text, format_event, timestamp_text, value_text

__all__ = ["line_of"]

# kind class -> ((attribute, default, always shown), ...) in declaration order
_specs: dict[type, tuple[tuple[str, object, bool], ...]] = {}
_second = [-1, ""]  # the last second formatted, and its "YYYY-MM-DDTHH:MM:SS" text


def _spec(cls: type[Event]) -> tuple[tuple[str, object, bool], ...]:
    step_end = issubclass(cls, StepEnd)
    spec = tuple(
        (f.name, f.default, step_end and f.name == "outcome")
        for f in dataclasses.fields(cls)
        if f.name not in ENVELOPE_FIELDS
    )
    _specs[cls] = spec
    return spec


def _stamp(ts: int) -> str:
    seconds, ns = divmod(ts, 1_000_000_000)
    if seconds != _second[0]:
        _second[0] = seconds
        _second[1] = timestamp_text(seconds * 1_000_000_000)[:-5]  # without ".mmmZ"
    return f"{_second[1]}.{ns // 1_000_000:03d}Z"


def line_of(event: Event) -> str:
    """``format_event(event)``, computed faster."""
    if isinstance(event, UnknownEvent):
        return format_event(event)
    cls = event.__class__
    spec = _specs.get(cls) or _spec(cls)
    ts = event.ts if event.ts.__class__ is int else 0
    parts = [_stamp(ts), event.instance or "-", cls.KIND]
    for name, default, always in spec:
        value = getattr(event, name)
        if value != default or always:
            parts.append(f"{name}={value_text(value)}")
    if event.dur_ns:
        parts.append(f"dur={duration_text(event.dur_ns)}")
    return " ".join(parts)
