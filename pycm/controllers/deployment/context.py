"""What one deployment sync works with: the API calls it may make, the event recorder, the
clock, and a record of what it did (the reconcile's ``action`` in the trace).

The rolling, recreate, scale and status functions take a :class:`SyncContext`, so table tests
drive them with a fake client and read back exactly what they scaled, created or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["DeploymentClient", "Recorder", "ReplicaSetLister", "ScaleAction", "SyncContext"]

Obj = dict[str, Any]


class DeploymentClient(Protocol):
    async def create_replica_set(self, namespace: str, body: Obj) -> Obj: ...

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj: ...

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None: ...

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj: ...

    async def get_deployment(self, namespace: str, name: str) -> Obj: ...

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj: ...

    # Only the deprecated rollback annotation writes the deployment itself (rollback.py).
    async def update_deployment(self, namespace: str, body: Obj) -> Obj: ...


class ReplicaSetLister(Protocol):
    """The ReplicaSet cache, read when a create finds the name taken (KCM's rsLister)."""

    def get(self, namespace: str | None, name: str) -> Obj | None: ...


class Recorder(Protocol):
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ScaleAction:
    """One ReplicaSet resized: (name, from, to)."""

    name: str
    old: int
    new: int


@dataclass(slots=True)
class SyncContext:
    client: DeploymentClient
    recorder: Recorder
    clock: Clock = REAL_CLOCK
    # The ReplicaSet cache as it is now (not the list the sync started from); None: no cache,
    # so a taken name is never taken for ours (sync.py's _on_name_taken).
    rs_lister: ReplicaSetLister | None = None
    # Gate DeploymentReplicaSetTerminatingReplicas: the status carries terminatingReplicas.
    terminating_replicas: bool = True
    # Gate DeploymentPodReplacementPolicy: spec.podReplacementPolicy is honoured
    # (replacement.py).
    pod_replacement_policy: bool = False
    # What this sync did, in order (for the trace and for tests).
    scaled: list[ScaleAction] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_updates: int = 0
    rolled_back: bool = False  # the deployment was written by a rollback (rollback.py)
    requeue_after: float | None = None
    requeue: bool = False
    # The last answer of sync.get_all_replica_sets_and_sync_revision that wrote nothing, with
    # what it was computed from (see there): KCM calls it twice per sync, and the second
    # call, on the same objects with no write between, would compute the same answer.
    synced_revision: tuple[Any, ...] | None = None

    def now(self) -> float:
        return self.clock.wall_ns() / 1e9

    def action(self) -> str:
        if self.rolled_back:
            return "rolled_back"
        if self.created:
            return "created_rs"
        if self.scaled:
            return "scaled_up" if any(s.new > s.old for s in self.scaled) else "scaled_down"
        if self.deleted:
            return "cleaned_up"
        if self.status_updates:
            return "status_updated"
        return "noop"
