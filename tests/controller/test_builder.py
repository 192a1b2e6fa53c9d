"""The controller builder: for_/owns/watches wire informer events to the queue's keys, and
complete() builds a worker loop that is traced, counted and under the health check."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory
from pycm.cache.store import DeletedFinalStateUnknown
from pycm.controller import (
    ControllerBuilder,
    ControllerContext,
    ControllerMetrics,
    Request,
    Result,
)
from pycm.kube.resources import CONFIGMAPS, NAMESPACES, PODS, REPLICASETS, Resource
from pycm.trace.bus import Bus
from pycm.trace.kinds import ReconcileStarted
from pycm.util.clock import FakeClock


class NoClient:
    """The informers are never started here: any call to the API is a test bug."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected API call: {name}")


def _context(registry: CollectorRegistry | None = None) -> ControllerContext:
    clock, bus = FakeClock(), Bus()

    def refuse(name: str) -> Any:
        raise AssertionError(f"unexpected client or recorder for {name}")

    return ControllerContext(
        config=None,
        bus=bus,
        clock=clock,
        client_for=refuse,
        recorder_for=refuse,
        informer_factory=SharedInformerFactory(NoClient(), bus=bus, clock=clock),
        metadata_informer_factory=MetadataInformerFactory(NoClient(), bus=bus, clock=clock),
        metrics=ControllerMetrics(registry) if registry is not None else None,
    )


async def _noop(request: Request) -> Result | None:
    return None


def _handlers(ctx: ControllerContext, resource: Resource) -> Any:
    (registration,) = ctx.informer_factory.informer_for(resource).registrations
    return registration.handler


async def _queued(builder: ControllerBuilder) -> list[str]:
    queue = builder.controller.queue
    keys = []
    while len(queue):
        key = await queue.get()
        queue.done(key)
        keys.append(key)
    return keys


def _obj(kind: str, name: str, *, refs: list[dict[str, Any]] | None = None, **meta: Any) -> Any:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": refs or [], **meta},
    }


def _ref(kind: str, name: str, api_version: str, *, controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "controller": controller}


@pytest.mark.asyncio
async def test_builder_owns_event_on_owned_enqueues_controller_owner() -> None:
    ctx = _context()
    builder = ControllerBuilder(ctx, "rs").for_(REPLICASETS).owns(PODS)
    builder.complete(_noop)
    pods = _handlers(ctx, PODS)
    pods.on_add(_obj("Pod", "p1", refs=[_ref("ReplicaSet", "web", "apps/v1")]), False)
    # Not a controller reference; a controller of another kind; of another group: no owner.
    pods.on_add(
        _obj("Pod", "p2", refs=[_ref("ReplicaSet", "a", "apps/v1", controller=False)]), False
    )
    pods.on_add(_obj("Pod", "p3", refs=[_ref("Deployment", "b", "apps/v1")]), False)
    pods.on_add(_obj("Pod", "p4", refs=[_ref("ReplicaSet", "c", "example.com/v1")]), False)
    pods.on_add(_obj("Pod", "p5"), False)
    old = _obj("Pod", "p6", refs=[_ref("ReplicaSet", "old", "apps/v1")])
    pods.on_update(old, _obj("Pod", "p6", refs=[_ref("ReplicaSet", "new", "apps/v1")]))
    gone = _obj("Pod", "p7", refs=[_ref("ReplicaSet", "last", "apps/v1")])
    pods.on_delete(DeletedFinalStateUnknown("ns/p7", gone))
    assert await _queued(builder) == ["ns/web", "ns/new", "ns/last"]


