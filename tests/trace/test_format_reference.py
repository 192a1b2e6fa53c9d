"""format_event's cached per-kind attribute lists and per-second UTC text read exactly as the
plain definition: every field away from its default (a step end's outcome always), the
timestamp converted each time."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from pycm.trace import kinds as k
from pycm.trace.codec import UnknownEvent
from pycm.trace.events import ENVELOPE_FIELDS, REGISTRY, Event, StepEnd
from pycm.trace.format import duration_text, format_event, value_text
from tests.trace.kind_samples import all_samples


def reference_line(event: Event) -> str:
    seconds, ns = divmod(event.ts, 1_000_000_000)
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    parts = [f"{when:%Y-%m-%dT%H:%M:%S}.{ns // 1_000_000:03d}Z", event.instance or "-"]
    if isinstance(event, UnknownEvent):
        parts += [f"{event.kind}?", event.raw]
    else:
        parts.append(event.KIND)
        for f in dataclasses.fields(event):
            if f.name in ENVELOPE_FIELDS:
                continue
            value = getattr(event, f.name)
            if value != f.default or (f.name == "outcome" and isinstance(event, StepEnd)):
                parts.append(f"{f.name}={value_text(value)}")
    if event.dur_ns:
        parts.append(f"dur={duration_text(event.dur_ns)}")
    return " ".join(parts)


@pytest.mark.parametrize("event", all_samples(), ids=lambda e: e.KIND)
def test_format_event_every_kind_with_attributes_set_reads_as_reference(event: Event) -> None:
    assert format_event(event) == reference_line(event)


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_format_event_every_kind_at_defaults_reads_as_reference(kind: str) -> None:
    event = REGISTRY[kind].cls()
    assert format_event(event) == reference_line(event)


def test_format_event_consecutive_and_repeated_seconds_read_as_reference() -> None:
    base = k.ItemAdded(queue="q", key="a b", depth=3, instance="")
    stamps = (0, 999_999_999, 1_000_000_000, 1_790_000_000_123_456_789, 1_790_000_001_0, 0)
    for ts in stamps:
        event = dataclasses.replace(base, ts=ts, dur_ns=ts % 7_000_000_000)
        assert format_event(event) == reference_line(event)
    unknown = UnknownEvent(kind="future.kind", raw='{"x":1}', ts=5)
    assert format_event(unknown) == reference_line(unknown)
