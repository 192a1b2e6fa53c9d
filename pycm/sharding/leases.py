"""The members' Leases through pycm's client: create or update one, list a ring's, delete one;
write the ring's layout Lease (optimistically); list the namespaces' names for the layout."""

from __future__ import annotations

from typing import Any, Final

from pycm.kube.client import Client
from pycm.kube.errors import ApiError
from pycm.kube.resources import LEASES, NAMESPACES
from pycm.sharding.wire import RING_LABEL

__all__ = ["ClientLeaseStore", "namespace_names"]

_PAGE: Final = 500


class ClientLeaseStore:
    """A :class:`~pycm.sharding.membership.LeaseStore` in one namespace. It keeps the last
    Lease it wrote, so an update carries its resourceVersion (optimistic, as the leader lock)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self.namespace = namespace
        self._last: dict[str, Any] | None = None

    async def write(self, name: str, body: dict[str, Any]) -> None:
        if self._last is None:
            try:
                self._last = await self._client.create(LEASES, body, namespace=self.namespace)
                return
            except ApiError as exc:
                if exc.code != 409:
                    raise
                self._last = await self._client.get(LEASES, name, namespace=self.namespace)
        meta = {**self._last["metadata"], **body["metadata"]}
        update = {**body, "metadata": meta}
        try:
            self._last = await self._client.update(LEASES, update, namespace=self.namespace)
        except ApiError as exc:
            if exc.code in (404, 409):
                self._last = None  # deleted or written by someone else: start over next time
            raise

    async def read_ring(self, ring: str) -> list[dict[str, Any]]:
        page = await self._client.list(
            LEASES, namespace=self.namespace, label_selector=f"{RING_LABEL}={ring}"
        )
        return list(page.get("items") or [])

    async def delete(self, name: str) -> None:
        try:
            await self._client.delete(LEASES, name, namespace=self.namespace)
        except ApiError as exc:
            if exc.code != 404:
                raise
        self._last = None

    async def write_layout(self, name: str, body: dict[str, Any], resource_version: str) -> bool:
        """Create the layout Lease (``resource_version`` "") or update it from the version the
        member read; False when someone else wrote first (409) or it went away (404)."""
        try:
            if not resource_version:
                await self._client.create(LEASES, body, namespace=self.namespace)
            else:
                meta = {**body["metadata"], "resourceVersion": resource_version}
                await self._client.update(
                    LEASES, {**body, "metadata": meta}, namespace=self.namespace
                )
        except ApiError as exc:
            if exc.code in (404, 409):
                return False
            raise
        return True


async def namespace_names(client: Client) -> list[str]:
    """Every namespace's name: metadata-only pages from the server (no watch, no cache)."""
    names: list[str] = []
    token: str | None = None
    while True:
        page = await client.list(NAMESPACES, limit=_PAGE, continue_=token, metadata_only=True)
        names.extend(
            str((i.get("metadata") or {}).get("name") or "") for i in page.get("items") or []
        )
        token = (page.get("metadata") or {}).get("continue") or None
        if token is None:
            return [n for n in names if n]
