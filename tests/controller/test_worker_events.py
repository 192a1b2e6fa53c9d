"""The reconcile step's events, field by field, for every way a sync ends: what subscribers, the
state reducer, the codec and the OTel sink receive from ``Controller.process``."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pycm.controller import Controller, Result, TerminalError, Trigger
from pycm.kube.errors import Conflict, ServerError
from pycm.trace.bus import Bus
from pycm.trace.context import current_span, note_call
from pycm.trace.events import SCHEMA_VERSION, Event, Outcome
from pycm.trace.kinds import (
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    StartupBegan,
)
from pycm.util.clock import FakeClock

_IDS = ("seq", "ts", "trace_id", "span_id", "parent_id", "dur_ns")


def _controller(sync: Callable[[str], Awaitable[Result | None]]) -> tuple[Controller, Bus]:
    clock = FakeClock(wall_start_ns=1_700_000_000_000_000_000)
    bus = Bus(instance="pycm-0", clock=clock)
    ctrl = Controller("replicaset", sync, resource="replicasets", clock=clock, bus=bus)
    ctrl.queue.add_rate_limited("ns/a")  # one retry so far
    return ctrl, bus


def _attrs(event: Event) -> dict[str, Any]:
    """The event's fields but its stamped ids and times (checked separately)."""
    return {k: v for k, v in dataclasses.asdict(event).items() if k not in _IDS}


async def _reconcile(ctrl: Controller, bus: Bus) -> tuple[ReconcileStarted, ReconcileFinished]:
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND, ReconcileFinished.KIND)) as sub:
        try:
            await ctrl.process("ns/a")
        except asyncio.CancelledError:
            pass
        events = sub.drain()
    begin, end = events
    assert isinstance(begin, ReconcileStarted) and isinstance(end, ReconcileFinished)
    # The envelope a step gives its pair: one span, consecutive seqs, ts + duration.
    assert len(begin.trace_id) == 32 and len(begin.span_id) == 16
    assert (end.trace_id, end.span_id, end.parent_id) == (
        begin.trace_id,
        begin.span_id,
        begin.parent_id,
    )
    assert begin.seq < end.seq and begin.ts + end.dur_ns == end.ts
    assert begin.dur_ns == 0
    await ctrl.queue.aclose()
    return begin, end


def _begin(**attrs: Any) -> dict[str, Any]:
    return _attrs(
        ReconcileStarted(
            instance="pycm-0",
            controller="replicaset",
            key="ns/a",
            namespace="ns",
            name="a",
            resource="replicasets",
            retries=1,
            **attrs,
        )
    )


def _end(**attrs: Any) -> dict[str, Any]:
    return _attrs(
        ReconcileFinished(
            instance="pycm-0", controller="replicaset", key="ns/a", retries=1, **attrs
        )
    )


async def _success(key: str) -> Result:
    note_call()
    note_call()
    return Result(action="noop", uid="u1")


async def _counted(key: str) -> Result:
    note_call()
    return Result(action="scaled_up", api_calls=7)


async def _requeue_after(key: str) -> Result:
    return Result(requeue_after=1.5)


async def _requeue(key: str) -> Result:
    note_call()
    return Result(requeue=True)


async def _conflict(key: str) -> None:
    note_call()
    raise Conflict("the object has been modified", code=409, reason="Conflict")


async def _error(key: str) -> None:
    raise ServerError("etcdserver: request timed out\nmore", code=500)


async def _terminal(key: str) -> None:
    note_call()
    raise TerminalError("selector is empty")


async def _cancelled(key: str) -> None:
    note_call()
    raise asyncio.CancelledError


