"""Adapters from the API client to the small protocols the other packages define.

Each consumer states the few calls it makes (ReplicaSetClient, DeploymentClient, EventSink,
LeaseClient, ReviewPoster); this module is the one place that maps them onto
:class:`pycm.kube.Client` verbs, so those packages stay testable with fakes.
"""

from __future__ import annotations

from typing import Any

from pycm.kube import Client
from pycm.kube.client import PatchType
from pycm.kube.resources import (
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    PODS,
    REPLICASETS,
    SUBJECTACCESSREVIEWS,
    TOKENREVIEWS,
)

__all__ = [
    "DeploymentClientAdapter",
    "EventSinkAdapter",
    "LeaseClientAdapter",
    "ReplicaSetClientAdapter",
    "ReviewPosterAdapter",
]

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


class EventSinkAdapter:
    def __init__(self, client: Client) -> None:
        self._c = client

    async def create_event(self, namespace: str, body: Obj) -> Obj:
        return await self._c.create(EVENTS, body, namespace=namespace)

    async def patch_event(self, namespace: str, name: str, patch: Obj) -> Obj:
        return await self._c.patch(EVENTS, name, patch, namespace=namespace)


class LeaseClientAdapter:
    def __init__(self, client: Client) -> None:
        self._c = client

    async def get_lease(self, namespace: str, name: str) -> Obj:
        return await self._c.get(LEASES, name, namespace=namespace)

    async def create_lease(self, namespace: str, body: Obj) -> Obj:
        return await self._c.create(LEASES, body, namespace=namespace)

    async def update_lease(self, namespace: str, body: Obj) -> Obj:
        return await self._c.update(LEASES, body, namespace=namespace)

    async def create_event(self, namespace: str, body: Obj) -> Obj:
        return await self._c.create(EVENTS, body, namespace=namespace)


class ReviewPosterAdapter:
    """TokenReview / SubjectAccessReview creation for delegated authn/authz."""

    def __init__(self, client: Client) -> None:
        self._c = client

    async def create(self, resource_path: str, body: dict[str, Any]) -> dict[str, Any]:
        resource = TOKENREVIEWS if "tokenreviews" in resource_path else SUBJECTACCESSREVIEWS
        return await self._c.create(resource, body, namespace="")
