"""A test double: an in-memory lock server shared by several :class:`FakeLock` clients.

It keeps one record with a resourceVersion, so updates from a client that read an older version
conflict, exactly like a Lease on an API server. Faults are scripted per operation: an error for
the next N calls, or a hang (the call waits on the injected clock until released).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pycm.leaderelection.record import LeaderElectionRecord
from pycm.leaderelection.resourcelock import LockConflict, LockError, LockNotFound

__all__ = ["FakeLock", "FakeLockServer"]


@dataclass(slots=True)
class FakeLockServer:
    record: LeaderElectionRecord | None = None
    resource_version: int = 0
    events: list[str] = field(default_factory=list)
    # operation -> remaining failures ("get", "create", "update")
    failures: dict[str, int] = field(default_factory=dict)
    hang: asyncio.Event | None = None  # when set to an unset Event, every call waits on it
    history: list[LeaderElectionRecord] = field(default_factory=list)

    def fail(self, operation: str, times: int = 1) -> None:
        self.failures[operation] = self.failures.get(operation, 0) + times

    def write(self, record: LeaderElectionRecord) -> None:
        """A write by someone outside the test's electors (another client, a human)."""
        self.record = record
        self.resource_version += 1
        self.history.append(record)


class FakeLock:
    def __init__(self, server: FakeLockServer, identity: str, name: str = "kube-system/pycm"):
        self.server = server
        self.identity = identity
        self._name = name
        self._seen_version: int | None = None
        self.calls: list[str] = []

    def describe(self) -> str:
        return self._name

    async def _enter(self, operation: str) -> None:
        self.calls.append(operation)
        if self.server.hang is not None:
            await self.server.hang.wait()
        remaining = self.server.failures.get(operation, 0)
        if remaining:
            self.server.failures[operation] = remaining - 1
            raise LockError(f"injected {operation} failure")

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        await self._enter("get")
        if self.server.record is None:
            raise LockNotFound("leases.coordination.k8s.io not found")
        self._seen_version = self.server.resource_version
        return self.server.record, self.server.record.raw()

    async def create(self, record: LeaderElectionRecord) -> None:
        await self._enter("create")
        if self.server.record is not None:
            raise LockConflict("already exists")
        self.server.write(record)
        self._seen_version = self.server.resource_version

    async def update(self, record: LeaderElectionRecord) -> None:
        await self._enter("update")
        if self._seen_version is None:
            raise LockError("lease not initialized, call get or create first")
        if self._seen_version != self.server.resource_version:
            raise LockConflict("the object has been modified; please apply your changes")
        self.server.write(record)
        self._seen_version = self.server.resource_version

    async def record_event(self, message: str) -> None:
        self.server.events.append(message)
