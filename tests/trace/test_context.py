"""Steps and points: ids, nesting through the contextvar, durations and outcomes."""

from __future__ import annotations

import asyncio
import contextvars
import re

import pytest

from pycm.trace.bus import Bus
from pycm.trace.context import _current, current_span, detached, note_call, root_context
from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    ControllerInitBegan,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    StartupBegan,
    StartupFinished,
)
from pycm.util.clock import FakeClock

TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def test_step_emits_begin_and_end_with_one_span_and_duration() -> None:
    clock = FakeClock()
    bus = Bus(clock=clock)
    with bus.step(StartupBegan(command="run")):
        clock.advance(0.25)
    begin, end = bus.recent()
    assert isinstance(begin, StartupBegan)
    assert isinstance(end, StartupFinished)
    assert TRACE_ID.match(begin.trace_id) and SPAN_ID.match(begin.span_id)
    assert (end.trace_id, end.span_id, end.parent_id) == (begin.trace_id, begin.span_id, "")
    assert end.dur_ns == 250_000_000
    assert end.outcome is Outcome.OK


def test_nested_steps_and_points_carry_the_parent_span() -> None:
    bus = Bus()
    with bus.step(StartupBegan()) as root:
        with bus.step(ControllerInitBegan(controller="deployment")) as child:
            bus.point(ApiRequestCompleted(verb="get", code=200), dur_ns=1500)
        assert current_span() == (root.trace_id, root.span_id)
    assert current_span() is None
    events = bus.recent()
    assert [e.KIND for e in events] == [
        "startup.begin",
        "controller.init.begin",
        "api.request",
        "controller.init.end",
        "startup.end",
    ]
    assert {e.trace_id for e in events} == {root.trace_id}
    assert child.parent_id == root.span_id
    api = events[2]
    assert api.parent_id == child.span_id
    assert api.span_id not in (child.span_id, root.span_id)
    assert api.dur_ns == 1500


def test_timed_point_outside_a_step_starts_its_own_trace() -> None:
    bus = Bus()
    a = bus.point(ApiRequestCompleted(verb="list"), dur_ns=10)
    b = bus.point(ApiRequestCompleted(verb="list"), dur_ns=10)
    assert a.parent_id == ""
    assert TRACE_ID.match(a.trace_id)
    assert SPAN_ID.match(a.span_id)
    assert a.trace_id != b.trace_id


def test_untimed_point_outside_a_step_is_in_no_trace() -> None:
    bus = Bus()
    event = bus.point(ApiRequestCompleted(verb="list"))
    assert (event.trace_id, event.span_id, event.parent_id) == ("", "", "")
    assert event.seq == 1


def test_finish_with_attrs_builds_end_and_copies_shared_fields() -> None:
    bus = Bus()
    with bus.step(ReconcileStarted(controller="deployment", key="ns/web", retries=2)) as s:
        s.finish(result=ReconcileResult.REQUEUE_AFTER, action="noop", requeue_after_ms=500.0)
    end = bus.recent()[-1]
    assert isinstance(end, ReconcileFinished)
    assert (end.controller, end.key, end.retries) == ("deployment", "ns/web", 2)
    assert (end.result, end.action, end.requeue_after_ms) == (
        ReconcileResult.REQUEUE_AFTER,
        "noop",
        500.0,
    )


def test_finish_with_a_ready_end_event_keeps_it() -> None:
    bus = Bus()
    ready = ReconcileFinished(controller="x", key="other", api_calls=3)
    with bus.step(ReconcileStarted(controller="x", key="ns/a")) as s:
        s.finish(ready)
    end = bus.recent()[-1]
    assert end is ready
    assert end.key == "other" and end.api_calls == 3 and end.span_id == s.span_id


def test_exception_ends_step_with_error_and_propagates() -> None:
    bus = Bus()
    with pytest.raises(RuntimeError), bus.step(ReconcileStarted(controller="rs", key="ns/a")):
        raise RuntimeError("boom\nsecond line")
    end = bus.recent()[-1]
    assert isinstance(end, ReconcileFinished)
    assert end.outcome is Outcome.ERROR
    assert end.error == "RuntimeError: boom"
    assert end.key == "ns/a"
    assert current_span() is None


def test_exception_after_finish_marks_the_given_end_as_error() -> None:
    bus = Bus()
    with pytest.raises(KeyError), bus.step(ReconcileStarted(controller="rs")) as s:
        s.finish(result=ReconcileResult.SUCCESS)
        raise KeyError("k")
    end = bus.recent()[-1]
    assert end.outcome is Outcome.ERROR and end.error.startswith("KeyError")