@pytest.mark.asyncio
async def test_builder_for_event_enqueues_object_predicate_filters() -> None:
    ctx = _context()

    def labelled(obj: Any) -> bool:
        return bool((obj["metadata"].get("labels") or {}).get("echo") == "true")

    builder = ControllerBuilder(ctx, "echo").for_(CONFIGMAPS, predicate=labelled)
    builder.complete(_noop)
    cms = _handlers(ctx, CONFIGMAPS)
    on, off = {"labels": {"echo": "true"}}, {"labels": {}}
    cms.on_add(_obj("ConfigMap", "plain", **off), False)
    cms.on_add(_obj("ConfigMap", "a", **on), False)
    cms.on_update(_obj("ConfigMap", "plain", **off), _obj("ConfigMap", "plain", **off))
    # Leaving the filter is an event too (the old object passed).
    cms.on_update(_obj("ConfigMap", "b", **on), _obj("ConfigMap", "b", **off))
    cms.on_delete(_obj("ConfigMap", "c", **on))
    assert await _queued(builder) == ["ns/a", "ns/b", "ns/c"]


@pytest.mark.asyncio
async def test_builder_watches_enqueues_what_map_func_names() -> None:
    ctx = _context()
    builder = (
        ControllerBuilder(ctx, "x")
        .for_(CONFIGMAPS)
        .watches(NAMESPACES, lambda ns: [Request(ns["metadata"]["name"], "settings"), "other"])
    )
    builder.complete(_noop)
    _handlers(ctx, NAMESPACES).on_add({"metadata": {"name": "team-a"}}, False)
    assert await _queued(builder) == ["team-a/settings", "other"]


@pytest.mark.asyncio
async def test_builder_complete_registers_queue_reconcile_traced_and_counted() -> None:
    registry = CollectorRegistry()
    ctx = _context(registry)
    seen: list[Request] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        return Result(action="echoed")

    builder = ControllerBuilder(ctx, "echo", workers=2).for_(CONFIGMAPS)
    run = builder.complete(reconcile)
    assert callable(run)
    assert ctx.queues == {"echo": builder.controller}  # under the workqueues health check
    sub = ctx.bus.subscribe(name="test", maxsize=100)
    await builder.controller.process("ns/hello")
    assert seen == [Request("ns", "hello")]
    begins = [e for e in sub.drain() if isinstance(e, ReconcileStarted)]
    assert [(b.controller, b.key, b.resource) for b in begins] == [
        ("echo", "ns/hello", "configmaps")
    ]
    total = registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "echo", "result": "success"}
    )
    assert total == 1.0


@pytest.mark.asyncio
async def test_builder_two_controllers_share_one_informer_each_own_handler() -> None:
    ctx = _context()
    first = ControllerBuilder(ctx, "one").for_(CONFIGMAPS)
    second = ControllerBuilder(ctx, "two").for_(CONFIGMAPS)
    first.complete(_noop)
    second.complete(_noop)
    informer = ctx.informer_factory.informer_for(CONFIGMAPS)
    assert [r.name for r in informer.registrations] == ["one/configmaps", "two/configmaps"]
    assert set(ctx.queues) == {"one", "two"}


def test_builder_misuse_raises_at_init() -> None:
    ctx = _context()
    with pytest.raises(ValueError, match="call for_"):
        ControllerBuilder(ctx, "a").owns(PODS)
    with pytest.raises(ValueError, match="needs for_"):
        ControllerBuilder(ctx, "a").complete(_noop)
    with pytest.raises(ValueError, match="already called"):
        ControllerBuilder(ctx, "a").for_(PODS).for_(PODS)
    with pytest.raises(ValueError, match="at least one worker"):
        ControllerBuilder(ctx, "a", workers=0)
    built = ControllerBuilder(ctx, "a").for_(PODS)
    built.complete(_noop)
    with pytest.raises(ValueError, match="complete\\(\\) was already called"):
        built.complete(_noop)
    with pytest.raises(ValueError, match="'a' is already registered"):
        ControllerBuilder(ctx, "a").for_(PODS).complete(_noop)


def test_request_key_round_trip() -> None:
    assert Request.from_key("ns/name") == Request("ns", "name")
    assert Request.from_key("cluster-scoped").key == "cluster-scoped"
    assert Request("ns", "name").key == "ns/name"
