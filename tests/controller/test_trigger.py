"""Controller.trigger and the worker: a true cause for every reconcile (pycm.trace.causes)."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.cache.shared_informer import note_writers
from pycm.cache.transform import drop_managed_fields
from pycm.controller import Controller, Result
from pycm.kube.errors import ServerError
from pycm.trace.bus import Bus
from pycm.trace.causes import RELIST
from pycm.trace.kinds import ReconcileStarted, StartupBegan
from pycm.util.clock import FakeClock


def _obj(rv: str, replicas: int = 2, **meta: Any) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"namespace": "default", "name": "web", "resourceVersion": rv, **meta},
        "spec": {"replicas": replicas},
    }


def _controller(bus: Bus, sync: Any = None) -> Controller:
    async def ok(key: str) -> Result:
        return Result()

    return Controller("deployment", sync or ok, resource="deployments", bus=bus, clock=FakeClock())


def _scripted(results: list[Any]) -> Any:
    """A sync that returns (or raises) the next of ``results`` each time."""

    async def sync(key: str) -> Result:
        outcome = results.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome  # type: ignore[no-any-return]

    return sync


async def _begins(bus: Bus, ctrl: Controller, *keys: str) -> list[ReconcileStarted]:
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        for key in keys:
            await ctrl.process(key)
        events = sub.drain()
    assert all(isinstance(e, ReconcileStarted) for e in events)
    return events  # type: ignore[return-value]


@pytest.mark.asyncio
async def test_an_outside_write_names_the_writer_the_object_names_and_the_changed_paths() -> None:
    bus = Bus(instance="pycm-0")
    ctrl = _controller(bus)
    # What the informer's transform sees first: the object as served, managedFields and all.
    noting = note_writers(bus.causes, drop_managed_fields)
    entries = [
        {"manager": "kubectl-create", "operation": "Update", "time": "2026-12-06T10:00:00Z"},
        {
            "manager": "kubectl-scale",
            "operation": "Update",
            "time": "2026-12-06T10:05:00Z",
            "subresource": "scale",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
        },
    ]
    cached = noting(_obj("12", 3, managedFields=entries))
    assert "managedFields" not in cached["metadata"]  # dropped after the writer was noted
    ctrl.enqueue("default/web", ctrl.trigger(cached, "update", _obj("11", 2)))
    (begin,) = await _begins(bus, ctrl, "default/web")
    assert (begin.trigger_event, begin.trigger_kind, begin.trigger_object, begin.trigger_rv) == (
        "update",
        "Deployment",
        "default/web",
        "12",
    )
    assert (begin.trigger_writer, begin.trigger_operation, begin.trigger_write_time) == (
        "kubectl-scale",
        "Update",
        "2026-12-06T10:05:00Z",
    )
    assert begin.trigger_paths == "spec.replicas"
    assert (begin.trigger_trace_id, begin.trigger_span_id, begin.trigger_controller) == ("", "", "")


@pytest.mark.asyncio
async def test_the_informers_own_events_are_named_initial_resync_and_relist() -> None:
    bus = Bus(instance="pycm-0")
    ctrl = _controller(bus)
    bus.causes.note_writer("default", "web", "14", RELIST)
    with bus.step(StartupBegan(command="run")):  # handlers run inside start-up: no link to it
        ctrl.enqueue("default/a", ctrl.trigger(_obj("12"), "add", initial=True))
        ctrl.enqueue("default/b", ctrl.trigger(_obj("13"), "update", _obj("13")))
        ctrl.enqueue("default/c", ctrl.trigger(_obj("14", 5), "update", _obj("12")))
    begins = await _begins(bus, ctrl, "default/a", "default/b", "default/c")
    assert [(b.trigger_event, b.trigger_trace_id, b.trigger_span_id) for b in begins] == [
        ("initial", "", ""),
        ("resync", "", ""),
        ("relist", "", ""),
    ]
    assert begins[2].trigger_paths == "spec.replicas"


@pytest.mark.asyncio
async def test_events_merged_while_the_key_waits_are_counted_first_and_last_named() -> None:
    bus = Bus(instance="pycm-0")
    ctrl = _controller(bus)
    bus.causes.note_writer("default", "web", "20", (("kubectl-edit", "Update", "t", ""),))
    ctrl.enqueue("default/web", ctrl.trigger(_obj("20"), "update", _obj("19", 1)))
    for rv in ("21", "22"):
        ctrl.enqueue("default/web", ctrl.trigger(_obj(rv), "update", _obj("20")))
    (begin,) = await _begins(bus, ctrl, "default/web")
    assert begin.trigger_merged == 3
    assert (begin.trigger_rv, begin.first_trigger_rv, begin.first_trigger_writer) == (
        "22",
        "20",
        "kubectl-edit",
    )
    assert begin.first_trigger_event == "update" and begin.first_trigger_object == "default/web"
    # The next reconcile starts afresh.
    ctrl.enqueue("default/web", ctrl.trigger(_obj("23"), "update", _obj("22")))
    (again,) = await _begins(bus, ctrl, "default/web")
    assert (again.trigger_merged, again.first_trigger_rv) == (1, "")


@pytest.mark.asyncio
async def test_a_retry_and_a_requeue_name_the_reconcile_that_asked_for_them() -> None:
    bus = Bus(instance="pycm-0")
    results: list[Any] = [
        ServerError("boom"),
        Result(requeue=True),
        Result(requeue_after=5.0),
        Result(),
    ]

    ctrl = _controller(bus, _scripted(results))
    first, second, third, fourth = await _begins(bus, ctrl, *["ns/a"] * 4)
    assert first.trigger_event == "" and first.trigger_merged == 0
    assert (second.trigger_event, second.trigger_span_id, second.trigger_key) == (
        "retry",
        first.span_id,
        "ns/a",
    )
    assert second.trigger_trace_id == first.trace_id
    assert second.trigger_controller == "deployment"
    assert (third.trigger_event, third.trigger_span_id) == ("requeue", second.span_id)
    assert (fourth.trigger_event, fourth.trigger_span_id) == ("requeue_after", third.span_id)


@pytest.mark.asyncio
async def test_a_delayed_retry_that_fires_after_a_watch_event_still_names_the_retry() -> None:
    # A sync fails; before its backoff ends a watch event brings the key back and that
    # reconcile (which takes the merged trigger) succeeds; the backoff's add then still lands
    # (as client-go's delaying queue does) and its reconcile names the failed one, not nothing.
    bus = Bus(instance="pycm-0")
    results: list[Any] = [ServerError("boom"), Result(), Result()]

    ctrl = _controller(bus, _scripted(results))
    (failed,) = await _begins(bus, ctrl, "default/web")
    ctrl.enqueue("default/web", ctrl.trigger(_obj("30"), "update", _obj("29")))
    (by_event,) = await _begins(bus, ctrl, "default/web")
    assert (by_event.trigger_event, by_event.trigger_merged) == ("update", 2)
    assert by_event.first_trigger_span_id == failed.span_id
    (by_backoff,) = await _begins(bus, ctrl, "default/web")  # the delayed add's reconcile
    assert (by_backoff.trigger_event, by_backoff.trigger_span_id) == ("retry", failed.span_id)
    assert by_backoff.trigger_merged == 1
    # Consumed: a later reconcile with no event and no requeue names nothing.
    results.append(Result())
    (after,) = await _begins(bus, ctrl, "default/web")
    assert after.trigger_event == ""


@pytest.mark.asyncio
async def test_a_retry_whose_own_backoff_brings_the_key_is_named_once() -> None:
    bus = Bus(instance="pycm-0")
    results: list[Any] = [ServerError("boom"), Result(), Result()]

    ctrl = _controller(bus, _scripted(results))
    failed, retried, plain = await _begins(bus, ctrl, *["default/web"] * 3)
    assert (retried.trigger_event, retried.trigger_span_id) == ("retry", failed.span_id)
    assert plain.trigger_event == ""  # the retry's cause was taken once, not left behind
