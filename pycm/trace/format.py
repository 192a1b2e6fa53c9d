"""An event as text: the one place that decides how an event reads on one line.

- :func:`attributes` — the kind's attributes that differ from their defaults (a step end always
  shows its outcome): what is worth printing;
- :func:`value_text` / :func:`duration_text` — how a value and a duration read;
- :func:`format_event` — the one-line form ``time instance kind attr=value … dur=1.5ms``, used by
  ``pycm trace cat`` (UTC timestamps), ``pycm demo --no-tui`` (local clock time, aligned
  columns) and the TUI;
- :func:`summary` — the short form of the identifying attributes (the TUI's event list).

Standard library only: ``pycm trace`` imports it for every command.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Collection

from pycm.trace.codec import UnknownEvent
from pycm.trace.events import ENVELOPE_FIELDS, Event, StepEnd

__all__ = [
    "attributes",
    "duration_text",
    "format_event",
    "kind_of",
    "summary",
    "timestamp_text",
    "value_text",
]

# The attributes that identify what an event is about, in the order a summary lists them.
_SUMMARY_FIELDS = (
    "controller",
    "queue",
    "resource",
    "lease",
    "key",
    "identity",
    "result",
    "reason",
    "outcome",
    "error",
)


def kind_of(event: Event) -> str:
    """The wire name (an unknown kind's own name)."""
    return event.kind if isinstance(event, UnknownEvent) else event.KIND


# kind class -> ((attribute, default, always shown), ...) in declaration order: read once per
# kind, because dataclasses.fields() per event was most of what formatting cost (a watched
# dashboard formats every event of a busy manager).
_specs: dict[type, tuple[tuple[str, object, bool], ...]] = {}


def _spec(cls: type[Event]) -> tuple[tuple[str, object, bool], ...]:
    step_end = issubclass(cls, StepEnd)
    spec = tuple(
        (f.name, f.default, step_end and f.name == "outcome")
        for f in dataclasses.fields(cls)
        if f.name not in ENVELOPE_FIELDS
    )
    _specs[cls] = spec
    return spec


def attributes(event: Event) -> list[tuple[str, object]]:
    """The kind's attributes that differ from their defaults, in declaration order (a step end
    always shows its outcome). An unknown kind has none (its text is in ``raw``)."""
    if isinstance(event, UnknownEvent):
        return []
    cls = event.__class__
    out: list[tuple[str, object]] = []
    for name, default, always in _specs.get(cls) or _spec(cls):
        value = getattr(event, name)
        if value != default or always:
            out.append((name, value))
    return out


def value_text(value: object, *, limit: int = 0) -> str:
    """A value as it reads in ``name=value``: an enum's value, a float by ``%g``, a string as it
    is unless empty, unprintable or spaced (then quoted); cut to ``limit`` characters if set."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str):
        text = value if value and value.isprintable() and " " not in value else repr(value)
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    if limit and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def duration_text(ns: int) -> str:
    """``1.5s``, ``12ms``, ``800µs`` (three significant digits)."""
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.3g}s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.3g}ms"
    return f"{ns / 1e3:.3g}µs"


# The UTC text of the last whole second formatted ("YYYY-MM-DDTHH:MM:SS"): events come in time
# order, so most share it and skip the datetime conversion.
_utc_second: list[object] = [-1, ""]


def timestamp_text(ts: int, *, utc: bool = True) -> str:
    """``2026-12-03T23:40:28.123Z`` (UTC) or ``23:40:28.123`` (local clock time)."""
    seconds, ns = divmod(ts, 1_000_000_000)  # integers: a float would misround the ms
    ms = f"{ns // 1_000_000:03d}"
    if utc:
        if _utc_second[0] != seconds:
            when = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
            _utc_second[0], _utc_second[1] = seconds, f"{when:%Y-%m-%dT%H:%M:%S}"
        return f"{_utc_second[1]}.{ms}Z"
    return f"{datetime.datetime.fromtimestamp(seconds):%H:%M:%S}.{ms}"


def format_event(
    event: Event,
    *,
    utc: bool = True,
    instance: str | None = None,
    instance_width: int = 0,
    kind_width: int = 0,
    omit: Collection[str] = (),
    value_limit: int = 0,
) -> str:
    """``time instance kind attr=value … dur=…``: the attributes away from their defaults, then
    the duration. ``instance`` replaces the event's own (a viewer's name for the replica);
    the widths pad those columns; ``omit`` leaves attributes out (ones a caller shows
    elsewhere); ``value_limit`` cuts long values."""
    ts = event.ts if event.ts.__class__ is int else 0
    parts = [
        timestamp_text(ts, utc=utc),
        f"{(instance if instance is not None else event.instance) or '-':<{instance_width}}",
    ]
    if isinstance(event, UnknownEvent):
        parts.append(f"{event.kind + '?':<{kind_width}}")
        parts.append(event.raw)
    else:
        parts.append(f"{event.KIND:<{kind_width}}")
        parts.extend(
            f"{name}={value_text(value, limit=value_limit)}"
            for name, value in attributes(event)
            if name not in omit
        )
    if event.dur_ns:
        parts.append(f"dur={duration_text(event.dur_ns)}")
    line = " ".join(parts)
    return line.rstrip() if instance_width or kind_width else line


def summary(event: Event) -> str:
    """The identifying attributes (controller, queue, resource, lease, key, …) that are set, an
    ``ok`` outcome left out: the TUI event list's summary column."""
    if isinstance(event, UnknownEvent):
        return f"(unknown kind) {event.raw[:80]}"
    parts = []
    for name in _SUMMARY_FIELDS:
        value = getattr(event, name, None)
        if value not in (None, "") and not (name == "outcome" and str(value) == "ok"):
            parts.append(f"{name}={value}")
    return " ".join(parts)
