"""The deployment controller's staleness guard (pycm's, behind ``StaleControllerConsistency
Deployment``: KCM 1.36 guards the ReplicaSet, DaemonSet, StatefulSet and Job controllers, not
this one).

Its writes are ReplicaSets (create, scale, annotations, adoption) and the Deployment's status.
When the ReplicaSet cache lags its own create, the next sync does not see the new ReplicaSet and
creates it again: the API refuses (409 AlreadyExists) and the sync fails and retries until the
cache has it. With the guard, that sync waits instead, quietly, and makes no second create.

:class:`RecordingClient` wraps the controller's client for one sync: each write's returned
resource version is recorded for the deployment being synced
(:mod:`pycm.controllers.consistency`).
"""

from __future__ import annotations

from typing import Any

from pycm.controllers.consistency import ConsistencyStore
from pycm.controllers.deployment.context import DeploymentClient

__all__ = ["DEPLOYMENTS", "REPLICASETS", "RecordingClient"]

Obj = dict[str, Any]

DEPLOYMENTS = "deployments.apps"
REPLICASETS = "replicasets.apps"


def _rv(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str((meta or {}).get("resourceVersion") or "")


class RecordingClient:
    """``client`` for the sync of ``owner`` (its key and UID), recording what it writes."""

    def __init__(
        self, client: DeploymentClient, store: ConsistencyStore, owner: str, owner_uid: str
    ) -> None:
        self._client = client
        self._store = store
        self._owner = owner
        self._uid = owner_uid

    def _wrote(self, resource: str, written: Obj) -> Obj:
        self._store.wrote_at(self._owner, self._uid, resource, _rv(written))
        return written

    async def create_replica_set(self, namespace: str, body: Obj) -> Obj:
        return self._wrote(REPLICASETS, await self._client.create_replica_set(namespace, body))

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        return self._wrote(REPLICASETS, await self._client.update_replica_set(namespace, body))

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None:
        await self._client.delete_replica_set(namespace, name, uid)

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj:
        patched = await self._client.patch_replica_set(namespace, name, patch)
        return self._wrote(REPLICASETS, patched)

    async def get_deployment(self, namespace: str, name: str) -> Obj:
        return await self._client.get_deployment(namespace, name)

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj:
        updated = await self._client.update_deployment_status(namespace, body)
        return self._wrote(DEPLOYMENTS, updated)

    async def update_deployment(self, namespace: str, body: Obj) -> Obj:
        return self._wrote(DEPLOYMENTS, await self._client.update_deployment(namespace, body))
