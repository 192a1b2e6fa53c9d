"""The staleness guard: a controller does not sync an object while its caches are older than
its own last writes for that object (KEP-5647; KCM 1.36's ``ConsistencyStore``).

A sync decides from the informers' caches. When a cache lags — a slow watch, a congested API
server — the controller can act on a world that its own previous writes already changed: it
counts pods it created as missing, a status it wrote as unwritten. Expectations cover the
creations and deletions a sync is waiting to see, until they time out (5 minutes); this covers
every write, with no timeout:

- :meth:`ConsistencyStore.wrote_at` records, for the object being reconciled (the *owner*: a
  ReplicaSet), the resource version a write returned, per resource written (``pods``,
  ``replicasets.apps``), keeping the newest;
- :meth:`ConsistencyStore.ensure_ready`, before a sync, compares each recorded version with how
  far that resource's informer has got (its store's resource version,
  :attr:`pycm.cache.SharedIndexInformer.store_resource_version`): older → :class:`StaleCache`
  (the controller skips the sync, counts it in ``<controller>_stale_sync_skips_total`` and
  requeues it with backoff); all caught up → the record is dropped (it has done its job);
- :meth:`ConsistencyStore.clear` forgets an owner (deleted; a UID guards against forgetting a
  re-created one's record).

Resource versions are compared as KEP-5505 says a client may (``CompareResourceVersion``):
decimal numbers without leading zeros; a version that is not one (another server's opaque
string) cannot be compared and never holds a sync back. A store that has seen nothing yet
("") holds it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["ConsistencyStore", "StaleCache", "compare_resource_versions"]

StoreVersion = Callable[[], str]
"""How far one resource's informer store has got (its resource version, "" before any)."""


def _valid(rv: str) -> bool:
    return rv.isascii() and rv.isdigit() and (rv == "0" or not rv.startswith("0"))


def compare_resource_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as or newer than ``b`` (KEP-5505: compared
    as decimal numbers, by length then digits); ValueError for a version that is not one."""
    if not (_valid(a) and _valid(b)):
        raise ValueError(f"resource versions {a!r} and {b!r} cannot be compared")
    ka, kb = (len(a), a), (len(b), b)
    return (ka > kb) - (ka < kb)


class StaleCache(Exception):
    """A cache has not caught up with a write: ``read`` ("" when the store has seen nothing)
    is older than ``wrote`` for ``resource``."""

    def __init__(self, resource: str, wrote: str, read: str) -> None:
        if read:
            why = f"read version {read} is not as new as written version {wrote}"
        else:
            why = f"read version is not synced (written version: {wrote})"
        super().__init__(f"{why} for {resource}")
        self.resource = resource
        self.wrote = wrote
        self.read = read


@dataclass
class _Record:
    uid: str
    versions: dict[str, str] = field(default_factory=dict)  # resource -> newest written RV


class ConsistencyStore:
    """The writes of one controller, by owner key; ``stores`` says how far each resource's
    informer has got. One asyncio task syncs a key at a time (the work queue's guarantee), so a
    record is never read and written at once."""

    def __init__(self, stores: Mapping[str, StoreVersion]) -> None:
        self._stores = dict(stores)
        self._writes: dict[str, _Record] = {}

    def __len__(self) -> int:
        return len(self._writes)

    def wrote_at(self, owner: str, owner_uid: str, resource: str, rv: str) -> None:
        """``owner``'s sync wrote ``resource`` and got back ``rv`` (kept if the newest; a
        version that is not one cannot be waited for and is not kept)."""
        if not _valid(rv):
            return
        record = self._writes.get(owner)
        if record is None or record.uid != owner_uid:
            record = self._writes[owner] = _Record(owner_uid)
        known = record.versions.get(resource)
        if known is None or compare_resource_versions(known, rv) < 0:
            record.versions[resource] = rv

    def clear(self, owner: str, owner_uid: str = "") -> None:
        """Forget ``owner``'s writes (only if its record is ``owner_uid``'s, when given)."""
        record = self._writes.get(owner)
        if record is not None and (not owner_uid or record.uid == owner_uid):
            del self._writes[owner]

    def ensure_ready(self, owner: str) -> None:
        """Raise :class:`StaleCache` unless every cache has seen ``owner``'s last writes."""
        record = self._writes.get(owner)
        if record is None:
            return
        for resource, wrote in record.versions.items():
            store = self._stores.get(resource)
            if store is None:
                raise StaleCache(resource, wrote, "")  # a write no informer reports on
            read = store()
            if not read:
                raise StaleCache(resource, wrote, read)
            try:
                if compare_resource_versions(wrote, read) > 0:
                    raise StaleCache(resource, wrote, read)
            except ValueError:
                continue  # not comparable: never holds a sync back
        self.clear(owner, record.uid)
