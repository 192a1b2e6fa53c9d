"""Sharded mode's membership as the manager wires it (``--sharded``): the member's Lease in
``--sharding-lease-namespace``, joined before any sharded informer starts (and read again each
retry period until the ring it sees holds: members started together would otherwise each list a
larger share first, and keep that memory), renewed every retry period, and left — drained,
released, its Lease deleted — when the manager stops.

It runs as a LEADER_ELECTION-group service: opened before the caches (the informers start with
the member's share), stopped after the controllers and caches (nothing is in flight any more,
so the leave is at once and the member's keys move without waiting out its Lease).
"""

from __future__ import annotations

import asyncio
import logging

from pycm.app.options.leaderelection import lease_namespace
from pycm.app.parts import Parts
from pycm.app.runnables import Group
from pycm.app.sharding import ShardedMember
from pycm.kube import Client
from pycm.sharding.layout_writer import LayoutWriter
from pycm.sharding.leases import ClientLeaseStore, namespace_names
from pycm.sharding.membership import Membership, MembershipConfig
from pycm.sharding.metrics import ShardingMetrics
from pycm.util.tasks import cancel_and_wait

__all__ = ["start_membership"]

log = logging.getLogger("pycm.app")


class _MemberService:
    """The member as a service: start joins (and returns), stop leaves (bounded)."""

    def __init__(self, member: ShardedMember) -> None:
        self.member = member
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.member.join()
        waited = await self.member.settle()
        membership = self.member.membership
        claims = membership.claims
        log.info(
            "sharding: joined ring %r as %s (Lease %s); %d member(s) after %d period(s)",
            membership.config.ring,
            membership.config.identity,
            membership.name,
            len(claims.target(membership.clock.monotonic())),
            waited,
        )
        self._task = asyncio.get_running_loop().create_task(
            self.member.run(), name="sharding membership"
        )

    async def stop(self) -> None:
        task = self._task
        if task is None:
            return
        self.member.stop()
        # Leaving takes a tick or two (drained already: the controllers stopped first); a
        # member that cannot reach the API server gives up and lets its Lease expire instead.
        config = self.member.membership.config
        done, _ = await asyncio.wait({task}, timeout=config.retry_period * 2 + 1.0)
        if not done:
            log.warning(
                "sharding: could not release Lease %s; it expires", self.member.membership.name
            )
        await cancel_and_wait([task])


async def start_membership(parts: Parts, client: Client) -> ShardedMember:
    """The member, added to the LEADER_ELECTION group (which joins it when it opens)."""
    sharding = parts.config.sharding
    pod_namespace = client.config.namespace if client.config.in_cluster else ""
    namespace = lease_namespace(sharding.lease_namespace, pod_namespace)
    config = MembershipConfig(
        ring=sharding.ring,
        identity=parts.identity,
        lease_duration=sharding.lease_duration,
        renew_deadline=sharding.renew_deadline,
        retry_period=sharding.retry_period,
    )
    sharding_client = client.with_user_agent("pycm/sharding")
    store = ClientLeaseStore(sharding_client, namespace)
    membership = Membership(
        config,
        store,
        in_flight=list,
        clock=parts.clock,
        bus=parts.bus,  # shard.* events: pycm top's Sharding view, the dashboard's ring panel
        metrics=ShardingMetrics(parts.metrics_registry),  # controller_sharding_*
        # Any member may write the ring's layout (namespaces FNV-1a clusters, spread): it lists
        # the namespaces' names every 10 periods; without RBAC for that it says so once and
        # follows the layouts others write.
        layouts=LayoutWriter(store, lambda: namespace_names(sharding_client)),
    )
    member = ShardedMember(membership)
    await parts.groups.add_service(
        Group.LEADER_ELECTION, "sharding membership", _MemberService(member)
    )
    return member
