"""The reconcile gate end to end: a leading ``pycm run`` paused (SIGSTOP) past its renew deadline
starts no reconcile after SIGCONT until it has renewed the lease — or it exits on the loss.

Timings as the other leader-election e2e tests (lease 2 s, renew deadline 1.5 s, retry 0.5 s).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import LEASE_DURATION, RENEW_DEADLINE, SLACK, Cluster, Replica
from tests.support.manifests import workload

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

PAUSE = RENEW_DEADLINE + LEASE_DURATION  # past the renew deadline and the whole lease
# Each lease call of the resumed leader waits this long (under the lock call bound, 1 s): the
# renewal after the resume is slow, while the events buffered during the pause are at hand.
RENEW_LATENCY = 0.6


async def _create(cluster: Cluster, name: str) -> None:
    headers = {"Authorization": f"Bearer {cluster.emu.admin_token}"}
    async with httpx.AsyncClient(base_url=cluster.emu.url, headers=headers, verify=False) as api:
        r = await api.post(
            "/apis/apps/v1/namespaces/default/deployments", json=workload("Deployment", name)
        )
        assert r.status_code == 201, r.text


async def _leading_with_reconciles(cluster: Cluster, identity: str) -> Replica:
    (replica,) = await cluster.start_all(identity)
    await cluster.leases.wait_for(lambda h: h == identity, timeout=10)
    await _create(cluster, "before")
    async with asyncio.timeout(20):
        while not replica.events("reconcile.end"):
            await asyncio.sleep(0.1)
    return replica


def _after(replica: Replica, kind: str, wall_ns: int) -> list[dict[str, Any]]:
    return [e for e in replica.events(kind) if int(e["ts"]) > wall_ns]


async def test_paused_leader_starts_no_reconcile_after_sigcont_until_it_has_renewed(
    cluster: Cluster,
) -> None:
    leader = await _leading_with_reconciles(cluster, "replica-a")
    os.kill(leader.process.pid, signal.SIGSTOP)
    try:
        # Work for it while it sleeps: the watch events wait in its socket.
        await _create(cluster, "during")
        cluster.emu.faults.add(
            kind="latency", seconds=RENEW_LATENCY, resource="leases", user="replica-a", duration=30
        )
        await asyncio.sleep(PAUSE)
    finally:
        resumed_ns = time.time_ns()
        os.kill(leader.process.pid, signal.SIGCONT)
    async with asyncio.timeout(RENEW_DEADLINE + SLACK + 10):
        while not (
            _after(leader, "lease.renewed", resumed_ns)
            and _after(leader, "reconcile.end", resumed_ns)
        ):
            assert leader.process.returncode is None, leader.log()
            await asyncio.sleep(0.1)
    leader.process.terminate()
    assert await leader.exit_code(20) == 0, leader.log()
    renewed = _after(leader, "lease.renewed", resumed_ns)
    begins = _after(leader, "reconcile.begin", resumed_ns)
    assert begins, "the deployment created during the pause was reconciled"
    first_renewal = min(int(e["seq"]) for e in renewed)
    early = [e["key"] for e in begins if int(e["seq"]) < first_renewal]
    assert early == [], f"reconciles began after SIGCONT before the lease was renewed: {early}"
    assert "not starting a reconcile until the lease is renewed" in leader.log_file.read_text()


async def test_paused_leader_whose_lease_was_taken_exits_without_reconciling(
    cluster: Cluster,
) -> None:
    leader = await _leading_with_reconciles(cluster, "replica-a")
    standby = await cluster.start("replica-b")
    await cluster.wait_serving(standby)
    os.kill(leader.process.pid, signal.SIGSTOP)
    try:
        await cluster.leases.wait_for(lambda h: h == "replica-b", timeout=LEASE_DURATION + 10)
        await _create(cluster, "during")
        await asyncio.sleep(RENEW_DEADLINE)
    finally:
        resumed_ns = time.time_ns()
        os.kill(leader.process.pid, signal.SIGCONT)
    code = await leader.exit_code(RENEW_DEADLINE + SLACK + 10)
    assert code not in (0, None), f"the old leader exited {code}"
    assert leader.events("lease.lost")
    begins = _after(leader, "reconcile.begin", resumed_ns)
    assert begins == [], f"the old leader reconciled after SIGCONT: {[e['key'] for e in begins]}"
