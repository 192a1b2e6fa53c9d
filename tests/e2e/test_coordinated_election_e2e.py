"""Coordinated leader election end to end: two real ``pycm run`` processes with
``--feature-gates=CoordinatedLeaderElection=true`` on the emulator with its coordinator on. The
replica emulating the older version (``--emulated-version=1.35``) ends up leading, whichever
candidate appeared first; a replica that led before is asked to step down and exits as KCM does
on a lost lease. Lease 2 s, renew deadline 1.5 s, retry 0.5 s."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.e2e.conftest import LEASE_DURATION, NAMESPACE, SLACK, Cluster, running_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

GATE = "--feature-gates=CoordinatedLeaderElection=true"


@pytest_asyncio.fixture
async def coordinated(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp_path, coordinated_leader_election=True) as cluster:
        yield cluster


async def test_coordinator_elects_the_replica_with_the_older_emulation_version(
    coordinated: Cluster,
) -> None:
    cluster = coordinated
    new = await cluster.start("replica-new", GATE)
    old = await cluster.start("replica-old", GATE, "--emulated-version=1.35")
    await asyncio.gather(cluster.wait_serving(new), cluster.wait_serving(old))
    # Nominally ~1 s (the older one's candidate first) to ~4 s (a hand-over: the newer one's
    # renew deadline, then its lease's expiry); the bound is for a loaded machine.
    took = await cluster.leases.wait_for(lambda h: h == "replica-old", timeout=20)
    await asyncio.sleep(LEASE_DURATION)  # it keeps the lease: the best candidate leads
    assert cluster.leases.holder == "replica-old"
    assert cluster.leases.holders_after(took) == ["replica-old"] * len(
        cluster.leases.holders_after(took)
    )
    # The candidates, as kube's API serves them.
    res = cluster.emu.store.resource("leasecandidates", "coordination.k8s.io")
    published = {
        c["metadata"]["name"]: c["spec"]["emulationVersion"]
        for c in cluster.emu.store.list(res, NAMESPACE)[0]
    }
    assert published == {"replica-new": "1.36.0", "replica-old": "1.35.0"}
    # A lease handed over by the coordinator only after the former holder's term ran out.
    history = [s.record for s in cluster.leases.history]
    for a, b in itertools.pairwise(history):
        if a.holder_identity and b.holder_identity and a.holder_identity != b.holder_identity:
            gap = (b.renew_time_ns - a.renew_time_ns) / 1e9
            assert gap >= a.lease_duration_seconds - 0.1, f"handed over after {gap:.2f}s"
    if new.events("lease.acquired"):
        # It led first (its candidate came first): asked to step down, it lost and exited 1.
        assert await new.exit_code(timeout=10 * SLACK) == 1, new.log()
        assert "stepped down: the coordinator prefers replica-old" in new.log()
    else:
        # Never led (perhaps named holder, then asked to hand over before it renewed even
        # once, which it then never did): a standby that keeps waiting.
        assert new.process.returncode is None, new.log()
    assert old.events("lease.candidate_renewed")
    assert old.events("lease.acquired")
