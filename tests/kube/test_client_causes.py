"""The API client notes each write made in a reconcile (pycm.trace.causes), so the watch event it
brings names that reconcile as its cause: the resourceVersion in the trace point too."""

from __future__ import annotations

from collections.abc import Callable

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
