"""The built-ins' own handler rules, through the builder wiring they declare: the Deployment
controller's deletePod (Recreate: the last pod's deletion enqueues the deployment), the
ReplicaSet controller's minReadySeconds recheck and its expectations observed by pod events."""

from __future__ import annotations

from typing import Any

import pytest

from pycm.controller import Controller
from tests.controller.test_builder import _queued
from tests.controllers.deployment import test_sync as deployment_fixture
from tests.controllers.replicaset import test_sync as replicaset_fixture

Obj = dict[str, Any]


class _Built:
    """What _queued reads: the built controller's queue."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller


def _pod_handler(informer: Any) -> Any:
    (registration,) = informer.registrations
    return registration.handler


@pytest.mark.parametrize(
    ("strategy", "left", "queued"),
    [
        pytest.param("Recreate", 0, ["prod/web"], id="recreate-last-pod-gone"),
        pytest.param("Recreate", 1, [], id="recreate-pods-remain"),
        pytest.param("RollingUpdate", 0, [], id="rolling-never"),
    ],
)
@pytest.mark.asyncio
async def test_deployment_pod_delete_enqueues_recreate_deployment_when_none_remain(
    strategy: str, left: int, queued: list[str]
) -> None:
    rs = deployment_fixture._rs("web-1", 2)
    remaining = [deployment_fixture._pod(f"p{i}", rs) for i in range(left)]
    controller, _, _ = deployment_fixture._fixture(
        deployment_fixture._deployment(strategy=strategy), [rs], remaining
    )
    gone = deployment_fixture._pod("gone", rs)
    _pod_handler(controller.informers[2]).on_delete(gone)
    assert await _queued(_Built(controller.controller)) == queued


@pytest.mark.asyncio
async def test_replicaset_pod_events_observe_expectations_and_recheck_min_ready() -> None:
    rs = replicaset_fixture._rs(3, min_ready=30)
    controller, _, _ = replicaset_fixture._fixture(rs, [])
    controller.expectations.expect_creations("prod/web", 1)
    controller.expectations.expect_deletions_of("prod/web", ["prod/old"])
    assert not controller.expectations.satisfied("prod/web")
    pods = _pod_handler(controller.pod_informer)
    pending = replicaset_fixture._pod("p1", ready_for=None)
    pods.on_add(pending, False)
    pods.on_delete(replicaset_fixture._pod("old"))
    assert controller.expectations.satisfied("prod/web")
    assert await _queued(_Built(controller.controller)) == ["prod/web"]
    ready = replicaset_fixture._pod("p1", ready_for=0)
    pods.on_update(pending, ready | {"metadata": {**ready["metadata"], "resourceVersion": "2"}})
    assert await _queued(_Built(controller.controller)) == ["prod/web"]
    # Turned Ready under minReadySeconds 30: the ReplicaSet again 31 s later.
    delayed = controller.controller.queue.delayed_items()
    assert list(delayed) == ["prod/web"]
