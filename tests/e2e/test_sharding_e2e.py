"""Sharded mode end to end: three ``pycm run --sharded`` replicas against one emulator (its
``ShardedListAndWatch`` gate on) split the namespaces; no key is reconciled by two members in
overlapping time; a killed member's namespaces are reconciled by the others within its lease.

Every reconcile is read from the replicas' own trace files (``reconcile.begin`` and
``reconcile.end``, by span): the intervals of one key on two members must never overlap. The
namespaces are chosen so that each member owns some under the ring of all three (kube's FNV-1a
barely spreads names that differ only in their last characters; see docs/operations.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.api.sharding import hash_field
from pycm.sharding.membership import RING_LABEL, VIEW_ANNOTATION
from pycm.sharding.ring import Ring
from tests.e2e.conftest import NAMESPACE, SLACK, Cluster, Replica, running_cluster
from tests.support.manifests import workload

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

MEMBERS = ("member-a", "member-b", "member-c")
# Short membership timings (client-go's ratios), as the e2e leader election's.
LEASE, RENEW, RETRY = 2.0, 1.5, 0.5
SHARDED = [
    "--sharded",
    f"--sharding-lease-duration={LEASE}s",
    f"--sharding-renew-deadline={RENEW}s",
    f"--sharding-retry-period={RETRY}s",
]
PER_MEMBER = 2  # namespaces each member owns at the start


def _namespaces() -> dict[str, str]:
    """Namespace → owner under the ring of all three members, ``PER_MEMBER`` each."""
    ring = Ring.of(MEMBERS)
    chosen: dict[str, str] = {}
    counts: dict[str, int] = defaultdict(int)
    for word in ("alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima"):
        for suffix in ("apps", "web", "jobs", "data"):
            name = f"{word}-{suffix}"
            owner = ring.owner(hash_field(name))
            assert owner is not None
            if counts[owner] < PER_MEMBER:
                counts[owner] += 1
                chosen[name] = owner
    assert all(counts[m] == PER_MEMBER for m in MEMBERS), counts
    return chosen


class _Api:
    def __init__(self, cluster: Cluster) -> None:
        headers = {"Authorization": f"Bearer {cluster.emu.admin_token}"}
        self.http = httpx.AsyncClient(base_url=cluster.emu.url, headers=headers, verify=False)

    async def create(self, path: str, body: dict[str, Any]) -> None:
        r = await self.http.post(path, json=body)
        assert r.status_code == 201, r.text

    async def replica_sets(self, namespace: str) -> list[dict[str, Any]]:
        r = await self.http.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")
        r.raise_for_status()
        items: list[dict[str, Any]] = r.json()["items"]
        return items

    async def views(self) -> dict[str, str]:
        """Each member Lease's holder → its published view (the ring it adopted)."""
        r = await self.http.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases",
            params={"labelSelector": f"{RING_LABEL}=pycm"},
        )
        r.raise_for_status()
        # (The ring's layout Lease, if a member wrote one, has no holder and no view.)
        return {
            lease["spec"]["holderIdentity"]: lease["metadata"]["annotations"][VIEW_ANNOTATION]
            for lease in r.json()["items"]
            if lease["spec"].get("holderIdentity")
        }

    async def pods(self, namespace: str) -> int:
        r = await self.http.get(f"/api/v1/namespaces/{namespace}/pods")
        r.raise_for_status()
        return len(r.json()["items"])


def _reconciles(replica: Replica) -> list[tuple[str, str, float, float]]:
    """(controller, key, begin, end) of each finished reconcile in the replica's trace."""
    begins = {e["span_id"]: e for e in replica.events("reconcile.begin")}
    out = []
    for end in replica.events("reconcile.end"):
        begin = begins.get(end["span_id"])
        if begin is not None:
            key = str(begin["key"])
            out.append(
                (str(begin["controller"]), key, int(begin["ts"]) / 1e9, int(end["ts"]) / 1e9)
            )
    return out


def _overlaps(replicas: list[Replica]) -> list[str]:
    """Every pair of reconciles of one key on two members that overlap in time."""
    by_key: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for replica in replicas:
        for controller, key, begin, end in _reconciles(replica):
            by_key[(controller, key)].append((begin, end, replica.identity))
    found = []
    for (controller, key), spans in by_key.items():
        spans.sort()
        for (b1, e1, m1), (b2, e2, m2) in itertools.pairwise(spans):
            if m1 != m2 and b2 < e1:
                found.append(f"{controller} {key}: {m1} {b1:.3f}–{e1:.3f}, {m2} {b2:.3f}–{e2:.3f}")
    return found


