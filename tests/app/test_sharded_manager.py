"""``pycm run --sharded`` in-process against the emulator, over HTTP: the sharded controllers
run at once on the member's share while another replica holds the leader lease; a singleton
controller (``sharding="singleton"``) starts only once this replica leads; stopping releases
the member's Lease (its keys move at once) and exits 0. /readyz and /metrics see both starters.
A uid-sharded controller (``sharding="uid"``) runs in a third starter whose primary informer
lists and watches by uid while its other informers cache everything; one that is not built with
ControllerBuilder stops the manager with one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.api.sharding import FIELD_NAMESPACE, FIELD_UID
from pycm.app import wait_for_resources
from pycm.app.controllers import build_registry
from pycm.app.options import ControllerManagerOptions
from pycm.app.run import Manager
from pycm.app.startcontrollers import ControllerStarter
from pycm.controller import ControllerBuilder, ControllerContext, ControllerDescriptor, Request
from pycm.controller.descriptor import SHARD_BY_UID, SINGLETON
from pycm.controller.worker import Controller
from pycm.kube import LEASES, Client, NotFound, load_config
from pycm.kube.resources import CONFIGMAPS, PODS, REPLICASETS
from pycm.sharding.membership import RING_LABEL
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus
from tests.app.leases import lease_held_by_another
from tests.app.test_wait_for_resources import CRDS, WEBSITE_CRD
from tests.support.manifests import workload

pytestmark = pytest.mark.asyncio

NAMESPACE = "default"


@pytest_asyncio.fixture
async def emu_api() -> AsyncIterator[tuple[Emulator, Client]]:
    async with run_emulator(tls=False, kubelet=False, sharded_list_and_watch=True) as emu:
        config = await load_config(str(emu.kubeconfig_path))
        async with await Client.connect(config) as api:
            yield emu, api


class Census:
    """A singleton controller: records when its init ran and keeps running until cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def init(self, ctx: ControllerContext) -> Any:
        self.started.set()

        async def run() -> None:
            await asyncio.Event().wait()

        return run


def _manager(
    kubeconfig: str,
    census: Census,
    *extra: ControllerDescriptor,
    controllers: str = "replicaset,census",
) -> Manager:
    registry = build_registry(plugins=False)
    registry.register(ControllerDescriptor("census", census.init, sharding=SINGLETON))
    for descriptor in extra:
        registry.register(descriptor)
    options = ControllerManagerOptions(known_controllers=registry)
    argv = [
        f"--kubeconfig={kubeconfig}",
        "--secure-port=0",
        f"--controllers={controllers}",
        "--identity=member-1",
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1.5s",
        "--leader-elect-retry-period=0.5s",
        "--sharded",
        "--sharding-lease-duration=2s",
        "--sharding-renew-deadline=1.5s",
        "--sharding-retry-period=0.5s",
    ]
    assert options.parse(argv) == [] and options.validate() == []
    return Manager(options.config().complete(), bus=Bus(), registry=registry)


async def _pods(api: Client, count: int) -> None:
    async with asyncio.timeout(15):
        while len((await api.list(PODS, namespace=NAMESPACE))["items"]) < count:
            await asyncio.sleep(0.05)


async def test_sharded_controllers_run_unelected_singletons_once_leading(
    emu_api: tuple[Emulator, Client],
) -> None:
    emu, api = emu_api
    await api.create(LEASES, lease_held_by_another(), namespace="kube-system")
    census = Census()
    manager = _manager(str(emu.kubeconfig_path), census)
    run = asyncio.ensure_future(manager.run())
    try:
        # Not leading: the sharded replicaset controller reconciles all the same.
        await api.create(REPLICASETS, workload("ReplicaSet", "web", 2), namespace=NAMESPACE)
        await _pods(api, 2)
        assert manager.elector is not None and not manager.elector.is_leader()
        assert not census.started.is_set(), "a singleton started without the lease"
        member_leases = await api.list(
            LEASES, namespace="kube-system", label_selector=f"{RING_LABEL}=pycm"
        )
        assert [lease["spec"]["holderIdentity"] for lease in member_leases["items"]] == ["member-1"]
        # Both starters' queues reach the manager's checks and metrics.
        assert "replicaset" in manager._queues()
        # The leader goes away: this replica leads, and the singleton starts.
        await api.delete(LEASES, "pycm", namespace="kube-system")
        async with asyncio.timeout(10):
            await census.started.wait()
        assert "census" not in manager._queues()  # (it has no queue: a plain runnable)
        assert len(manager.contexts()) == 2
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
    # Leaving released the member's Lease: its keys move at once.
    with pytest.raises(NotFound):
        await api.get(LEASES, "pycm-member-1", namespace="kube-system")


class ConfigMapTally:
    """A uid-sharded controller of ConfigMaps that also reads Pods (a secondary resource)."""

    def __init__(self) -> None:
        self.reconciled: set[str] = set()
        self.changed = asyncio.Event()

    async def init(self, ctx: ControllerContext) -> Any:
        builder = ControllerBuilder(ctx, "cm-tally").for_(CONFIGMAPS)
        builder.watches(PODS, lambda obj: ())

        async def reconcile(request: Request) -> None:
            self.reconciled.add(request.key)
            self.changed.set()

        return builder.complete(reconcile)


