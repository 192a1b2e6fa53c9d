"""The Deployment controller's API calls (:class:`~pycm.controllers.deployment.context.
DeploymentClient`) on pycm's :class:`~pycm.kube.Client`: the adapter its descriptor's init
hands it (tests hand it fakes)."""

from __future__ import annotations

from typing import Any

from pycm.kube import Client
from pycm.kube.client import PatchType
from pycm.kube.resources import DEPLOYMENTS, REPLICASETS

__all__ = ["DeploymentClientAdapter"]

Obj = dict[str, Any]


class DeploymentClientAdapter:
    def __init__(self, client: Client) -> None:
        self._c = client

    async def create_replica_set(self, namespace: str, body: Obj) -> Obj:
        return await self._c.create(REPLICASETS, body, namespace=namespace)

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        return await self._c.update(REPLICASETS, body, namespace=namespace)

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None:
        await self._c.delete(
            REPLICASETS, name, namespace=namespace, uid=uid or None, propagation_policy="Background"
        )

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj:
        return await self._c.patch(
            REPLICASETS, name, patch, namespace=namespace, patch_type=PatchType.MERGE
        )

    async def get_deployment(self, namespace: str, name: str) -> Obj:
        return await self._c.get(DEPLOYMENTS, name, namespace=namespace)

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj:
        return await self._c.update_status(DEPLOYMENTS, body, namespace=namespace)

    async def update_deployment(self, namespace: str, body: Obj) -> Obj:
        """The deprecated rollback annotation rewrites the deployment's spec (rollback.py)."""
        return await self._c.update(DEPLOYMENTS, body, namespace=namespace)
