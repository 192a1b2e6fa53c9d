"""The generated step classes: for every step kind, the end event their ``finish`` builds is the
one the reference ``Step.finish`` builds, and misuse is a TypeError at the call."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

from pycm.trace.bus import Bus, Step, shared_fields
from pycm.trace.codec import to_dict
from pycm.trace.context import new_root_ids, new_span_id, new_trace_id
from pycm.trace.events import ENVELOPE_FIELDS, REGISTRY, Event, StepBegin, StepEnd
from pycm.trace.kinds import ReconcileFinished, ReconcileResult, ReconcileStarted
from pycm.util.clock import FakeClock
from tests.trace.kind_samples import sample

_BEGIN_KINDS = [info for info in REGISTRY.values() if info.role == "begin"]


def _own_attrs(event: Event) -> dict[str, Any]:
    return {k: v for k, v in to_dict(event).items() if k not in ("seq", "ts", "dur_ns")}


def _end_attrs(end_cls: type[StepEnd]) -> dict[str, Any]:
    """A non-default value for each of END's own attributes (the envelope is the step's)."""
    ready = sample(REGISTRY[end_cls.KIND])
    return {
        f.name: getattr(ready, f.name)
        for f in dataclasses.fields(end_cls)
        if f.name not in ENVELOPE_FIELDS
    }


def _run(begin: StepBegin, finish: Any) -> tuple[Event, Event]:
    bus = Bus(instance="me", clock=FakeClock())
    with bus.step(begin) as step:
        finish(step)
    began, ended = bus.recent()
    return began, ended


@pytest.mark.parametrize("info", _BEGIN_KINDS, ids=lambda info: info.kind)
@pytest.mark.parametrize("given", ["none", "all"])
def test_generated_finish_builds_what_the_reference_builds(info: Any, given: str) -> None:
    begin_sample = sample(info)
    attrs = _end_attrs(info.cls.END) if given == "all" else {}

    def fresh_begin() -> StepBegin:
        # Same attributes, envelope left to the bus.
        own = {
            f.name: getattr(begin_sample, f.name)
            for f in dataclasses.fields(info.cls)
            if f.name not in ENVELOPE_FIELDS
        }
        return info.cls(**own)  # type: ignore[no-any-return]

    _, generated = _run(fresh_begin(), lambda s: s.finish(**attrs))
    _, reference = _run(fresh_begin(), lambda s: Step.finish(s, **attrs))
    assert type(generated) is type(reference) is info.cls.END
    ids = ("trace_id", "span_id", "parent_id")
    assert {k: v for k, v in _own_attrs(generated).items() if k not in ids} == {
        k: v for k, v in _own_attrs(reference).items() if k not in ids
    }
    # Without attributes, the shared ones come from the begin event.
    if given == "none":
        for name in shared_fields(info.cls):
            assert getattr(generated, name) == getattr(begin_sample, name)
    else:
        for name, value in attrs.items():
            assert getattr(generated, name) == value


def test_step_events_are_frozen_of_their_kind_and_end_ts_is_begin_ts_plus_duration() -> None:
    clock = FakeClock()
    bus = Bus(clock=clock)
    with bus.step(ReconcileStarted(controller="d", key="ns/a")) as s:
        clock.advance(0.5)
        s.finish(result=ReconcileResult.SUCCESS, action="noop")
    begin, end = bus.recent()
    assert type(begin) is ReconcileStarted and type(end) is ReconcileFinished
    assert end.ts - begin.ts == end.dur_ns == 500_000_000
    with pytest.raises(dataclasses.FrozenInstanceError):
        end.action = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        begin.key = "other"  # type: ignore[misc]


def test_finish_with_an_unknown_attribute_fails_at_the_call() -> None:
    bus = Bus()
    with bus.step(ReconcileStarted(controller="d")) as s:
        with pytest.raises(TypeError, match="unexpected keyword argument 'body'"):
            s.finish(body="{}")
        with pytest.raises(TypeError, match="unexpected keyword argument 'seq'"):
            s.finish(seq=3)
    # The step still ended, with the attributes it shares with the begin event.
    end = bus.recent()[-1]
    assert isinstance(end, ReconcileFinished) and end.controller == "d"


def test_finish_takes_a_ready_end_or_attributes_not_both() -> None:
    bus = Bus()
    with bus.step(ReconcileStarted(controller="d")) as s:
        with pytest.raises(TypeError, match="not both"):
            s.finish(ReconcileFinished(controller="d"), action="noop")
        with pytest.raises(TypeError, match="keyword"):
            s.finish(None, "noop")  # type: ignore[call-arg]


def test_kind_constructors_take_keywords_only() -> None:
    with pytest.raises(TypeError, match="keyword arguments only"):
        ReconcileStarted("deployment")  # type: ignore[misc]
    event = ReconcileStarted(controller="deployment")
    assert event.controller == "deployment" and event.key == ""


def test_ids_are_w3c_sized_unique_and_never_zero() -> None:
    spans = [new_span_id() for _ in range(5000)]
    roots = [new_root_ids() for _ in range(5000)]
    traces = [new_trace_id() for _ in range(100)]
    assert len(set(spans)) == len(spans)
    assert len({t for t, _ in roots} | set(traces)) == len(roots) + len(traces)
    for span_id in spans:
        assert len(span_id) == 16 and int(span_id, 16) != 0
    for trace_id, span_id in roots:
        assert len(trace_id) == 32 and trace_id[16:] == span_id and int(span_id, 16) != 0


def test_a_forked_child_draws_ids_of_its_own() -> None:
    new_span_id()  # the parent has a batch drawn
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        try:
            os.write(write_end, " ".join(new_span_id() for _ in range(8)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child_ids = pipe.read().split()
    os.waitpid(pid, 0)
    parent_ids = [new_span_id() for _ in range(8)]
    assert len(child_ids) == 8
    assert not set(child_ids) & set(parent_ids)
