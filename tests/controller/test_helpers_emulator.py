"""The operator helpers against the emulator over HTTP with pycm's own client: finalizers
(idempotent, resourceVersion precondition), conditions through the status subresource,
create-or-update, ignore_not_found, and the trace event each one emits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from pycm.controller import (
    EnsureResult,
    add_finalizer,
    create_or_update,
    has_finalizer,
    ignore_not_found,
    remove_finalizer,
    set_condition,
)
from pycm.kube.client import Client
from pycm.kube.config import load_config
from pycm.kube.errors import Conflict, NotFound
from pycm.kube.resources import CONFIGMAPS, DEPLOYMENTS, Resource
from pycm.kube.restmapper import NoKindMatchError, RESTMapper
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import (
    ConditionSet,
    FinalizerAdded,
    FinalizerRemoved,
    ObjectEnsured,
)
from pycm.util.clock import FakeClock

FINALIZER = "example.com/cleanup"


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        async with await Client.connect(config, bus=Bus()) as c:
            yield c


def _events(client: Client, kind: type[Any]) -> list[Any]:
    return [e for e in client.bus.recent() if isinstance(e, kind)]


async def _configmap(client: Client, name: str = "web") -> dict[str, Any]:
    body = {"metadata": {"name": name, "namespace": "default"}, "data": {"a": "1"}}
    return await client.create(CONFIGMAPS, body)


def _deployment(name: str = "web") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            },
        },
    }


@pytest.mark.asyncio
async def test_add_finalizer_is_idempotent_and_traced(client: Client) -> None:
    cm = await _configmap(client)
    added = await add_finalizer(client, CONFIGMAPS, cm, FINALIZER)
    assert has_finalizer(added, FINALIZER)
    live = await client.get(CONFIGMAPS, "web", namespace="default")
    assert live["metadata"]["finalizers"] == [FINALIZER]
    again = await add_finalizer(client, CONFIGMAPS, added, FINALIZER)  # no write
    assert again["metadata"]["resourceVersion"] == added["metadata"]["resourceVersion"]
    (event,) = _events(client, FinalizerAdded)
    assert (event.resource, event.namespace, event.name, event.finalizer) == (
        "configmaps",
        "default",
        "web",
        FINALIZER,
    )


@pytest.mark.asyncio
async def test_add_finalizer_from_a_stale_copy_is_a_conflict(client: Client) -> None:
    stale = await _configmap(client)
    await client.patch(CONFIGMAPS, "web", {"data": {"a": "2"}}, namespace="default")
    with pytest.raises(Conflict):
        await add_finalizer(client, CONFIGMAPS, stale, FINALIZER)
    live = await client.get(CONFIGMAPS, "web", namespace="default")
    assert not live["metadata"].get("finalizers")
    assert _events(client, FinalizerAdded) == []


@pytest.mark.asyncio
async def test_remove_last_finalizer_of_deleted_object_lets_it_go(client: Client) -> None:
    cm = await add_finalizer(client, CONFIGMAPS, await _configmap(client), FINALIZER)
    await client.delete(CONFIGMAPS, "web", namespace="default")
    deleting = await client.get(CONFIGMAPS, "web", namespace="default")
    assert deleting["metadata"]["deletionTimestamp"]
    with pytest.raises(ValueError, match="being deleted"):
        await add_finalizer(client, CONFIGMAPS, deleting, "other.example.com/x")
    await remove_finalizer(client, CONFIGMAPS, deleting, FINALIZER)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "web", namespace="default")
    # Not there any more: no write, no event.
    await remove_finalizer(client, CONFIGMAPS, cm | {"metadata": {"name": "web"}}, FINALIZER)
    assert len(_events(client, FinalizerRemoved)) == 1


@pytest.mark.asyncio
async def test_set_condition_writes_status_and_keeps_transition_time(client: Client) -> None:
    clock = FakeClock()
    clock.set_wall_ns(1_700_000_000 * 10**9)
    deployment = await client.create(DEPLOYMENTS, _deployment())
    written = await set_condition(
        client, DEPLOYMENTS, deployment, "Ready", "False", "Creating", "waiting", clock=clock
    )
    (ready,) = [c for c in written["status"]["conditions"] if c["type"] == "Ready"]
    assert ready["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    # (A DeploymentCondition has no observedGeneration: the server prunes it. The pure
    # set_status_condition tests hold it; the website operator's CRD keeps it.)
    clock.set_wall_ns(1_700_000_100 * 10**9)
    # Same status, new message: changed, but the transition time stays.
    written = await set_condition(
        client, DEPLOYMENTS, written, "Ready", "False", "Creating", "still waiting", clock=clock
    )
    (ready,) = [c for c in written["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["message"], ready["lastTransitionTime"]) == (
        "still waiting",
        "2023-11-14T22:13:20Z",
    )
    # Nothing changed for the server (same resourceVersion). (For a Deployment the helper
    # writes again: its pruned observedGeneration looks missing; a CRD's conditions keep it.)
    same = await set_condition(
        client, DEPLOYMENTS, written, "Ready", "False", "Creating", "still waiting", clock=clock
    )
    assert same["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    written = await set_condition(
        client, DEPLOYMENTS, written, "Ready", "True", "Available", clock=clock
    )
    (ready,) = [c for c in written["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2023-11-14T22:15:00Z")
    live = await client.get(DEPLOYMENTS, "web", namespace="default")
    assert live["spec"]["replicas"] == 1  # the status subresource changed nothing else
    assert [(e.status, e.transitioned) for e in _events(client, ConditionSet)] == [
        ("False", True),
        ("False", False),
        ("False", False),
        ("True", True),
    ]


@pytest.mark.asyncio
async def test_create_or_update_reports_created_updated_unchanged(client: Client) -> None:
    def mutate(data: str) -> Any:
        def set_data(obj: dict[str, Any]) -> None:
            obj["data"] = {"a": data}

        return set_data

    results = []
    for data in ("1", "1", "2"):
        result, obj = await create_or_update(client, CONFIGMAPS, "default", "cfg", mutate(data))
        results.append(result)
        assert obj["data"] == {"a": data}
    assert results == [EnsureResult.CREATED, EnsureResult.UNCHANGED, EnsureResult.UPDATED]
    assert [e.result for e in _events(client, ObjectEnsured)] == results

    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="must not change the name"):
        await create_or_update(client, CONFIGMAPS, "default", "cfg", rename)


@pytest.mark.asyncio
async def test_ignore_not_found_swallows_only_404(client: Client) -> None:
    assert await ignore_not_found(client.delete(CONFIGMAPS, "nope", namespace="default")) is None
    cm = await _configmap(client, "here")
    got = await ignore_not_found(client.get(CONFIGMAPS, "here", namespace="default"))
    assert got is not None and got["metadata"]["uid"] == cm["metadata"]["uid"]
    with pytest.raises(Conflict):
        stale = {**cm, "data": {"a": "x"}}
        await client.update(CONFIGMAPS, {**cm, "data": {"a": "y"}})
        await ignore_not_found(client.update(CONFIGMAPS, stale))


CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
WEBSITE_CRD = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "examples/website-operator/deploy/crd.yaml").read_text()
)


async def _websites(client: Client) -> Resource:
    """The Website CRD installed; its resource once discovery serves it."""
    await client.create(CRDS, WEBSITE_CRD)
    mapper = RESTMapper(client)
    for _ in range(200):
        try:
            return await mapper.resource_for("example.com", "v1", "Website")
        except NoKindMatchError:
            await asyncio.sleep(0.05)
    raise AssertionError("the Website CRD was never served")


@pytest.mark.asyncio
async def test_helpers_on_a_custom_resource_status_subresource_and_generation(
    client: Client,
) -> None:
    websites = await _websites(client)
    assert websites.subresources == {"status"}
    body = {"metadata": {"name": "shop", "namespace": "default"}, "spec": {"image": "nginx"}}
    site = await add_finalizer(client, websites, await client.create(websites, body), FINALIZER)
    site = await set_condition(client, websites, site, "Ready", "False", "Progressing", "0 of 1")
    (ready,) = site["status"]["conditions"]
    assert ready["observedGeneration"] == site["metadata"]["generation"] == 1
    # The spec changes: generation 2; the same condition again records the new generation.
    site = await client.patch(websites, "shop", {"spec": {"replicas": 3}}, namespace="default")
    assert site["metadata"]["generation"] == 2
    site = await set_condition(client, websites, site, "Ready", "False", "Progressing", "0 of 1")
    assert site["status"]["conditions"][0]["observedGeneration"] == 2
    # And once more: nothing changed, nothing written (the CRD keeps observedGeneration).
    same = await set_condition(client, websites, site, "Ready", "False", "Progressing", "0 of 1")
    assert same["metadata"]["resourceVersion"] == site["metadata"]["resourceVersion"]
    assert [e.observed_generation for e in _events(client, ConditionSet)] == [1, 2]
    # The status write left the spec alone; the finalizer is there.
    live = await client.get(websites, "shop", namespace="default")
    assert live["spec"] == {"image": "nginx", "replicas": 3}
    assert live["metadata"]["finalizers"] == [FINALIZER]
