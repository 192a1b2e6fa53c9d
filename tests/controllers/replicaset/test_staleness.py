"""The ReplicaSet controller's staleness guard (KCM 1.36's StaleControllerConsistencyReplicaSet):
KCM's controller fixture for the skip itself, then the emulator with a lagging pod watch for the
double create it prevents."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycm.app.clients import ReplicaSetClientAdapter
from pycm.cache.factory import SharedInformerFactory
from pycm.controller.builder import ControllerBuilder
from pycm.controllers.replicaset.controller import ReplicaSetController
from pycm.controllers.replicaset.metrics import ReplicaSetMetrics
from pycm.kube import Client, load_config
from pycm.kube.client import PatchType
from pycm.kube.resources import PODS, REPLICASETS
from pycm.sim import run_emulator
from pycm.trace.bus import Bus
from tests.controllers.replicaset.test_sync import _fixture, _rs

Obj = dict[str, Any]


def _versioned(controller: ReplicaSetController, client: Any, first_rv: int) -> None:
    """The fake client's creates answer with a resourceVersion, as the API does."""
    create = client.create_pod
    rvs = iter(range(first_rv, first_rv + 1000))

    async def create_pod(namespace: str, body: Obj) -> Obj:
        pod = await create(namespace, body)
        pod["metadata"]["resourceVersion"] = str(next(rvs))
        return pod  # type: ignore[no-any-return]

    client.create_pod = create_pod


@pytest.mark.asyncio
async def test_sync_is_skipped_while_the_pod_cache_is_older_than_its_creates() -> None:
    controller, client, _ = _fixture(_rs(2), [])
    registry = CollectorRegistry()
    controller.rs_metrics = ReplicaSetMetrics(registry)
    _versioned(controller, client, 40)
    controller.pod_informer.fifo.resource_version = "30"
    controller.rs_informer.fifo.resource_version = "30"
    first = await controller.sync("prod/web")
    assert first.action == "created_pods"
    created = client.actions.count(("create", "pods"))
    assert created == 2
    # The pods it made are not in the cache yet (the watch lags): the next sync waits.
    controller.expectations.delete("prod/web")  # (as if they had timed out)
    again = await controller.sync("prod/web")
    assert (again.requeue, again.action) == (True, "stale_cache")
    assert client.actions.count(("create", "pods")) == created  # no second round of creates
    assert controller.stale_skips == {"pods": 1}
    skips = registry.get_sample_value(
        "replicaset_controller_stale_sync_skips_total", {"group": "", "resource": "pods"}
    )
    assert skips == 1.0


@pytest.mark.asyncio
async def test_sync_goes_on_once_every_cache_caught_up_and_forgets_the_writes() -> None:
    controller, client, _ = _fixture(_rs(1), [])
    assert controller.consistency is not None
    _versioned(controller, client, 40)
    controller.pod_informer.fifo.resource_version = "1"
    controller.rs_informer.fifo.resource_version = "1"
    await controller.sync("prod/web")
    assert len(controller.consistency) == 1
    controller.pod_informer.fifo.resource_version = "999"
    controller.rs_informer.fifo.resource_version = "999"
    result = await controller.sync("prod/web")
    assert result.action != "stale_cache"
    # The creates' record did its job and is gone: a pod cache seen "behind" them again (it
    # cannot be, but the guard no longer asks) holds nothing back.
    controller.pod_informer.fifo.resource_version = "1"
    controller.rs_informer.fifo.resource_version = "99999"
    assert (await controller.sync("prod/web")).action != "stale_cache"


@pytest.mark.asyncio
async def test_guard_off_syncs_whatever_the_caches_say() -> None:
    controller, client, _ = _fixture(_rs(2), [])
    controller.consistency = None  # StaleControllerConsistencyReplicaSet=false
    await controller.sync("prod/web")
    controller.expectations.delete("prod/web")
    await controller.sync("prod/web")
    assert client.actions.count(("create", "pods")) == 4  # the double create


# ---------------------------------------------------------------------------------------------
# Against the emulator: a pod watch that lags behind the controller's own creates
# ---------------------------------------------------------------------------------------------

LAG = 3.0  # seconds the pod watch lags (the emulator's watch-lag fault)
EXPECTATIONS_TIMEOUT = 0.5  # KCM's is 5 min: a lag past it is the case, made quick here


class CountingClient(ReplicaSetClientAdapter):
    creates = 0

    async def create_pod(self, namespace: str, body: Obj) -> Obj:
        self.creates += 1
        return await super().create_pod(namespace, body)


def _replicaset(replicas: int) -> Obj:
    labels = {"app": "lagged"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "lagged", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def _until(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
@pytest.mark.parametrize("guard", [True, False], ids=["guard-on", "guard-off"])
async def test_lagging_pod_watch_double_create_is_prevented_by_the_guard(guard: bool) -> None:
    """The pod watch lags 3 s behind; expectations time out first (0.5 s here, 5 min in KCM:
    a lag that long is what the guard is for); a ReplicaSet update then syncs it again.
    Without the guard that sync sees none of the 3 pods it made and makes 3 more; with it, the
    sync waits (counted) until the pod cache has reached its creates."""
    async with run_emulator(tls=False, kubelet=False) as emu:
        emu.faults.add(kind="watch-lag", resource="pods", seconds=LAG, duration=60)
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        kube = await Client.connect(config)
        async with kube:
            bus = Bus()
            factory = SharedInformerFactory(kube, bus=bus)
            client = CountingClient(kube)
            informers = {r: factory.informer_for(r) for r in (REPLICASETS, PODS)}
            controller = ReplicaSetController(
                ControllerBuilder.standalone("replicaset", informers, bus=bus),
                client=client,
                recorder=_NoEvents(),
                staleness_guard=guard,
                expectations_timeout=EXPECTATIONS_TIMEOUT,
            )
            factory.start()
            assert all((await factory.wait_for_cache_sync(timeout=10)).values())
            run = asyncio.create_task(controller.run(2))
            try:
                await kube.create(REPLICASETS, _replicaset(3), namespace="default")
                await _until(lambda: client.creates >= 3, 5, "the first creates")
                made_at = time.monotonic()
                await asyncio.sleep(EXPECTATIONS_TIMEOUT + 0.3)
                touch = {"metadata": {"annotations": {"touched": "yes"}}}
                await kube.patch(
                    REPLICASETS, "lagged", touch, namespace="default", patch_type=PatchType.MERGE
                )
                # Until the lag has passed and the cache caught up, plus a margin.
                await asyncio.sleep(max(0.0, made_at + LAG + 1.0 - time.monotonic()))
                creates = client.creates
                skips = dict(controller.stale_skips)
            finally:
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
                await factory.shutdown(timeout=5)
    if guard:
        assert creates == 3
        assert skips.get("pods", 0) >= 1
    else:
        assert creates >= 6  # the double create (at least: each expiry can add a round)
        assert skips == {}


class _NoEvents:
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        pass
