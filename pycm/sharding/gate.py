"""The key gate: a sharded member's say over each key a worker takes off its queue.

The worker asks before each reconcile (``Controller.key_gate``, pycm.controller.worker):

- **take** — the key is this member's and no one else claims it (the claim rules,
  :mod:`pycm.sharding.claims`): reconcile it;
- **drop** — another member owns it: forget it here (its owner's informers saw the same event);
- **wait** — it is this member's under the ring it sees, but another member still claims it
  (draining, or a silent member whose lease has not run out) or this member has not yet
  published and read its view: try again after ``retry_after``.

A key maps to the value the ring hashes by ``shard_value``: its namespace (``"ns/name"`` →
``"ns"``; a cluster-scoped key → ``""``) or, for uid sharding, the object's uid from the
controller's cache, or of the object last removed from it under that key (None when neither:
dropped, the cache holds only this member's share; pycm.app.sharding.uid_in).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable

from pycm.api.sharding import FIELD_NAMESPACE, hash_field
from pycm.sharding.membership import Membership

__all__ = ["KeyAdmission", "ShardKeyGate", "namespace_of"]


class KeyAdmission(enum.Enum):
    TAKE = "take"
    DROP = "drop"
    WAIT = "wait"


def namespace_of(key: str) -> str:
    """The namespace of a ``namespace/name`` key; "" for a cluster-scoped ``name``."""
    namespace, slash, _ = key.partition("/")
    return namespace if slash else ""


class ShardKeyGate:
    """A member's :class:`KeyAdmission` for the keys of one controller."""

    def __init__(
        self,
        membership: Membership,
        shard_value: Callable[[str], str | None] = namespace_of,
        caches_current: Callable[[], bool] | None = None,
        field: str = FIELD_NAMESPACE,
    ) -> None:
        self._membership = membership
        self._shard_value = shard_value
        self.field = field  # what shard_value gives: the ring lays out namespaces only
        # False while the sharded informers relist for a new share: a key taken then would be
        # reconciled on a cache that lacks part of its objects (an RS without its pods makes
        # pods twice), as a new leader waits for its caches to sync.
        self._caches_current = caches_current
        self.retry_after = membership.config.retry_period

    def hash_of(self, key: str) -> int | None:
        value = self._shard_value(key)
        return None if value is None else hash_field(value)

    def admit(self, key: str) -> tuple[KeyAdmission, str]:
        """The admission of ``key`` now, and why (for the trace's ``queue.drop`` reason)."""
        hashed = self.hash_of(key)
        if hashed is None:
            return KeyAdmission.DROP, "sharded: not in this member's share of the cache"
        membership = self._membership
        if membership.may_take(hashed, self.field):
            if self._caches_current is not None and not self._caches_current():
                return KeyAdmission.WAIT, "sharded: the caches are relisting for a new share"
            return KeyAdmission.TAKE, ""
        if membership.owns(hashed, self.field):
            return KeyAdmission.WAIT, "sharded: claimed by another member until it drains"
        return (
            KeyAdmission.DROP,
            f"sharded: {membership.owner(hashed, self.field) or 'no member'} owns it",
        )

    def hashes(self, keys: Iterable[str]) -> list[int]:
        """The hashes of ``keys`` (a worker's in-flight keys, for the member's drain)."""
        return [h for h in (self.hash_of(k) for k in keys) if h is not None]
