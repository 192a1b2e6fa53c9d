from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from pycm.cache.factory import MetadataInformerFactory, SharedInformerFactory, resource_name
from pycm.cache.listwatch import ClientListWatch
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from tests.cache.helpers import pod, settle, until


@dataclass(frozen=True)
class Res:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True


PODS = Res("", "v1", "pods", "Pod")
DEPLOYMENTS = Res("apps", "v1", "deployments", "Deployment")


@dataclass
class Event:
    type: str
    object: dict[str, Any]


class FakeClient:
    """Records list/watch calls; lists answer from ``objects``; ``stuck`` resources never
    answer; watches stay open until cancelled."""

    def __init__(self) -> None:
        self.objects: dict[Any, list[dict[str, Any]]] = {}
        self.stuck: set[Any] = set()
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        self.watch_events: list[Event] = []

    async def list(self, resource: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("list", resource, kwargs))
        if resource in self.stuck:
            await asyncio.Event().wait()
        items = self.objects.get(resource, [])
        return {"items": list(items), "metadata": {"resourceVersion": "7"}}

    @asynccontextmanager
    async def watch(self, resource: Any, **kwargs: Any) -> AsyncIterator[AsyncIterator[Event]]:
        self.calls.append(("watch", resource, kwargs))

        async def events() -> AsyncIterator[Event]:
            for e in self.watch_events:
                yield e
            await asyncio.Event().wait()

        yield events()


def test_resource_name_core_and_grouped() -> None:
    assert (resource_name(PODS), resource_name(DEPLOYMENTS)) == ("pods", "deployments.apps")


@pytest.mark.asyncio
async def test_factory_informer_for_same_resource_same_object_and_start_is_idempotent() -> None:
    clock = FakeClock()
    client = FakeClient()
    factory = SharedInformerFactory(client, bus=Bus(clock=clock), clock=clock, gc_tuning=False)
    pods = factory.informer_for(PODS)
    assert factory.informer_for(PODS) is pods
    assert factory.informer_for(DEPLOYMENTS) is not pods
    try:
        assert factory.start() == 2
        assert factory.start() == 0
        factory.informer_for(Res("", "v1", "nodes", "Node", namespaced=False))
        assert factory.start() == 1
        synced = await factory.wait_for_cache_sync()
        assert set(synced.values()) == {True} and len(synced) == 3
    finally:
        assert await factory.shutdown() == []
    with pytest.raises(RuntimeError):
        factory.start()


@pytest.mark.asyncio
async def test_factory_wait_for_cache_sync_timeout_reports_unsynced() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.stuck.add(DEPLOYMENTS)
    client.objects[PODS] = [pod("a")]
    factory = SharedInformerFactory(client, bus=Bus(clock=clock), clock=clock, gc_tuning=False)
    factory.informer_for(PODS)
    factory.informer_for(DEPLOYMENTS)
    factory.start()
    try:
        waiting = asyncio.create_task(factory.wait_for_cache_sync(timeout=5.0))
        await until(lambda: factory.informer_for(PODS).has_synced(), "pods synced")
        await settle()
        assert not waiting.done()
        clock.advance(5.0)
        assert await waiting == {PODS: True, DEPLOYMENTS: False}
    finally:
        await factory.shutdown()


@pytest.mark.asyncio
async def test_factory_lister_reads_the_shared_cache() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.objects[PODS] = [pod("a", ns="n1"), pod("b", ns="n2")]
    factory = SharedInformerFactory(client, bus=Bus(clock=clock), clock=clock, gc_tuning=False)
    lister = factory.lister_for(PODS)
    factory.start()
    try:
        await factory.wait_for_cache_sync()
        assert [o["metadata"]["name"] for o in lister.list("n2")] == ["b"]
    finally:
        await factory.shutdown()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("factory_cls", "metadata_only"),
    [
        pytest.param(SharedInformerFactory, False, id="full-objects"),
        pytest.param(MetadataInformerFactory, True, id="metadata"),
    ],
)
async def test_factory_list_and_watch_calls_carry_scope(
    factory_cls: type[SharedInformerFactory], metadata_only: bool
) -> None:
    clock = FakeClock()
    client = FakeClient()
    factory = factory_cls(
        client, namespace="team-a", bus=Bus(clock=clock), clock=clock, gc_tuning=False
    )
    factory.informer_for(PODS)
    factory.start()
    try:
        await until(lambda: len(client.calls) == 2, "list and watch")
    finally:
        await factory.shutdown()
    (_, _, list_kwargs), (_, _, watch_kwargs) = client.calls
    assert list_kwargs == {
        "limit": 500,
        "continue_": None,
        "resource_version": "0",
        "namespace": "team-a",
        "metadata_only": metadata_only,
    }
    assert watch_kwargs["resource_version"] == "7"
    assert watch_kwargs["allow_watch_bookmarks"] is True
    assert watch_kwargs["metadata_only"] is metadata_only


@pytest.mark.asyncio
async def test_client_list_watch_adapts_pages_and_watch_events() -> None:
    client = FakeClient()
    client.objects[PODS] = [pod("a")]
    client.watch_events = [Event("ADDED", pod("b", "8"))]
    lw = ClientListWatch(client, PODS, label_selector="app=web", field_selector="x=y")
    page = await lw.list(resource_version="0", limit=10, continue_=None)
    assert (len(page.items), page.resource_version, page.continue_) == (1, "7", None)
    async with lw.watch(resource_version="7", timeout_seconds=300, allow_watch_bookmarks=True) as s:
        kind, obj = await anext(s)
    assert (kind, obj["metadata"]["name"]) == ("ADDED", "b")
    assert client.calls[0][2]["label_selector"] == "app=web"
    assert client.calls[1][2]["field_selector"] == "x=y"
    assert client.calls[1][2]["timeout_seconds"] == 300


@pytest.mark.asyncio
async def test_factory_wait_for_cache_sync_informer_task_ended_stops_waiting_for_it() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.objects[PODS] = [pod("a")]
    client.stuck.add(DEPLOYMENTS)
    factory = SharedInformerFactory(client, bus=Bus(clock=clock), clock=clock, gc_tuning=False)
    factory.informer_for(PODS)
    factory.informer_for(DEPLOYMENTS)
    factory.start()
    try:
        waiting = asyncio.create_task(factory.wait_for_cache_sync())  # no timeout
        await until(lambda: factory.informer_for(PODS).has_synced(), "pods synced")
        await settle()
        assert not waiting.done()
        factory._tasks[DEPLOYMENTS].cancel()  # as if it had died: it will never sync
        assert await asyncio.wait_for(waiting, timeout=5) == {PODS: True, DEPLOYMENTS: False}
    finally:
        await factory.shutdown()