def _informer(starter: ControllerStarter | None, name: str) -> Any:
    assert starter is not None
    informers = {informer.resource: informer for _, informer in starter.informers()}
    return informers[name]


async def test_a_uid_sharded_controller_runs_in_its_own_starter_its_primary_sharded_by_uid(
    emu_api: tuple[Emulator, Client],
) -> None:
    emu, api = emu_api
    await api.create(LEASES, lease_held_by_another(), namespace="kube-system")
    tally = ConfigMapTally()
    descriptor = ControllerDescriptor("cm-tally", tally.init, sharding=SHARD_BY_UID)
    manager = _manager(
        str(emu.kubeconfig_path), Census(), descriptor, controllers="replicaset,cm-tally"
    )
    run = asyncio.ensure_future(manager.run())
    try:
        cm = {"metadata": {"name": "one", "namespace": NAMESPACE}, "data": {}}
        await api.create(CONFIGMAPS, cm, namespace=NAMESPACE)
        async with asyncio.timeout(15):
            while f"{NAMESPACE}/one" not in tally.reconciled:  # alone on the ring: all its own
                tally.changed.clear()
                await tally.changed.wait()
        assert manager.uid_starter is not None
        assert set(manager.uid_starter.queues()) == {"cm-tally"}
        assert "cm-tally" not in manager.sharded_starter.queues()  # type: ignore[union-attr]
        primary = _informer(manager.uid_starter, "configmaps").reflector.list_watch
        assert primary.shard_selector is not None and primary.shard_selector.field == FIELD_UID
        secondary = _informer(manager.uid_starter, "pods").reflector.list_watch
        assert secondary.shard_selector is None  # a pod's uid says nothing of its reader's
        pods = _informer(manager.sharded_starter, "pods").reflector.list_watch
        assert pods.shard_selector is not None and pods.shard_selector.field == FIELD_NAMESPACE
        assert manager.member is not None and manager.member.keys_cached() >= 1
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0


async def test_a_uid_sharded_controller_without_a_primary_cache_stops_the_manager(
    emu_api: tuple[Emulator, Client],
) -> None:
    emu, _ = emu_api

    async def init(ctx: ControllerContext) -> Any:
        # A hand-made worker loop: no cache says which object (which uid) a key names.
        ctx.register_queue("hand-made", Controller("hand-made", lambda key: asyncio.sleep(0)))

        async def run() -> None:
            await asyncio.Event().wait()

        return run

    descriptor = ControllerDescriptor("hand-made", init, sharding=SHARD_BY_UID)
    manager = _manager(str(emu.kubeconfig_path), Census(), descriptor, controllers="hand-made")
    assert await asyncio.wait_for(manager.run(), 30) == 1
    assert manager._fatal == (
        "controller 'hand-made': uid sharding needs the cache of the objects its keys name "
        "(build it with ControllerBuilder.for_)"
    )


async def test_a_sharded_controller_that_waited_for_its_kind_is_gated_and_sharded_once_built(
    emu_api: tuple[Emulator, Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    # --wait-for-resources: its init runs again until the CRD is served; the controller it then
    # builds must go through the member's gate like the others (else every member reconciles
    # every key), and its new informers list the member's share.
    emu, api = emu_api
    monkeypatch.setattr(wait_for_resources, "RESOURCE_POLL_INTERVAL", 0.1)
    reconciled: list[str] = []

    async def init(ctx: ControllerContext) -> Any:
        websites = await ctx.resource_for("example.com", "v1", "Website")
        builder = ControllerBuilder(ctx, "website").for_(websites)

        async def reconcile(request: Request) -> None:
            reconciled.append(request.key)

        return builder.complete(reconcile)

    descriptor = ControllerDescriptor(
        "website", init, sharding=SHARD_BY_UID, wait_for_resources=True
    )
    manager = _manager(str(emu.kubeconfig_path), Census(), descriptor, controllers="website")
    run = asyncio.ensure_future(manager.run())
    try:
        async with asyncio.timeout(10):
            while manager.uid_starter is None or manager.uid_starter.context is None:
                await asyncio.sleep(0.05)
        assert manager.uid_starter.queues() == {}  # waiting for its kind
        await api.create(CRDS, WEBSITE_CRD)
        async with asyncio.timeout(10):
            while "website" not in manager.uid_starter.queues():
                await asyncio.sleep(0.05)
        ctx = manager.uid_starter.context
        assert ctx is not None
        websites = await ctx.resource_for("example.com", "v1", "Website")
        await api.create(websites, {"metadata": {"name": "shop", "namespace": NAMESPACE}})
        async with asyncio.timeout(10):
            while not reconciled:
                await asyncio.sleep(0.05)
        assert reconciled == [f"{NAMESPACE}/shop"]
        controller = ctx.queues["website"]
        assert manager.member is not None
        assert controller.key_gate is not None and controller.key_gate is not manager.member.gate
        lw = _informer(manager.uid_starter, "websites.example.com").reflector.list_watch
        assert lw.shard_selector is not None and lw.shard_selector.field == FIELD_UID
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
