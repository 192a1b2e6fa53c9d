"""Retries as users expect: a builder-made (plugin) controller retries a failing key for ever
with the default limiter's capped backoff unless its descriptor sets a maximum; the built-ins'
Controller keeps KCM's 15; a dropped key is logged once and counted; a TerminalError records a
Warning event on the object."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller import (
    ControllerBuilder,
    ControllerContext,
    ControllerMetrics,
    Request,
    Result,
    TerminalError,
)
from pycm.controller.builder import TERMINAL_ERROR_REASON
from pycm.controller.worker import DEFAULT_MAX_RETRIES, Controller
from pycm.kube.errors import ServerError
from pycm.kube.resources import CONFIGMAPS
from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemDropped, ItemRequeued, ReconcileResult
from pycm.util.clock import FakeClock


class NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected API call: {name}")


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        self.events.append((obj["apiVersion"], obj["kind"], meta["name"], type_, reason, message))


def _context(
    registry: CollectorRegistry | None = None, recorder: FakeRecorder | None = None
) -> tuple[ControllerContext, list[str]]:
    clock, bus = FakeClock(), Bus()
    asked: list[str] = []

    def recorder_for(name: str) -> Any:
        asked.append(name)
        if recorder is None:
            raise AssertionError(f"unexpected recorder for {name}")
        return recorder

    def refuse(name: str) -> Any:
        raise AssertionError(f"unexpected client for {name}")

    ctx = ControllerContext(
        config=None,
        bus=bus,
        clock=clock,
        client_for=refuse,
        recorder_for=recorder_for,
        informer_factory=SharedInformerFactory(NoClient(), bus=bus, clock=clock),
        metadata_informer_factory=MetadataInformerFactory(NoClient(), bus=bus, clock=clock),
        metrics=ControllerMetrics(registry) if registry is not None else None,
    )
    return ctx, asked


async def _failing(request: Request) -> Result | None:
    raise ServerError("etcdserver: request timed out", code=500)


@pytest.mark.asyncio
async def test_builder_default_retries_for_ever_with_capped_backoff() -> None:
    ctx, _ = _context()
    builder = ControllerBuilder(ctx, "website").for_(CONFIGMAPS)
    builder.complete(_failing)
    controller = builder.controller
    assert controller.max_retries is None
    # 5 ms × 2^n reaches the 1000 s cap at n = 18; 40 tries are well past KCM's 15.
    results = [await controller.process("ns/a") for _ in range(40)]
    assert results == [ReconcileResult.ERROR] * 40
    bus_events = ctx.bus.recent()
    assert not [e for e in bus_events if isinstance(e, ItemDropped)]
    delays = [e.delay_ms for e in bus_events if isinstance(e, ItemRequeued)]
    assert delays[:4] == [5.0, 10.0, 20.0, 40.0]
    assert delays[-1] == 1_000_000.0  # capped at 1000 s
    assert controller.queue.num_requeues("ns/a") == 40
    await controller.queue.aclose()


@pytest.mark.asyncio
async def test_descriptor_max_retries_becomes_the_builders_default() -> None:
    ctx, _ = _context()
    ctx.max_retries = 2  # what the manager sets from the descriptor before its init
    builder = ControllerBuilder(ctx, "website").for_(CONFIGMAPS)
    builder.complete(_failing)
    controller = builder.controller
    for _ in range(3):
        await controller.process("ns/a")
    (dropped,) = [e for e in ctx.bus.recent() if isinstance(e, ItemDropped)]
    assert (dropped.key, dropped.retries, dropped.reason) == ("ns/a", 2, "max retries")
    # An explicit argument wins over the descriptor's.
    assert ControllerBuilder(ctx, "other", max_retries=None)._max_retries is None
    await controller.queue.aclose()


def test_builder_refuses_a_negative_max_retries() -> None:
    ctx, _ = _context()
    with pytest.raises(ValueError, match="max_retries must not be negative"):
        ControllerBuilder(ctx, "website", max_retries=-1)


def test_builtins_controller_keeps_kcms_fifteen() -> None:
    async def sync(key: str) -> None:
        return None

    assert DEFAULT_MAX_RETRIES == 15
    assert Controller("deployment", sync, bus=Bus(), clock=FakeClock()).max_retries == 15


@pytest.mark.asyncio
async def test_dropped_key_is_logged_once_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    ctx, _ = _context(registry)
    builder = ControllerBuilder(ctx, "website", max_retries=1).for_(CONFIGMAPS)
    builder.complete(_failing)
    controller = builder.controller
    with caplog.at_level("WARNING", logger="pycm.controller.worker"):
        for _ in range(2):
            await controller.process("ns/a")
    drops = [r for r in caplog.records if "dropping" in r.getMessage()]
    assert [r.getMessage() for r in drops] == [
        "website: dropping ns/a out of the queue after 1 retries: etcdserver: request timed out"
    ]
    value = registry.get_sample_value(
        "pycm_controller_dropped_keys_total", {"controller": "website", "reason": "max retries"}
    )
    assert value == 1.0
    await controller.queue.aclose()


@pytest.mark.asyncio
async def test_terminal_error_records_a_warning_event_on_the_object() -> None:
    registry = CollectorRegistry()
    recorder = FakeRecorder()
    ctx, asked = _context(registry, recorder)
    builder = ControllerBuilder(ctx, "website").for_(CONFIGMAPS)
    cache = builder.informer(CONFIGMAPS).indexer
    cache.add({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}})

    async def reconcile(request: Request) -> Result | None:
        raise TerminalError(f"image of {request.name} is not allowed")

    builder.complete(reconcile)
    assert asked == []  # no recorder made until one is needed
    assert await builder.controller.process("ns/a") is ReconcileResult.ERROR
    assert await builder.controller.process("ns/gone") is ReconcileResult.ERROR
    # The gone object gets no event (there is nothing to attach it to); the present one does.
    assert recorder.events == [
        ("v1", "ConfigMap", "a", "Warning", TERMINAL_ERROR_REASON, "image of a is not allowed")
    ]
    assert asked == ["website"]
    dropped = [e.reason for e in ctx.bus.recent() if isinstance(e, ItemDropped)]
    assert dropped == ["terminal error", "terminal error"]
    value = registry.get_sample_value(
        "pycm_controller_dropped_keys_total", {"controller": "website", "reason": "terminal error"}
    )
    assert value == 2.0
    await builder.controller.queue.aclose()
