"""The API client notes each write made in a reconcile (pycm.trace.causes), so the watch event it
brings names that reconcile as its cause: the resourceVersion in the trace point too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from pycm.controller import Controller, Result
from pycm.kube import Client
from pycm.kube import resources as kube_resources
from pycm.trace.bus import Bus
from pycm.trace.kinds import ReconcileStarted
from tests.kube.conftest import Recorder, api_events


def _created(request: httpx.Request) -> httpx.Response:
    name = "web-6dc5" if request.method == "POST" else request.url.path.rsplit("/", 1)[-1]
    rv = {"POST": "8", "PUT": "9", "PATCH": "10"}.get(request.method)
    if request.method == "DELETE":
        return httpx.Response(200, json={"kind": "Status", "status": "Success"})
    meta = {"name": name, "namespace": "default", "resourceVersion": rv}
    return httpx.Response(200 if request.method != "POST" else 201, json={"metadata": meta})


@pytest.mark.asyncio
async def test_a_reconciles_writes_are_the_cause_of_the_events_they_bring(
    make_client: Callable[..., Client], recorder: Recorder, bus: Bus
) -> None:
    recorder.default = _created
    client = make_client()
    rs = kube_resources.REPLICASETS

    async def sync(key: str) -> Result:
        await client.create(rs, {"metadata": {"generateName": "web-", "namespace": "default"}})
        await client.update(rs, {"metadata": {"name": "web-6dc5", "namespace": "default"}})
        await client.patch(rs, "web-6dc5", {"spec": {}}, namespace="default")
        await client.delete(rs, "web-gone", namespace="default")
        return Result()

    deployments = Controller("deployment", sync, resource="deployments", bus=bus)
    replicasets = Controller("replicaset", sync, resource="replicasets", bus=bus)
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        await deployments.process("default/web")
        (cause,) = sub.drain()
    assert [(e.verb, e.name, e.resource_version) for e in api_events(bus)] == [
        ("create", "web-6dc5", "8"),  # the name the server gave
        ("update", "web-6dc5", "9"),
        ("patch", "web-6dc5", "10"),
        ("delete", "web-gone", ""),
    ]
    for rv, verb in (("8", "create"), ("9", "update"), ("10", "patch")):
        obj = {"kind": "ReplicaSet", "metadata": {"namespace": "default", "name": "web-6dc5"}}
        obj["metadata"]["resourceVersion"] = rv
        trigger = replicasets.trigger(obj, "add" if verb == "create" else "update")
        assert trigger.ids() == (cause.trace_id, cause.span_id)
        assert trigger.cause_controller_key() == ("deployment", "default/web")
        assert trigger.verb == verb
    gone = {"metadata": {"namespace": "default", "name": "web-gone", "resourceVersion": "11"}}
    assert replicasets.trigger(gone, "delete").verb == "delete"
    # Another object at the same resourceVersion, or the same one at another: no cause.
    other = {"metadata": {"namespace": "default", "name": "web-zzz", "resourceVersion": "8"}}
    assert replicasets.trigger(other, "add").ids() == ("", "")


@pytest.mark.asyncio
async def test_a_write_outside_a_reconcile_or_a_dry_run_is_no_cause(
    make_client: Callable[..., Client], recorder: Recorder, bus: Bus
) -> None:
    recorder.default = _created
    client = make_client()
    rs = kube_resources.REPLICASETS
    await client.update(rs, {"metadata": {"name": "a", "namespace": "default"}})

    async def sync(key: str) -> Result:
        await client.update(rs, {"metadata": {"name": "b", "namespace": "default"}}, dry_run=True)
        return Result()

    ctrl = Controller("replicaset", sync, resource="replicasets", bus=bus)
    await ctrl.process("default/x")
    assert len(bus.causes) == 0
    assert [e.resource_version for e in api_events(bus)] == ["9", "9"]


@pytest.mark.asyncio
async def test_an_event_before_the_writes_response_names_the_write_in_flight(
    make_client: Callable[..., Client], recorder: Recorder, bus: Bus
) -> None:
    client = make_client()
    manager = client.config.user_agent.split("/", 1)[0]
    rs = kube_resources.PODS
    replicasets = Controller("replicaset", _ok, resource="replicasets", bus=bus)
    seen: dict[str, Any] = {}

    def served(request: httpx.Request) -> httpx.Response:
        # The watch event comes first: the pod as stored, naming its writers.
        pod = {
            "kind": "Pod",
            "metadata": {
                "namespace": "default",
                "name": "web-x1",
                "generateName": "web-",
                "resourceVersion": "8",
            },
        }
        bus.causes.note_writer("default", "web-x1", "8", ((manager, "Update", "t1", ""),))
        seen["ours"] = replicasets.trigger(pod, "add")
        # Another writer's newer entry: not this write's event.
        bus.causes.note_writer(
            "default",
            "web-x1",
            "9",
            ((manager, "Update", "t1", ""), ("kubelet", "Update", "t2", "status")),
        )
        pod["metadata"]["resourceVersion"] = "9"
        seen["theirs"] = replicasets.trigger(pod, "update")
        return httpx.Response(201, json={"metadata": {"name": "web-x1", "resourceVersion": "8"}})

    recorder.default = served

    async def sync(key: str) -> Result:
        await client.create(rs, {"metadata": {"generateName": "web-", "namespace": "default"}})
        return Result()

    deployments = Controller("deployment", sync, resource="deployments", bus=bus)
    with bus.subscribe(name="t", kinds=(ReconcileStarted.KIND,)) as sub:
        await deployments.process("default/web")
        (cause,) = sub.drain()
    assert seen["ours"].ids() == (cause.trace_id, cause.span_id)
    assert seen["ours"].verb == "create"
    assert seen["theirs"].ids() == ("", "") and seen["theirs"].writer == "kubelet"
    assert bus.causes.in_flight_of("default", "web-x1", "web-") is None  # ended with it


async def _ok(key: str) -> Result:
    return Result()
