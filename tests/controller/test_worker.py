"""The reconcile contract: what the worker does with a key after each kind of sync ending."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from pycm.controller import Controller, ControllerMetrics, Result, TerminalError, Trigger
from pycm.kube.errors import Conflict, FencedError, ServerError
from pycm.leaderelection.gate import RenewGate
from pycm.trace.bus import Bus
from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ControllerStarted,
    ControllerStopped,
    ItemDropped,
    ReconcileFinished,
    ReconcileResult,
    ReconcileStarted,
    StartupBegan,
)
from pycm.util.clock import FakeClock
from pycm.workqueue.rate_limiters import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
)
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue


def _controller(sync, *, max_retries: int = 3, registry: CollectorRegistry | None = None):  # type: ignore[no-untyped-def]
    clock, bus = FakeClock(), Bus()
    metrics = ControllerMetrics(registry) if registry is not None else None
    ctrl = Controller(
        "replicaset",
        sync,
        resource="replicasets",
        max_retries=max_retries,
        clock=clock,
        bus=bus,
        metrics=metrics,
    )
    return ctrl, clock, bus


def _ends(bus: Bus) -> list[ReconcileFinished]:
    return [e for e in bus.recent() if isinstance(e, ReconcileFinished)]


@pytest.mark.asyncio
async def test_success_forgets_the_key() -> None:
    async def sync(key: str) -> Result:
        return Result(action="noop", uid="u1")

    ctrl, _, bus = _controller(sync)
    ctrl.queue.add_rate_limited("ns/a")  # a retry count to forget
    assert ctrl.queue.num_requeues("ns/a") == 1
    assert await ctrl.process("ns/a") is ReconcileResult.SUCCESS
    assert ctrl.queue.num_requeues("ns/a") == 0
    (end,) = _ends(bus)
    assert (end.result, end.action, end.uid, end.outcome) == (
        ReconcileResult.SUCCESS,
        "noop",
        "u1",
        Outcome.OK,
    )
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_requeue_after_forgets_then_adds_after_the_delay() -> None:
    async def sync(key: str) -> Result:
        return Result(requeue_after=30)

    ctrl, clock, bus = _controller(sync)
    ctrl.queue.start()
    assert await ctrl.process("ns/a") is ReconcileResult.REQUEUE_AFTER
    assert ctrl.queue.num_requeues("ns/a") == 0
    for _ in range(20):  # let the delaying loop park on the clock
        await asyncio.sleep(0)
    assert ctrl.queue.waiting() == 1
    assert len(ctrl.queue) == 0
    clock.advance(29.9)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(ctrl.queue) == 0
    clock.advance(0.1)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(ctrl.queue) == 1
    assert _ends(bus)[0].requeue_after_ms == 30_000
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_requeue_and_errors_back_off_then_drop_after_max_retries() -> None:
    calls: list[str] = []

    async def sync(key: str) -> Result:
        calls.append(key)
        raise ServerError("etcdserver: request timed out", code=500)

    ctrl, _, bus = _controller(sync, max_retries=3)
    results = [await ctrl.process("ns/a") for _ in range(4)]
    assert results == [ReconcileResult.ERROR] * 4
    begins = [e for e in bus.recent() if isinstance(e, ReconcileStarted)]
    assert [b.retries for b in begins] == [0, 1, 2, 3]
    (dropped,) = [e for e in bus.recent() if isinstance(e, ItemDropped)]
    assert (dropped.key, dropped.retries, dropped.reason) == ("ns/a", 3, "max retries")
    assert ctrl.queue.num_requeues("ns/a") == 0
    end = _ends(bus)[0]
    assert end.outcome is Outcome.ERROR
    assert end.error == "ServerError: etcdserver: request timed out"
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_failing_syncs_traceback_is_logged_at_its_first_failure_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each retry logged the same traceback again (up to max_retries of them a key)."""

    async def sync(key: str) -> Result:
        raise KeyError("spec")

    ctrl, _, _ = _controller(sync, max_retries=3)
    with caplog.at_level("WARNING", logger="pycm.controller.worker"):
        for _ in range(4):
            await ctrl.process("ns/a")
    records = [r for r in caplog.records if r.name == "pycm.controller.worker"]
    assert [r.getMessage() for r in records] == [
        *(f"replicaset: error syncing ns/a (retry {n}): 'spec'" for n in range(3)),
        "replicaset: dropping ns/a out of the queue after 3 retries: 'spec'",
    ]
    assert [bool(r.exc_info) for r in records] == [True, False, False, False]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_fenced_write_fails_the_reconcile_with_its_message_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def sync(key: str) -> Result:
        raise FencedError("create", "pods", 11.0, 10.0)

    ctrl, _, bus = _controller(sync, max_retries=3)
    with caplog.at_level("WARNING", logger="pycm.controller.worker"):
        assert await ctrl.process("ns/a") is ReconcileResult.ERROR
    (record,) = [r for r in caplog.records if r.name == "pycm.controller.worker"]
    assert record.getMessage() == (
        "replicaset: error syncing ns/a (retry 0): create pods refused: last lease renew "
        "11.000s ago, renew deadline 10s (a replica that may have lost the lease does not write)"
    )
    assert not record.exc_info
    assert ctrl.queue.num_requeues("ns/a") == 1  # retried with backoff, as any failure
    assert _ends(bus)[0].error.startswith("FencedError: create pods refused")
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_requeue_without_error_uses_the_rate_limiter() -> None:
    async def sync(key: str) -> Result:
        return Result(requeue=True)

    ctrl, _, _ = _controller(sync)
    assert await ctrl.process("ns/a") is ReconcileResult.REQUEUE
    assert ctrl.queue.num_requeues("ns/a") == 1
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_conflict_is_a_quiet_requeue(caplog: pytest.LogCaptureFixture) -> None:
    async def sync(key: str) -> Result:
        raise Conflict("the object has been modified", code=409, reason="Conflict")

    ctrl, _, _ = _controller(sync)
    with caplog.at_level("INFO"):
        assert await ctrl.process("ns/a") is ReconcileResult.CONFLICT
    assert ctrl.queue.num_requeues("ns/a") == 1
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_terminal_error_drops_at_once() -> None:
    async def sync(key: str) -> Result:
        raise TerminalError("selector is empty")

    ctrl, _, bus = _controller(sync)
    assert await ctrl.process("ns/a") is ReconcileResult.ERROR
    (dropped,) = [e for e in bus.recent() if isinstance(e, ItemDropped)]
    assert dropped.reason == "terminal error"
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_reconcile_links_to_the_enqueuing_event() -> None:
    async def sync(key: str) -> None:
        return None

    ctrl, _, bus = _controller(sync)
    ctrl.enqueue("ns/a", Trigger("Pod", "42", "update", "a" * 32, "b" * 16))
    ctrl.enqueue("ns/a", Trigger("ReplicaSet", "43", "update", "c" * 32, "d" * 16))
    key = await ctrl.queue.get()
    await ctrl.process(key)
    ctrl.queue.done(key)
    (begin,) = [e for e in bus.recent() if isinstance(e, ReconcileStarted)]
    assert (begin.trigger_kind, begin.trigger_rv, begin.trigger_span_id) == (
        "ReplicaSet",
        "43",
        "d" * 16,
    )
    assert (begin.namespace, begin.name, begin.resource) == ("ns", "a", "replicasets")
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_controller_started_inside_a_step_runs_each_reconcile_as_a_trace_root() -> None:
    # Regression: workers started inside start-up ran every reconcile as a child of the
    # start-up span (one trace for all), so tail sampling never applied to them.
    done = asyncio.Event()
    seen: list[str] = []

    async def sync(key: str) -> None:
        seen.append(key)
        if len(seen) == 3:
            done.set()

    ctrl, _, bus = _controller(sync)
    with bus.step(StartupBegan(command="run")) as startup:
        task = asyncio.create_task(ctrl.run(workers=2), name="controller")
        for key in ("ns/a", "ns/b", "ns/c"):
            ctrl.enqueue(key, ctrl.trigger({"kind": "Pod", "metadata": {"name": "p"}}, "add"))
    await asyncio.wait_for(done.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    begins = [e for e in bus.recent() if isinstance(e, ReconcileStarted)]
    assert len(begins) == 3
    assert all(b.parent_id == "" for b in begins)
    assert len({b.trace_id for b in begins} | {startup.trace_id}) == 4
    # Neither parented nor linked to start-up: the handler ran inside it, but the event's cause
    # is not whatever span was current then (pycm.trace.causes); this one's is unknown.
    assert {(b.trigger_trace_id, b.trigger_span_id, b.trigger_event) for b in begins} == {
        ("", "", "add")
    }
    ends = _ends(bus)
    assert {e.trace_id for e in ends} == {b.trace_id for b in begins}


@pytest.mark.asyncio
async def test_worker_starts_no_reconcile_while_the_renew_gate_is_closed() -> None:
    seen: list[str] = []

    async def sync(key: str) -> None:
        seen.append(key)

    ctrl, clock, _ = _controller(sync)
    gate = RenewGate(clock, renew_deadline=10.0)
    gate.renewed(clock.monotonic())
    ctrl.gate = gate
    task = asyncio.create_task(ctrl.run(workers=2), name="controller")
    ctrl.enqueue("ns/a")
    for _ in range(20):
        await asyncio.sleep(0)
    assert seen == ["ns/a"]
    clock.advance(10.5)  # the last renew is now older than the renew deadline (a pause)
    ctrl.enqueue("ns/b")
    ctrl.enqueue("ns/c")
    for _ in range(20):
        await asyncio.sleep(0)
    assert seen == ["ns/a"]
    gate.renewed(clock.monotonic())
    for _ in range(20):
        await asyncio.sleep(0)
    assert sorted(seen) == ["ns/a", "ns/b", "ns/c"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_stopping_does_not_wait_for_a_worker_held_at_a_closed_gate() -> None:
    seen: list[str] = []

    async def sync(key: str) -> None:
        seen.append(key)

    ctrl, clock, _ = _controller(sync)
    ctrl.gate = RenewGate(clock, renew_deadline=10.0)  # never renewed: closed
    task = asyncio.create_task(ctrl.run(workers=1), name="controller")
    ctrl.enqueue("ns/a")
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    # Without the stop signal the worker would hold run() for its 10 s stop timeout.
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 2)
    assert seen == []


@pytest.mark.asyncio
async def test_worker_survives_exceptions_and_metrics_count_results() -> None:
    registry = CollectorRegistry()
    seen: list[str] = []

    async def sync(key: str) -> None:
        seen.append(key)
        if key == "ns/bad":
            raise ValueError("boom")

    ctrl, _, bus = _controller(sync, registry=registry)
    task = asyncio.create_task(ctrl.run(workers=2), name="controller")
    ctrl.enqueue("ns/bad")
    ctrl.enqueue("ns/good")
    for _ in range(20):
        await asyncio.sleep(0)
    assert seen[:2] == ["ns/bad", "ns/good"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    value = registry.get_sample_value
    assert (
        value(
            "controller_runtime_reconcile_total", {"controller": "replicaset", "result": "success"}
        )
        == 1
    )
    assert (
        value("controller_runtime_reconcile_total", {"controller": "replicaset", "result": "error"})
        == 1
    )
    assert value("controller_runtime_reconcile_errors_total", {"controller": "replicaset"}) == 1
    assert value("controller_runtime_active_workers", {"controller": "replicaset"}) == 0
    kinds = [type(e) for e in bus.recent()]
    assert ControllerStarted in kinds
    assert kinds[-1] is ControllerStopped


@pytest.mark.asyncio
async def test_stopping_lets_the_sync_in_hand_finish() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def sync(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    ctrl, _, _ = _controller(sync)
    task = asyncio.create_task(ctrl.run(workers=1), name="controller")
    ctrl.enqueue("ns/a")
    await started.wait()
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(task, return_exceptions=True)
    assert finished == ["ns/a"]


def test_controller_metrics_queue_is_counted_on_the_same_registry() -> None:
    # Regression: the manager's /metrics had no workqueue_* families, because the worker loop
    # built its queue without metrics.
    registry = CollectorRegistry()
    ctrl, _, _ = _controller(lambda key: None, registry=registry)
    ctrl.enqueue("ns/a")
    ctrl.enqueue("ns/b")
    assert registry.get_sample_value("workqueue_adds_total", {"name": "replicaset"}) == 2
    assert registry.get_sample_value("workqueue_depth", {"name": "replicaset", "priority": ""}) == 2


@pytest.mark.asyncio
async def test_stalled_reports_a_backlog_without_progress() -> None:
    release = asyncio.Event()

    async def sync(key: str) -> None:
        await release.wait()

    ctrl, clock, _ = _controller(sync)
    assert ctrl.stalled(60) is None  # not running
    task = asyncio.create_task(ctrl.run(workers=1), name="controller")
    ctrl.enqueue("ns/a")
    ctrl.enqueue("ns/b")
    for _ in range(10):
        await asyncio.sleep(0)
    clock.advance(30)
    assert ctrl.stalled(60) is None
    clock.advance(31)
    assert ctrl.stalled(60) == "1 keys waiting, no progress for 61s"
    release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert ctrl.stalled(60) is None
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.asyncio
async def test_reconcile_end_counts_the_api_calls_made_inside_including_subtasks() -> None:
    from pycm.trace.context import note_call

    async def sync(key: str) -> None:
        note_call()

        async def child() -> None:
            note_call()

        await asyncio.gather(child(), child())

    ctrl, _, bus = _controller(sync)
    await ctrl.process("ns/a")
    note_call()  # outside any reconcile: counted nowhere
    (end,) = _ends(bus)
    assert end.api_calls == 3
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_reconcile_counts_calls_in_its_child_steps_but_not_in_a_detached_block() -> None:
    from pycm.trace.context import detached, note_call
    from pycm.trace.kinds import ControllerInitBegan

    async def sync(key: str) -> None:
        with bus.step(ControllerInitBegan(controller="child")):
            note_call()
            with bus.step(ControllerInitBegan(controller="grandchild")):
                note_call()
        with detached():  # not the reconcile's work
            note_call()

    ctrl, _, bus = _controller(sync)
    await ctrl.process("ns/a")
    (end,) = _ends(bus)
    assert end.api_calls == 2
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_a_task_outliving_its_reconcile_counts_in_no_later_one() -> None:
    from pycm.trace.context import note_call

    late = asyncio.Event()

    async def straggler() -> None:
        await late.wait()
        note_call()

    tasks: list[asyncio.Task[None]] = []

    async def sync(key: str) -> None:
        note_call()
        if not tasks:
            tasks.append(asyncio.create_task(straggler()))

    async def second_sync(key: str) -> None:
        late.set()
        await asyncio.sleep(0)  # the straggler counts its call now
        await asyncio.sleep(0)

    ctrl, _, bus = _controller(sync)
    await ctrl.process("ns/a")
    ctrl.sync = second_sync
    await ctrl.process("ns/a")
    await asyncio.gather(*tasks)
    first, second = _ends(bus)
    assert (first.api_calls, second.api_calls) == (1, 0)
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_reconcile_begin_names_are_split_from_each_key() -> None:
    # (The begin's namespace and name are split from the key when the event is built.)
    from pycm.trace.kinds import ReconcileStarted

    async def sync(key: str) -> None:
        pass

    ctrl, _, bus = _controller(sync)
    keys = ["ns/a", "ns/b", "other/c", "ns/a", "no-namespace"]
    for key in keys:
        await ctrl.process(key)
    begins = [e for e in bus.recent() if isinstance(e, ReconcileStarted)]
    assert [(b.namespace, b.name) for b in begins] == [
        ("ns", "a"),
        ("ns", "b"),
        ("other", "c"),
        ("ns", "a"),
        ("", "no-namespace"),
    ]
    await ctrl.queue.aclose()


@pytest.mark.asyncio
async def test_success_forgets_the_key_under_a_limiter_without_exposed_counts() -> None:
    # Two limiters count items: the queue exposes no `requeues`, so the worker calls
    # num_requeues() and forget() (the fast path's fallback).
    clock, bus = FakeClock(), Bus()
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(), ItemFastSlowRateLimiter(0.001, 1.0, 2)
    )
    queue = RateLimitingQueue[str]("replicaset", clock=clock, bus=bus, rate_limiter=limiter)
    fail = True

    async def sync(key: str) -> Result:
        if fail:
            raise ServerError("boom", code=500)
        return Result()

    ctrl = Controller("replicaset", sync, queue=queue, clock=clock, bus=bus)
    assert queue.requeues is None
    await ctrl.process("ns/a")
    assert queue.num_requeues("ns/a") == 1
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        fail = False
        await ctrl.process("ns/a")
        (begin,) = sub.drain()
    assert isinstance(begin, ReconcileStarted) and begin.retries == 1
    assert queue.num_requeues("ns/a") == 0
    await queue.aclose()