@pytest.mark.asyncio
async def test_cancelled_step_ends_with_outcome_cancelled() -> None:
    bus = Bus()
    started = asyncio.Event()

    async def work() -> None:
        with bus.step(ReconcileStarted(controller="rs")):
            started.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(work(), name="work")
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    end = bus.recent()[-1]
    assert end.outcome is Outcome.CANCELLED
    assert end.error == ""


@pytest.mark.asyncio
async def test_concurrent_tasks_keep_separate_span_contexts() -> None:
    bus = Bus()
    gate = asyncio.Event()

    async def reconcile(key: str) -> tuple[str, str | None]:
        with bus.step(ReconcileStarted(controller="rs", key=key)) as s:
            await gate.wait()
            point = bus.point(ApiRequestCompleted(verb="get", name=key))
            return s.span_id, point.parent_id

    tasks = [asyncio.create_task(reconcile(k), name=k) for k in ("a", "b", "c")]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*tasks)
    for span_id, parent_id in results:
        assert parent_id == span_id
    assert len({span for span, _ in results}) == 3


@pytest.mark.asyncio
async def test_root_context_task_started_inside_a_step_begins_its_own_trace() -> None:
    bus = Bus()

    async def reconcile() -> ReconcileStarted:
        with bus.step(ReconcileStarted(controller="rs", key="ns/a")) as s:
            return s.begin

    with bus.step(StartupBegan()) as startup:
        inherited = await asyncio.create_task(reconcile(), name="inherits")
        rooted = await asyncio.create_task(reconcile(), name="root", context=root_context())
        assert current_span() == (startup.trace_id, startup.span_id)
    assert (inherited.trace_id, inherited.parent_id) == (startup.trace_id, startup.span_id)
    assert rooted.parent_id == "" and rooted.trace_id != startup.trace_id


def test_root_context_leaves_the_span_unset_and_keeps_every_other_variable() -> None:
    # Unset, not None: a worker opening a span per reconcile in it inserts the variable and
    # removes it again, cheaper than replacing a None twice (pycm.trace.context.root_context).
    bus = Bus()
    other: contextvars.ContextVar[str] = contextvars.ContextVar("other")
    token = other.set("kept")
    try:
        with bus.step(StartupBegan()):
            inside = root_context()
        outside = root_context()
    finally:
        other.reset(token)
    for ctx in (inside, outside):
        assert _current not in ctx
        assert ctx[other] == "kept"
        assert ctx.run(current_span) is None


@pytest.mark.asyncio
async def test_detached_block_has_no_span_and_restores_it_after() -> None:
    bus = Bus()
    with bus.step(StartupBegan()) as startup:
        with detached():
            assert current_span() is None
            with bus.step(ReconcileStarted(controller="rs", key="ns/a")) as inner:
                pass
            task = asyncio.create_task(asyncio.sleep(0, current_span()), name="t")
        assert current_span() == (startup.trace_id, startup.span_id)
    assert inner.parent_id == "" and inner.trace_id != startup.trace_id
    assert await task is None


def test_events_are_frozen() -> None:
    import dataclasses

    event = ReconcileStarted(controller="rs")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.controller = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del event.key  # type: ignore[misc]
    changed = dataclasses.replace(event, key="ns/b")
    assert (changed.controller, changed.key, type(changed)) == ("rs", "ns/b", ReconcileStarted)
    assert event == ReconcileStarted(controller="rs")
    assert hash(event) == hash(ReconcileStarted(controller="rs"))


def test_unknown_attribute_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ReconcileStarted(body="{}")  # type: ignore[call-arg]


def test_note_call_outside_a_counting_span_counts_nowhere_and_never_fails() -> None:
    bus = Bus()
    note_call()  # no span at all
    with bus.step(StartupBegan()) as root:  # a span that counts no calls
        note_call()
        assert current_span() == (root.trace_id, root.span_id)
    token = _current.set(("a" * 32, "b" * 16))  # a bare (trace_id, span_id), as tests set it
    try:
        note_call()
        assert current_span() == ("a" * 32, "b" * 16)
    finally:
        _current.reset(token)


def test_a_step_inside_a_counting_span_keeps_counting_into_it() -> None:
    bus = Bus()
    calls = [0]
    token = _current.set(("a" * 32, "b" * 16, calls))
    try:
        assert current_span() == ("a" * 32, "b" * 16)
        with bus.step(StartupBegan()) as child:
            note_call()
            assert current_span() == ("a" * 32, child.span_id)
        note_call()
    finally:
        _current.reset(token)
    assert calls == [2]
    assert child.parent_id == "b" * 16
