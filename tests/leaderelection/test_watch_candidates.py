"""``pycm lease watch`` on a coordinated Lease (in-process emulator, over HTTP): the line shows
the coordinator's strategy and preferred holder, the Lease's candidates follow (oldest emulation
version first, another Lease's left out), and a change of the preferred holder is an event."""

from __future__ import annotations

import pytest

from pycm.kube import Client
from pycm.kube.config import load_config
from pycm.leaderelection.watch import LeaseTracker, watch_lease
from pycm.sim.leader_coordinator import micro_time
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus
from pycm.trace.kinds import LeaseCoordinationObserved

NS = "kube-system"


def _candidate(name: str, lease: str, emulation: str, renew: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "leaseName": lease,
            "binaryVersion": "1.36.0",
            "emulationVersion": emulation,
            "strategy": "OldestEmulationVersion",
            "renewTime": renew,
        },
    }


@pytest.mark.asyncio
async def test_watch_once_shows_preferred_holder_and_candidates() -> None:
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        store = emu.store
        now = micro_time(store.clock.wall_ns())
        candidates = store.resource("leasecandidates", "coordination.k8s.io")
        store.create(candidates, _candidate("r-new", "pycm", "1.36.0", now), NS)
        store.create(candidates, _candidate("r-old", "pycm", "1.35.0", now), NS)
        store.create(candidates, _candidate("x", "other", "1.30.0", now), NS)
        store.create(
            store.resource("leases", "coordination.k8s.io"),
            {
                "metadata": {"name": "pycm"},
                "spec": {
                    "holderIdentity": "r-new",
                    "leaseDurationSeconds": 5,
                    "renewTime": now,
                    "strategy": "OldestEmulationVersion",
                    "preferredHolder": "r-old",
                },
            },
            NS,
        )
        config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
        lines: list[str] = []
        async with await Client.connect(config, bus=Bus()) as client:
            assert await watch_lease(client, NS, "pycm", lines.append, once=True) == 0
    head, *rest = lines
    assert " holder=r-new " in head
    assert head.endswith(" strategy=OldestEmulationVersion preferred=r-old")
    assert [line.split()[:3] for line in rest] == [
        ["candidate", "r-old", "emulation=1.35.0"],
        ["candidate", "r-new", "emulation=1.36.0"],
    ]


def test_tracker_reports_a_preferred_holder_change_once() -> None:
    bus = Bus(instance="test")
    tracker = LeaseTracker("kube-system/pycm", bus=bus)
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 5, "strategy": "OldestEmulationVersion"}
    tracker.observe({"spec": spec}, 0, 0.0)
    change, _ = tracker.observe({"spec": {**spec, "preferredHolder": "b"}}, 1, 1.0)
    assert change is not None and change.coordination_changed
    again, _ = tracker.observe({"spec": {**spec, "preferredHolder": "b", "renewTime": None}}, 2, 2)
    events = [e for e in bus.recent() if isinstance(e, LeaseCoordinationObserved)]
    assert [(e.holder, e.preferred_holder, e.strategy) for e in events] == [
        ("a", "", "OldestEmulationVersion"),
        ("a", "b", "OldestEmulationVersion"),
    ]
    assert again is None  # the same record: no line, no event
