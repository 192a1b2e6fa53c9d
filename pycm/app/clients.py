"""Adapters from the API client to the small protocols the other packages define.

Each consumer states the few calls it makes (EventSink, LeaseClient, ReviewPoster); this
module maps them onto :class:`pycm.kube.Client` verbs, so those packages stay testable with
fakes. A built-in controller's adapter lives in its own package (its descriptor's init makes
it: ``pycm/controllers/<name>/client.py``); the two are re-exported here.
"""

from __future__ import annotations

from typing import Any

from pycm.controllers.deployment.client import DeploymentClientAdapter
from pycm.controllers.replicaset.client import ReplicaSetClientAdapter
from pycm.kube import Client
from pycm.kube.resources import (
    EVENTS,
    LEASES,
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
