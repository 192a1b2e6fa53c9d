"""Leader election as the manager wires it (KCM's leaderElectAndRun): the Lease lock in
``--leader-elect-resource-namespace``, the coordinated candidate (KEP-4355) when its gate is
on, the healthz watchdog, and the elector in the LEADER_ELECTION group. Leading runs
``take_over`` (StartControllers, or the warm standby's workers); a lost lease is fatal."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from pycm.app.clients import LeaseClientAdapter
from pycm.app.errors import ManagerError
from pycm.app.features import BINARY_VERSION, COORDINATED_LEADER_ELECTION
from pycm.app.options.leaderelection import lease_namespace
from pycm.app.parts import Parts
from pycm.app.runnables import Group
from pycm.kube import Client
from pycm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaderHealthzAdaptor,
)
from pycm.leaderelection.candidate import LeaseCandidate, kube_version
from pycm.leaderelection.elector import LeaderMetrics
from pycm.leaderelection.resourcelock import LeaseLock

__all__ = ["start_election"]

log = logging.getLogger("pycm.app")


def start_election(
    parts: Parts, client: Client, *, take_over: Callable[[], Awaitable[None]]
) -> LeaderElector:
    """The elector (and the candidate) added to the LEADER_ELECTION group, which starts them
    when it opens; ``parts.fail(reason)`` hears of a lost lease or a takeover that failed."""
    config, identity, bus, clock = parts.config, parts.identity, parts.bus, parts.clock
    groups, fail = parts.groups, parts.fail
    le = config.leader_election
    pod_namespace = client.config.namespace if client.config.in_cluster else ""
    namespace = lease_namespace(le.resource_namespace, pod_namespace)
    lock = LeaseLock(
        LeaseClientAdapter(client.with_user_agent("pycm/leader-election")),
        namespace,
        le.resource_name,
        identity,
    )
    # Coordinated leader election (KEP-4355): publish a LeaseCandidate and let the API
    # server's coordinator name the holder (pycm.leaderelection.candidate).
    gates = config.feature_gates
    coordinated = gates.enabled(COORDINATED_LEADER_ELECTION)
    if coordinated:
        candidate = LeaseCandidate(
            client.with_user_agent("pycm/leader-election"),
            namespace,
            identity,
            le.resource_name,
            kube_version(BINARY_VERSION),
            kube_version(gates.emulated_version),
            clock=clock,
            bus=bus,
        )
        groups.add(Group.LEADER_ELECTION, "lease candidate", candidate.run)
    watchdog = LeaderHealthzAdaptor(clock=clock)
    parts.health.add(watchdog.name, watchdog)

    async def lead() -> None:
        await take_over()
        await asyncio.Event().wait()  # lead until cancelled

    def stopped() -> None:
        log.info("leaderelection: stopped leading (%s)", identity)

    elector = LeaderElector(
        LeaderElectionConfig(
            lock=lock,
            callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
            release_on_cancel=True,
            name=le.resource_name,
            coordinated=coordinated,
        ),
        clock=clock,
        bus=bus,
        metrics=LeaderMetrics(parts.metrics_registry),
    )
    watchdog.set_elector(elector)

    async def elect() -> None:
        try:
            await elector.run()
        except ManagerError as exc:
            # The leading work failed to start (a controller's init): the same one line
            # as without election, not the traceback of this task.
            fail(str(exc))
            return
        # run() returns only when leadership was lost (cancellation raises instead).
        fail(f"leaderelection lost: {elector.lost_reason or 'stopped leading'}")

    groups.add(Group.LEADER_ELECTION, "leader election", elect)
    return elector
