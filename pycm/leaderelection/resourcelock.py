"""Resource locks: the subset of a lock the elector uses, and the Lease lock.

The elector needs only ``get`` (the record and its raw bytes, or :class:`LockNotFound`),
``create``, ``update`` (optimistic: :class:`LockConflict` when someone wrote in between),
``record_event`` (a core/v1 Event on the lock object, as client-go's ``RecordEvent``), and the
lock's ``identity`` and ``describe()``. Only "leases" is supported, as KCM today.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pycm.errors import PycmError
from pycm.kube.errors import ApiError
from pycm.leaderelection.record import UNSET_WHEN_EMPTY, LeaderElectionRecord

__all__ = ["LeaseClient", "LeaseLock", "LockConflict", "LockError", "LockNotFound", "ResourceLock"]

log = logging.getLogger(__name__)


class LockError(PycmError):
    """A lock operation failed (the API error is chained)."""


class LockNotFound(LockError):
    """The lock object does not exist yet."""


class LockConflict(LockError):
    """An update lost an optimistic-concurrency race (409)."""


class ResourceLock(Protocol):
    identity: str

    async def get(self) -> tuple[LeaderElectionRecord, bytes]: ...

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None: ...

    async def record_event(self, message: str) -> None: ...

    def describe(self) -> str: ...


class LeaseClient(Protocol):
    """What the Lease lock needs of an API client (pycm.kube.Client fits)."""

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]: ...

    async def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def update_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def create_event(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...


class LeaseLock:
    """A coordination.k8s.io/v1 Lease as the lock. Keeps the last object it read or wrote, so
    an update carries that resourceVersion (and conflicts if anyone wrote since)."""

    def __init__(self, client: LeaseClient, namespace: str, name: str, identity: str) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        try:
            lease = await self._client.get_lease(self.namespace, self.name)
        except Exception as exc:
            raise _lock_error(exc) from exc
        self._lease = lease
        record = LeaderElectionRecord.from_lease_spec(lease.get("spec"))
        return record, record.raw()

    async def create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        try:
            self._lease = await self._client.create_lease(self.namespace, body)
        except Exception as exc:
            raise _lock_error(exc) from exc

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise LockError("lease not initialized, call get or create first")
        spec = {**self._lease.get("spec", {}), **record.to_lease_spec()}
        for key in UNSET_WHEN_EMPTY:  # client-go writes the record's whole spec
            if key not in record.to_lease_spec():
                spec.pop(key, None)
        body = {**self._lease, "spec": spec}
        try:
            self._lease = await self._client.update_lease(self.namespace, body)
        except Exception as exc:
            raise _lock_error(exc) from exc

    async def record_event(self, message: str) -> None:
        """A Normal ``LeaderElection`` Event on the Lease, as KCM records; never raises."""
        lease = self._lease or {}
        meta = lease.get("metadata", {})
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{self.name}.", "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "namespace": self.namespace,
                "name": self.name,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": "LeaderElection",
            "message": message,
            "type": "Normal",
            "source": {"component": self.name + "_" + self.identity.split("_")[0]},
            "reportingComponent": self.name,
            "count": 1,
        }
        try:
            await self._client.create_event(self.namespace, body)
        except Exception as exc:  # an event is best effort, as client-go's recorder
            log.warning("could not record LeaderElection event on %s: %s", self.describe(), exc)


def _lock_error(exc: Exception) -> LockError:
    """The lock's error for the client's: by the API error's code, so a 409 is a conflict
    whatever its reason (AlreadyExists on create, Conflict on update)."""
    if isinstance(exc, ApiError) and exc.code == 404:
        return LockNotFound(str(exc))
    if isinstance(exc, ApiError) and exc.code == 409:
        return LockConflict(str(exc))
    return LockError(f"{type(exc).__name__}: {exc}")
