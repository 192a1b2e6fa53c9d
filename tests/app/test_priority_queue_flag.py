"""--controller-priority-queue: off by default (KCM's controllers have no priority queue); on,
the built-in deployment and replicaset controllers get a priority queue, and their plain
workqueue_depth series (priority="") is gone rather than stuck at 0."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycm.app.config import CompletedConfig
from pycm.app.controllers import DEPLOYMENT, REPLICASET
from pycm.app.options.options import ControllerManagerOptions
from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.controller import ControllerContext, ControllerMetrics
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.priority_queue import PriorityQueue


class NoClient:
    """The informers are never started here: any call to the API is a test bug."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected API call: {name}")


def _completed(argv: list[str]) -> CompletedConfig:
    options = ControllerManagerOptions()
    errors = options.parse(argv) + options.validate()
    assert errors == []
    return options.config().complete(identity="test-id")


def _context(config: CompletedConfig, registry: CollectorRegistry) -> ControllerContext:
    """A manager's controller context with no API behind it (nothing may call it)."""
    clock, bus = FakeClock(), Bus()
    return ControllerContext(
        config=config,
        bus=bus,
        clock=clock,
        client_for=lambda name: NoClient(),  # type: ignore[arg-type,return-value]
        recorder_for=lambda name: NoClient(),  # type: ignore[arg-type,return-value]
        informer_factory=SharedInformerFactory(NoClient(), bus=bus, clock=clock),
        metadata_informer_factory=MetadataInformerFactory(NoClient(), bus=bus, clock=clock),
        metrics=ControllerMetrics(registry),
    )


async def _built_ins(config: CompletedConfig, registry: CollectorRegistry) -> ControllerContext:
    ctx = _context(config, registry)
    for descriptor in (DEPLOYMENT, REPLICASET):
        await descriptor.init(ctx)
    return ctx


def _depth_priorities(registry: CollectorRegistry, name: str) -> set[str]:
    (family,) = [f for f in registry.collect() if f.name == "workqueue_depth"]
    return {s.labels["priority"] for s in family.samples if s.labels["name"] == name}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], False, id="default-off"),
        pytest.param(["--controller-priority-queue"], True, id="on"),
        pytest.param(["--controller-priority-queue=false"], False, id="off"),
    ],
)
async def test_controller_priority_queue_flag_gives_built_ins_priority_queue(
    argv: list[str], expected: bool
) -> None:
    config = _completed(argv)
    assert config.controllers.priority_queue is expected
    registry = CollectorRegistry()
    ctx = await _built_ins(config, registry)
    for name in ("deployment", "replicaset"):
        queue = ctx.queues[name].queue
        assert isinstance(queue, PriorityQueue) is expected
        ctx.queues[name].enqueue(f"ns/{name}")
        assert _depth_priorities(registry, name) == ({"0"} if expected else {""})
