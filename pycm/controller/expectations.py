"""Expectations: what a controller has asked for and not yet seen in its informers.

A ReplicaSet controller that created 5 pods must not create them again before its cache shows
them; it "expects" 5 creations, each observed add lowers the count, and the key syncs again
only when the expectations are satisfied — or have expired (5 minutes: a lost watch event must
not wedge a controller forever). The UID-tracking variant expects deletions of specific pods,
so a deletion observed twice (an update with deletionTimestamp, then the delete) counts once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["EXPECTATIONS_TIMEOUT", "ControllerExpectations", "UIDTrackingExpectations"]

log = logging.getLogger(__name__)

EXPECTATIONS_TIMEOUT = 5 * 60.0


@dataclass(slots=True)
class _Expectation:
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        # Below zero can happen when the informer saw more than was expected (a racing adopter).
        return self.add <= 0 and self.delete <= 0


class ControllerExpectations:
    def __init__(self, clock: Clock = REAL_CLOCK, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._records: dict[str, _Expectation] = {}

    def get(self, key: str) -> tuple[int, int] | None:
        record = self._records.get(key)
        return None if record is None else (record.add, record.delete)

    def satisfied(self, key: str) -> bool:
        """True when the key may sync: no record, all observed, or the record expired."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.fulfilled():
            return True
        if self._clock.monotonic() - record.timestamp > self._timeout:
            log.info("expectations for %s expired (add %d, del %d)", key, record.add, record.delete)
            return True
        return False

    def set(self, key: str, add: int, delete: int) -> None:
        self._records[key] = _Expectation(add, delete, self._clock.monotonic())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set(key, adds, 0)

    def expect_deletions(self, key: str, dels: int) -> None:
        self.set(key, 0, dels)

    def lower(self, key: str, add: int = 0, delete: int = 0) -> None:
        record = self._records.get(key)
        if record is not None:
            record.add -= add
            record.delete -= delete

    def raise_(self, key: str, add: int = 0, delete: int = 0) -> None:
        record = self._records.get(key)
        if record is not None:
            record.add += add
            record.delete += delete

    def creation_observed(self, key: str) -> None:
        self.lower(key, add=1)

    def deletion_observed(self, key: str) -> None:
        self.lower(key, delete=1)

    def delete(self, key: str) -> None:
        self._records.pop(key, None)

    def __len__(self) -> int:
        return len(self._records)


@dataclass(slots=True)
class _UIDs:
    uids: set[str] = field(default_factory=set)


class UIDTrackingExpectations(ControllerExpectations):
    """Deletions are expected by pod UID (or key): each is observed at most once."""

    def __init__(self, clock: Clock = REAL_CLOCK, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        super().__init__(clock, timeout)
        self._uids: dict[str, set[str]] = {}

    def expect_deletions_of(self, key: str, uids: list[str]) -> None:
        existing = self._uids.get(key)
        if existing:
            log.error("clobbering existing delete keys for %s: %s", key, sorted(existing))
        self._uids[key] = set(uids)
        self.set(key, 0, len(uids))

    def deletion_observed_uid(self, key: str, uid: str) -> None:
        pending = self._uids.get(key)
        if pending is not None and uid in pending:
            pending.discard(uid)
            self.lower(key, delete=1)

    def expected_deletions(self, key: str) -> set[str]:
        return set(self._uids.get(key, ()))

    def delete(self, key: str) -> None:
        super().delete(key)
        self._uids.pop(key, None)
