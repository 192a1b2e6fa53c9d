"""What a worker (:mod:`pycm.controller.worker`) asks before it takes each key: the leader
elector's say (:class:`ReconcileGate`) and, sharded, the shard's (:class:`KeyGate`)."""

from __future__ import annotations

from typing import Protocol

from pycm.sharding.gate import KeyAdmission

__all__ = ["KeyGate", "ReconcileGate"]


class KeyGate(Protocol):
    """A sharded member's say over each key (pycm.sharding.gate.ShardKeyGate): take it, drop
    it (another member's) or retry it after ``retry_after`` seconds (claimed elsewhere)."""

    retry_after: float

    def admit(self, key: str) -> tuple[KeyAdmission, str]: ...


class ReconcileGate(Protocol):
    """What a worker checks before it takes the next key (the leader elector's renew gate:
    closed while the last lease renew is older than RenewDeadline, pycm.leaderelection.gate)."""

    def is_open(self) -> bool: ...

    async def wait_open(self) -> None: ...

    def age(self) -> float | None: ...