async def _until(predicate: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    async with asyncio.timeout(timeout):
        while not await predicate():
            await asyncio.sleep(0.1)
    del what
    return time.monotonic() - started


@pytest_asyncio.fixture
async def sharded(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp_path, sharded_list_and_watch=True) as cluster:
        yield cluster


async def test_three_members_split_the_namespaces_and_take_over_a_killed_one(
    sharded: Cluster,
) -> None:
    cluster = sharded
    owners = _namespaces()
    api = _Api(cluster)
    try:
        for namespace in owners:
            await api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        replicas = [await cluster.start(m, *SHARDED) for m in MEMBERS]
        await asyncio.gather(*(cluster.wait_serving(r) for r in replicas))

        async def the_ring_agrees() -> bool:
            everyone = ",".join(sorted(MEMBERS))
            views = await api.views()
            return sorted(views) == sorted(MEMBERS) and set(views.values()) == {everyone}

        # Until every member published the ring of all three, the first ones own more.
        await _until(the_ring_agrees, 10 + SLACK, "the three members' views")
        for namespace in owners:
            await api.create(
                f"/apis/apps/v1/namespaces/{namespace}/deployments",
                workload("Deployment", "web", namespace=None),
            )

        async def every_deployment_has_its_pod() -> bool:
            counts = [await api.pods(ns) for ns in owners]
            return all(c == 1 for c in counts)

        await _until(every_deployment_has_its_pod, 30, "each deployment's pod")

        # Each member reconciled the deployments of its own namespaces, and only those.
        def reconciled(replica: Any) -> set[str]:
            return {
                key.split("/")[0]
                for controller, key, _, _ in _reconciles(replica)
                if controller == "deployment"
            }

        def mine(replica: Any) -> set[str]:
            return {ns for ns, owner in owners.items() if owner == replica.identity}

        async def traces_caught_up() -> bool:  # a loaded manager's file trails its writes
            return all(reconciled(r) >= mine(r) for r in replicas)

        with contextlib.suppress(TimeoutError):
            await _until(traces_caught_up, 10, "the members' traces")
        for replica in replicas:
            assert reconciled(replica) == mine(replica), (
                replica.identity,
                reconciled(replica),
                mine(replica),
                replica.log(),
            )
        assert _overlaps(replicas) == []

        # Kill one member: its namespaces move to the others within its lease.
        victim = replicas[0]
        orphaned = [ns for ns, owner in owners.items() if owner == victim.identity]
        os.kill(victim.process.pid, signal.SIGKILL)
        await victim.process.wait()
        killed = time.monotonic()
        for namespace in orphaned:
            await api.create(
                f"/apis/apps/v1/namespaces/{namespace}/deployments",
                workload("Deployment", "api", namespace=None),
            )

        async def the_orphans_are_served() -> bool:
            for ns in orphaned:
                names = {
                    rs["metadata"]["name"].rsplit("-", 1)[0] for rs in await api.replica_sets(ns)
                }
                if "api" not in names:
                    return False
            return True

        await _until(the_orphans_are_served, LEASE + 20 * SLACK, "the killed member's namespaces")
        took = time.monotonic() - killed
        survivors = replicas[1:]

        def taken_by() -> set[str]:
            return {
                replica.identity
                for replica in survivors
                for controller, key, _, _ in _reconciles(replica)
                if controller == "deployment" and key.split("/")[0] in orphaned
            }

        async def recorded() -> bool:  # a loaded manager's trace file may trail its writes
            return bool(taken_by())

        with contextlib.suppress(TimeoutError):
            await _until(recorded, 10, "the survivors' traces")
        assert taken_by(), "no survivor reconciled the killed member's namespaces"
        # The survivors waited out the killed member's lease (it could not release it): its last
        # renew may have been up to one jittered retry period before the kill.
        assert took >= LEASE - 1.2 * RETRY - 0.1, took
        assert _overlaps(replicas) == []
    finally:
        await api.http.aclose()
