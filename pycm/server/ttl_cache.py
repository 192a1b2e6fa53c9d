"""A small bounded TTL cache on an injectable clock, for the delegated authn/authz answers.

kube caches TokenReview and SubjectAccessReview answers (``--authentication-token-webhook-
cache-ttl`` 10 s; ``--authorization-webhook-cache-authorized-ttl`` / ``-unauthorized-ttl``
10 s / 10 s for a controller manager) so that a scraper hitting /metrics every few seconds
costs the API server one review per TTL, not one per request. Entries expire by the monotonic
clock; the cache is bounded and evicts the least recently used entry first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["TTLCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """Invariant: ``len(_entries) <= maxsize``; an entry's deadline is its insertion time plus
    the TTL it was stored with; the most recently used entry is last."""

    def __init__(self, *, maxsize: int = 4096, clock: Clock = REAL_CLOCK) -> None:
        if maxsize < 1:
            raise ValueError("a cache holds at least one entry")
        self.maxsize = maxsize
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The live value for ``key``, or None (expired entries are dropped on the way)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        deadline, value = entry
        if self._clock.monotonic() >= deadline:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        """Store ``value`` for ``ttl`` seconds; a TTL of zero or less stores nothing."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock.monotonic() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)
