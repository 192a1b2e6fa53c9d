"""The hub's fast one-line form is exactly pycm.trace.format.format_event."""

from __future__ import annotations

import dataclasses

import pytest

from pycm.trace import kinds as k
from pycm.trace.codec import UnknownEvent
from pycm.trace.events import REGISTRY, Event
from pycm.trace.format import format_event
from tests.trace.kind_samples import all_samples
from web.lines import line_of


@pytest.mark.parametrize("event", all_samples(), ids=lambda e: e.KIND)
def test_line_of_every_kind_with_every_attribute_set_equals_format_event(event: Event) -> None:
    assert line_of(event) == format_event(event)


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_line_of_every_kind_at_its_defaults_equals_format_event(kind: str) -> None:
    event = REGISTRY[kind].cls()
    assert line_of(event) == format_event(event)


def test_line_of_consecutive_seconds_and_odd_values_equal_format_event() -> None:
    base = k.ItemAdded(queue="q", key="a b", depth=3, instance="")
    for ts in (0, 999_999_999, 1_000_000_000, 1_790_000_000_123_456_789, 1_790_000_001_000_000_000):
        event = dataclasses.replace(base, ts=ts, dur_ns=ts % 7_000_000_000)
        assert line_of(event) == format_event(event)
    unknown = UnknownEvent(kind="future.kind", raw='{"x":1}', ts=5)
    assert line_of(unknown) == format_event(unknown)
