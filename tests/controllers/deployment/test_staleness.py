"""The deployment controller's staleness guard (pycm's StaleControllerConsistencyDeployment):
a sync after its own ReplicaSet create waits for the ReplicaSet cache instead of creating the
ReplicaSet again (KCM's fixture: preloaded caches, sync(key), the recorded actions)."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.controllers.deployment.controller import DeploymentController
from tests.controllers.deployment.test_sync import FakeClient, _deployment, _fixture

Obj = dict[str, Any]


def _versioned(client: FakeClient) -> None:
    """Creates answer with a resource version, as the API does."""
    create = client.create_replica_set

    async def create_replica_set(namespace: str, body: Obj) -> Obj:
        created = await create(namespace, body)
        client._rv += 1
        created["metadata"]["resourceVersion"] = str(client._rv)
        return created

    client.create_replica_set = create_replica_set  # type: ignore[method-assign]


def _lagging(controller: DeploymentController, rv: str) -> None:
    for informer in controller.informers:
        informer.fifo.resource_version = rv


def _creates(client: FakeClient) -> int:
    return sum(1 for verb, what in client.actions if verb == "create")


@pytest.mark.asyncio
async def test_sync_after_its_own_create_waits_for_the_replicaset_cache() -> None:
    controller, client, _ = _fixture(_deployment(), [])
    _versioned(client)
    _lagging(controller, "60")  # past the deployment's 50, behind every write to come
    first = await controller.sync("prod/web")
    assert first.action != "stale_cache"
    assert _creates(client) == 1
    again = await controller.sync("prod/web")  # the RS cache has not seen the create
    assert (again.requeue, again.action) == (True, "stale_cache")
    assert _creates(client) == 1
    assert controller.stale_skips == {"replicasets.apps": 1}  # its first write, checked first
    _lagging(controller, str(10**9))  # caught up
    assert (await controller.sync("prod/web")).action != "stale_cache"


@pytest.mark.asyncio
async def test_guard_off_creates_again_from_a_stale_cache() -> None:
    controller, client, _ = _fixture(_deployment(), [])
    controller.consistency = None  # --feature-gates=StaleControllerConsistencyDeployment=false
    _versioned(client)
    await controller.sync("prod/web")
    await controller.sync("prod/web")
    assert _creates(client) == 2  # the same ReplicaSet created twice
