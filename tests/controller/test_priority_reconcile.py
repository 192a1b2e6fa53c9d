"""The priority queue at the controller level, against the emulator over HTTP: a change made
while a controller works through its informer's initial list is reconciled next, before the
initial keys still queued (controller-runtime's priority queue); with a FIFO queue it waits its
turn. And the enqueue rule itself: initial-list adds and resyncs low, every other event the
default priority, requeues keep the priority the key was taken with — fed by a real informer's
initial list, resync and watch."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.cache.listwatch import FakeListWatch, ListPage, WatchStream
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller import ControllerBuilder, ControllerContext, Request, Result
from pycm.controller.worker import Controller
from pycm.kube.client import Client
from pycm.kube.config import load_config
from pycm.kube.resources import CONFIGMAPS
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import ItemAdded
from pycm.util.clock import REAL_CLOCK, FakeClock
from pycm.workqueue.priority_queue import DEFAULT_PRIORITY, LOW_PRIORITY, PriorityQueue
from tests.cache.helpers import pod, until
from tests.workqueue.conftest import settle

N = 60  # configmaps in the initial list
FRESH = "default/cm-050"  # the one changed while the initial keys are queued


async def _until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait for an effect of real I/O (the emulator's watch): polled, bounded."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def _reconcile_order(*, priority_queue: bool, watch_list: bool) -> list[str]:
    """The keys reconciled, in order, when FRESH changes while the first reconcile holds the
    one worker and the other initial keys wait."""
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        async with await Client.connect(config, bus=Bus()) as client:
            await asyncio.gather(
                *(
                    client.create(
                        CONFIGMAPS,
                        {"metadata": {"name": f"cm-{i:03}", "namespace": "default"}},
                        namespace="default",
                    )
                    for i in range(N)
                )
            )
            bus = Bus()
            factory = SharedInformerFactory(
                client, bus=bus, clock=REAL_CLOCK, watch_list=watch_list
            )
            ctx = ControllerContext(
                config=None,
                bus=bus,
                clock=REAL_CLOCK,
                client_for=lambda name: client,
                recorder_for=lambda name: None,  # type: ignore[arg-type,return-value]
                informer_factory=factory,
                metadata_informer_factory=MetadataInformerFactory(client, bus=bus),
            )
            order: list[str] = []
            first_started, release = asyncio.Event(), asyncio.Event()

            async def reconcile(request: Request) -> Result | None:
                order.append(request.key)
                if len(order) == 1:
                    first_started.set()
                    await release.wait()
                return None

            builder = ControllerBuilder(ctx, "echo", priority_queue=priority_queue)
            run = builder.for_(CONFIGMAPS).complete(reconcile)
            assert isinstance(builder.controller.queue, PriorityQueue) is priority_queue
            factory.start()
            ctx.informers_started.set()
            task = asyncio.create_task(run())
            try:
                await asyncio.wait_for(first_started.wait(), 10)
                assert len(builder.controller.queue) == N - 1  # the rest of the initial list
                namespace, _, name = FRESH.partition("/")
                await client.patch(
                    CONFIGMAPS,
                    name,
                    {"data": {"fresh": "yes"}},
                    namespace=namespace,
                )

                def fresh_enqueued() -> bool:
                    return any(
                        isinstance(e, ItemAdded) and e.key == FRESH and e.reason == "update"
                        for e in bus.recent()
                    )

                await _until(fresh_enqueued, "the update of the fresh configmap")
                release.set()
                await _until(lambda: len(order) >= N, f"{N} reconciles")
                await settle()
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await factory.shutdown(timeout=5)
    return order


@pytest.mark.asyncio
@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "watchlist"])
async def test_priority_queue_fresh_change_reconciled_before_queued_initial_keys(
    watch_list: bool,
) -> None:
    order = await _reconcile_order(priority_queue=True, watch_list=watch_list)
    assert order[1] == FRESH
    # Promoted while it waited: reconciled once, not again in its initial place.
    assert len(order) == N
    assert sorted(order) == sorted(f"default/cm-{i:03}" for i in range(N))


@pytest.mark.asyncio
async def test_fifo_queue_fresh_change_waits_behind_initial_keys() -> None:
    order = await _reconcile_order(priority_queue=False, watch_list=False)
    assert len(order) == N
    assert order.index(FRESH) > N // 2  # its place in the initial list


def _controller(clock: FakeClock) -> Controller:
    async def sync(key: str) -> Result | None:
        return None

    return Controller("c", sync, clock=clock, bus=Bus(clock=clock), priority_queue=True)


def _obj(name: str, rv: str) -> dict[str, Any]:
    return {
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
    }


@pytest.mark.asyncio
async def test_controller_enqueue_gives_initial_and_resync_low_priority() -> None:
    ctrl = _controller(FakeClock())
    queue = ctrl.queue
    assert isinstance(queue, PriorityQueue)
    ctrl.enqueue("ns/initial", ctrl.trigger(_obj("initial", "1"), "add", initial=True))
    ctrl.enqueue("ns/resync", ctrl.trigger(_obj("resync", "2"), "update", _obj("resync", "2")))
    ctrl.enqueue("ns/update", ctrl.trigger(_obj("update", "4"), "update", _obj("update", "3")))
    ctrl.enqueue("ns/add", ctrl.trigger(_obj("add", "5"), "add"))
    ctrl.enqueue("ns/delete", ctrl.trigger(_obj("delete", "6"), "delete"))
    ctrl.enqueue("ns/plain")  # no trigger
    assert dict(queue.priorities()) == {
        "ns/initial": LOW_PRIORITY,
        "ns/resync": LOW_PRIORITY,
        "ns/update": DEFAULT_PRIORITY,
        "ns/add": DEFAULT_PRIORITY,
        "ns/delete": DEFAULT_PRIORITY,
        "ns/plain": DEFAULT_PRIORITY,
    }
    # A fresh change for a key that waits low moves it up.
    ctrl.enqueue("ns/initial", ctrl.trigger(_obj("initial", "7"), "update", _obj("initial", "1")))
    assert queue.priorities()["ns/initial"] == DEFAULT_PRIORITY


@pytest.mark.asyncio
async def test_controller_requeue_keeps_priority_handler_delay_does_not() -> None:
    clock = FakeClock()
    ctrl = _controller(clock)
    queue = ctrl.queue
    assert isinstance(queue, PriorityQueue)
    async with queue:
        ctrl.enqueue("ns/a", ctrl.trigger(_obj("a", "1"), "add", initial=True))
        key = await queue.get()

        async def fails(key: str) -> Result | None:
            raise RuntimeError("boom")

        ctrl.sync = fails
        await ctrl.process(key)  # a failure: rate limited, keeping its low priority
        queue.done(key)
        ctrl.enqueue_after("ns/b", 1.0)  # a handler's delayed add: default priority
        assert dict(queue.delayed_priorities()) == {"ns/a": LOW_PRIORITY, "ns/b": DEFAULT_PRIORITY}
        clock.advance(1.0)
        await settle()
        assert dict(queue.priorities()) == {"ns/a": LOW_PRIORITY, "ns/b": DEFAULT_PRIORITY}


def test_use_priority_queue_swaps_unused_queue_only() -> None:
    async def sync(key: str) -> Result | None:
        return None

    ctrl = Controller("c", sync, clock=FakeClock(), bus=Bus())
    assert not isinstance(ctrl.queue, PriorityQueue)
    limiter = ctrl.queue.rate_limiter
    pq = ctrl.use_priority_queue()
    assert ctrl.queue is pq and pq.rate_limiter is limiter
    assert ctrl.use_priority_queue() is pq
    used = Controller("d", sync, clock=FakeClock(), bus=Bus())
    used.enqueue("ns/a")
    with pytest.raises(RuntimeError, match="in use"):
        used.use_priority_queue()


@pytest.mark.asyncio
async def test_informer_initial_list_and_resync_enqueue_low_fresh_watch_event_first() -> None:
    # A real informer (scripted list and watch, fake clock): its initial-list adds and its
    # resync's updates reach the controller as LOW_PRIORITY keys; a watch event with a new
    # resourceVersion for one of them puts that key first.
    clock = FakeClock()
    bus = Bus(clock=clock)
    stream = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a", "1"), pod("b", "1")], "1")).add_watch(stream)
    informer = SharedIndexInformer(
        lw, "pods", clock=clock, bus=bus, rng=random.Random(1), resync=10.0, progress_interval=0.0
    )
    ctrl = _controller(clock)
    queue = ctrl.queue
    assert isinstance(queue, PriorityQueue)

    def key(obj: Any) -> str:
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    informer.add_event_handler(
        HandlerFuncs(
            on_add=lambda obj, initial: ctrl.enqueue(
                key(obj), ctrl.trigger(obj, "add", initial=initial)
            ),
            on_update=lambda old, new: ctrl.enqueue(key(new), ctrl.trigger(new, "update", old)),
        )
    )
    task = asyncio.create_task(informer.run())
    try:
        await until(lambda: len(queue.priorities()) == 2, "the initial adds")
        assert dict(queue.priorities()) == {"default/a": LOW_PRIORITY, "default/b": LOW_PRIORITY}
        for _ in range(2):
            queue.done(await queue.get())
        clock.advance(10.0)  # the resync: both again, unchanged
        await until(lambda: len(queue.priorities()) == 2, "the resync")
        assert dict(queue.priorities()) == {"default/a": LOW_PRIORITY, "default/b": LOW_PRIORITY}
        stream.push(("MODIFIED", pod("b", "2")))
        await until(lambda: queue.priorities().get("default/b") == 0, "the fresh change")
        assert queue.ready_in_order() == ["default/b", "default/a"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
