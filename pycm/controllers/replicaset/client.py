"""The ReplicaSet controller's API calls (:class:`ReplicaSetClient`) on pycm's
:class:`~pycm.kube.Client`: the adapter its descriptor's init hands it (tests hand it fakes)."""

from __future__ import annotations

from typing import Any

from pycm.kube import Client
from pycm.kube.client import PatchType
from pycm.kube.resources import PODS, REPLICASETS

__all__ = ["ReplicaSetClientAdapter"]

Obj = dict[str, Any]


class ReplicaSetClientAdapter:
    def __init__(self, client: Client) -> None:
        self._c = client

    async def create_pod(self, namespace: str, body: Obj) -> Obj:
        return await self._c.create(PODS, body, namespace=namespace)

    async def delete_pod(self, namespace: str, name: str) -> None:
        await self._c.delete(PODS, name, namespace=namespace)

    async def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        return await self._c.patch(
            PODS, name, patch, namespace=namespace, patch_type=PatchType.MERGE
        )

    async def get_replica_set(self, namespace: str, name: str) -> Obj:
        return await self._c.get(REPLICASETS, name, namespace=namespace)

    async def update_replica_set_status(self, namespace: str, body: Obj) -> Obj:
        return await self._c.update_status(REPLICASETS, body, namespace=namespace)
