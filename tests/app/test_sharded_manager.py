"""``pycm run --sharded`` in-process against the emulator, over HTTP: the sharded controllers
run at once on the member's share while another replica holds the leader lease; a singleton
controller (``sharding="singleton"``) starts only once this replica leads; stopping releases
the member's Lease (its keys move at once) and exits 0. /readyz and /metrics see both starters.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.app.controllers import build_registry
from pycm.app.options import ControllerManagerOptions
from pycm.app.run import Manager
from pycm.controller import ControllerContext, ControllerDescriptor
from pycm.controller.descriptor import SINGLETON
from pycm.kube import LEASES, Client, NotFound, load_config
from pycm.kube.resources import PODS, REPLICASETS
from pycm.sharding.membership import RING_LABEL
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus
from tests.app.leases import lease_held_by_another, replicaset

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


def _manager(kubeconfig: str, census: Census) -> Manager:
    registry = build_registry(plugins=False)
    registry.register(ControllerDescriptor("census", census.init, sharding=SINGLETON))
    options = ControllerManagerOptions(known_controllers=registry)
    argv = [
        f"--kubeconfig={kubeconfig}",
        "--secure-port=0",
        "--controllers=replicaset,census",
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
        await api.create(REPLICASETS, replicaset("web"), namespace=NAMESPACE)
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