_CASES = [
    pytest.param(_success, _end(action="noop", uid="u1", api_calls=2), id="success-counts-calls"),
    pytest.param(
        _counted, _end(action="scaled_up", api_calls=7), id="success-result-api-calls-win"
    ),
    pytest.param(
        _requeue_after,
        _end(result=ReconcileResult.REQUEUE_AFTER, requeue_after_ms=1500.0),
        id="requeue-after",
    ),
    pytest.param(_requeue, _end(result=ReconcileResult.REQUEUE, api_calls=1), id="requeue"),
    pytest.param(
        _conflict,
        _end(
            result=ReconcileResult.CONFLICT,
            outcome=Outcome.ERROR,
            error="Conflict: the object has been modified",
            api_calls=1,
        ),
        id="conflict",
    ),
    pytest.param(
        _error,
        _end(
            result=ReconcileResult.ERROR,
            outcome=Outcome.ERROR,
            error="ServerError: etcdserver: request timed out",
        ),
        id="error",
    ),
    pytest.param(
        _terminal,
        _end(
            result=ReconcileResult.ERROR,
            outcome=Outcome.ERROR,
            error="TerminalError: selector is empty",
            api_calls=1,
        ),
        id="terminal-error",
    ),
    pytest.param(_cancelled, _end(outcome=Outcome.CANCELLED), id="cancelled"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("sync", "expected_end"), _CASES)
async def test_process_sync_ending_emits_the_reconcile_pair_field_by_field(
    sync: Callable[[str], Awaitable[Result | None]], expected_end: dict[str, Any]
) -> None:
    ctrl, bus = _controller(sync)
    begin, end = await _reconcile(ctrl, bus)
    assert _attrs(begin) == _begin()
    assert _attrs(end) == expected_end
    assert begin.parent_id == "" and begin.v == end.v == SCHEMA_VERSION
    assert begin.ts == 1_700_000_000_000_000_000


@pytest.mark.asyncio
async def test_process_with_a_trigger_carries_its_link() -> None:
    ctrl, bus = _controller(_success)
    ctrl.enqueue("ns/a", Trigger("Pod", "42", "update", "a" * 32, "b" * 16))
    begin, _ = await _reconcile(ctrl, bus)
    assert _attrs(begin) == _begin(
        queue_wait_ms=0.0,  # processed without being taken from the queue
        trigger_kind="Pod",
        trigger_rv="42",
        trigger_event="update",
        trigger_trace_id="a" * 32,
        trigger_span_id="b" * 16,
        trigger_merged=1,
    )


@pytest.mark.asyncio
async def test_process_with_merged_triggers_leaves_its_records_untracked_by_the_gc() -> None:
    # The bus's ring keeps thousands of reconciles' records: each must leave the collector's
    # generations at its first collection (a plain tuple of atoms does), or every older
    # collection traverses the ring. A begin holding a trigger (merged: one holding another,
    # the newest holding a cause of this manager's write) did not while Trigger was a
    # dataclass, which the collector tracks for as long as it lives.
    import gc

    ctrl, bus = _controller(_success)
    cause = (0, 7, ("pycm-0", ("a" * 16, 3, 5), "", "deployment", "deployments"), 0, 0, "ns/d")
    ctrl.enqueue("ns/a", Trigger("ReplicaSet", "8", "add", object="ns/a"))
    ctrl.enqueue("ns/a", Trigger("ReplicaSet", "9", "update", cause=cause, verb="update"))
    await ctrl.process("ns/a")
    begin, end = (entry for entry in bus._ring if type(entry) is tuple)
    trigger = begin[8]
    assert trigger.merged == 2 and trigger.first is not None and trigger.cause == cause
    assert end[2] is begin
    gc.collect()
    assert not gc.is_tracked(trigger) and not gc.is_tracked(trigger.first)
    assert not gc.is_tracked(begin) and not gc.is_tracked(end)
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_process_inside_a_step_is_its_child_and_restores_the_span() -> None:
    seen: list[tuple[str, str] | None] = []

    async def sync(key: str) -> None:
        seen.append(current_span())

    ctrl, bus = _controller(sync)
    with bus.step(StartupBegan(command="run")) as outer:
        begin, _ = await _reconcile(ctrl, bus)
        assert current_span() == (outer.trace_id, outer.span_id)
    assert (begin.trace_id, begin.parent_id) == (outer.trace_id, outer.span_id)
    assert begin.span_id != outer.span_id
    assert seen == [(begin.trace_id, begin.span_id)]
    assert current_span() is None


@pytest.mark.asyncio
async def test_process_root_spans_are_fresh_and_restore_no_span() -> None:
    seen: list[tuple[str, str] | None] = []

    async def sync(key: str) -> None:
        seen.append(current_span())

    ctrl, bus = _controller(sync)
    first, _ = await _reconcile(ctrl, bus)
    second, _ = await _reconcile(ctrl, bus)
    assert first.trace_id != second.trace_id and first.span_id != second.span_id
    assert first.span_id == first.trace_id[16:]  # a root's span id is its trace id's low half
    assert seen == [(first.trace_id, first.span_id), (second.trace_id, second.span_id)]
    assert current_span() is None


@pytest.mark.asyncio
async def test_process_begin_carries_how_long_the_key_waited_in_the_queue() -> None:
    clock = FakeClock(wall_start_ns=1_700_000_000_000_000_000)
    bus = Bus(instance="pycm-0", clock=clock)
    ctrl = Controller("replicaset", _success, resource="replicasets", clock=clock, bus=bus)
    ctrl.enqueue("ns/a")
    clock.advance(0.25)
    key = await ctrl.queue.get()
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        await ctrl.process(key)
        (begin,) = sub.drain()
    assert isinstance(begin, ReconcileStarted)
    assert begin.queue_wait_ms == pytest.approx(250.0)
    ctrl.queue.done(key)
    assert ctrl.queue.wait_ns(key) == 0  # forgotten with the item's processing
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_process_end_reaches_a_reader_whose_subscription_grew_the_log_mid_sync() -> None:
    # A log reader opened during the sync with a maxsize past the ring's replaces the bus's log
    # (a deque with a new maxlen): the end must go to the new log, not the one the begin went
    # to, or that reader (and recent()) never sees the reconcile end.
    clock = FakeClock(wall_start_ns=1_700_000_000_000_000_000)
    bus = Bus(instance="pycm-0", clock=clock, ring_size=4)
    readers = []

    async def sync(key: str) -> None:
        readers.append(bus.subscribe(name="late", maxsize=16, since=0))

    ctrl = Controller("replicaset", sync, resource="replicasets", clock=clock, bus=bus)
    await ctrl.process("ns/a")
    (late,) = readers
    read = late.drain()
    assert [e.KIND for e in read] == [ReconcileStarted.KIND, ReconcileFinished.KIND]
    assert [e.KIND for e in bus.recent()] == [ReconcileStarted.KIND, ReconcileFinished.KIND]
    assert read[1].seq == read[0].seq + 1 == bus.last_seq
    late.close()
    await ctrl.queue.aclose()


class _QueueBroke(RuntimeError):
    pass


def _break(ctrl: Controller, method: str) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise _QueueBroke(f"{method} failed")

    setattr(ctrl.queue, method, broken)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("sync", "method"),
    [
        pytest.param(_requeue_after, "add_after", id="after-a-result"),
        pytest.param(_error, "add_rate_limited", id="after-an-error"),
        pytest.param(_terminal, "drop", id="after-a-terminal-error"),
    ],
)
async def test_process_handling_that_fails_ends_the_step_with_its_error_and_propagates(
    sync: Callable[[str], Awaitable[Result | None]], method: str
) -> None:
    # As a step ends when its block raises: the end carries the handling's error (the
    # result fields the handling did not get to keep their defaults), and the span closes.
    ctrl, bus = _controller(sync)
    _break(ctrl, method)
    with bus.subscribe(name="t", kinds=(ReconcileFinished.KIND,)) as sub:
        with pytest.raises(_QueueBroke):
            await ctrl.process("ns/a")
        (end,) = sub.drain()
    assert _attrs(end) == _end(outcome=Outcome.ERROR, error=f"_QueueBroke: {method} failed")
    assert current_span() is None
    await ctrl.queue.aclose()


def test_process_coroutine_fits_the_small_object_allocator() -> None:
    # Every reconcile allocates process()'s coroutine, its frame inline: at most 512 bytes
    # CPython's small-object allocator serves it (pycm.controller.worker.Controller.process),
    # above that each reconcile is a malloc and a free.
    import sys

    ctrl, _ = _controller(_success)
    coroutine = ctrl.process("ns/a")
    try:
        assert sys.getsizeof(coroutine) <= 512
    finally:
        coroutine.close()
