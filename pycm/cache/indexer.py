"""The thread-free indexed store of an informer (client-go ``thread_safe_store.go``, ``index.go``).

One event loop owns it, so there is no lock: every method runs to completion without awaiting.
Objects are stored as given and never copied or mutated here; callers must not mutate what they
get back (copy before change — the informer's mutation detector checks this in tests).

Built-in indexes: :data:`NAMESPACE_INDEX` (``metadata.namespace``) and
:data:`CONTROLLER_UID_INDEX` (``"by-controller-uid"``: the UID of the controller owner
reference). :meth:`Indexer.add_indexers` adds custom ones at any time (existing objects are
indexed at once; client-go refuses after start, there is no reason to here).

An update re-indexes a key only where its values changed (client-go does the same
comparison). An index function declared with :func:`reads_metadata_field` depends on one
``metadata`` field alone: when the old and the new object hold the same value there — the common
MODIFIED case, same namespace, same controller — the update skips that index without calling
the function at all, which was two calls per index per event (the informer's hot path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pycm.cache.listwatch import Obj
from pycm.cache.store import KeyFunc, meta_namespace_key

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "IndexFunc",
    "Indexer",
    "IndexerError",
    "controller_uid_index_func",
    "namespace_index_func",
    "reads_metadata_field",
]

IndexFunc = Callable[[Obj], list[str]]
"""The values under which an object is indexed (none, one or several)."""

NAMESPACE_INDEX = "namespace"
_Objs = list[Obj]  # (the class defines a method named list)
_Strs = list[str]
CONTROLLER_UID_INDEX = "by-controller-uid"


class IndexerError(ValueError):
    """An unknown index name, or an index declared twice."""


_READS_FIELD: dict[IndexFunc, str] = {}


def reads_metadata_field(func: IndexFunc, field: str) -> IndexFunc:
    """Declare that ``func``'s values depend on ``metadata[field]`` alone (and on nothing else
    of the object): an update whose old and new objects have equal values there leaves the
    index untouched without calling ``func``. A wrong declaration leaves stale index entries,
    so declare only what the function provably reads. Returns ``func``."""
    _READS_FIELD[func] = field
    return func


def namespace_index_func(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def controller_uid_index_func(obj: Obj) -> list[str]:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid"):
            return [str(ref["uid"])]
    return []


reads_metadata_field(namespace_index_func, "namespace")
reads_metadata_field(controller_uid_index_func, "ownerReferences")
_NO_META: dict[str, Any] = {}


class Indexer:
    """A keyed store with secondary indexes.

    Invariants: ``_items`` maps each key to its current object; for every index ``name`` and
    every stored key ``k``, ``k`` is in ``_indices[name][v]`` iff ``v`` is among
    ``_indexers[name](_items[k])`` — and ``_indices[name]`` has no empty sets.
    """

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        key_func: KeyFunc = meta_namespace_key,
        on_access: Callable[[Iterable[Obj]], None] | None = None,
    ) -> None:
        self.key_func = key_func
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        # Per index, for updates: (name, func, the metadata field it alone reads, or None).
        self._plan: list[tuple[str, IndexFunc, str | None]] = []
        # Debug hook (the mutation detector): sees every object handed out or replaced.
        self._on_access = on_access
        self.add_indexers(
            indexers
            if indexers is not None
            else {
                NAMESPACE_INDEX: namespace_index_func,
                CONTROLLER_UID_INDEX: controller_uid_index_func,
            }
        )

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Declare more indexes; objects already stored are indexed immediately."""
        for name in indexers:
            if name in self._indexers:
                raise IndexerError(f"index {name!r} already exists")
        for name, func in indexers.items():
            self._indexers[name] = func
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in func(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index
            self._plan.append((name, func, _READS_FIELD.get(func)))

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        return dict(self._indexers)

    # -- writes -------------------------------------------------------------------------------

    def add(self, obj: Obj) -> None:
        self.put(self.key_func(obj), obj)

    def update(self, obj: Obj) -> None:
        self.put(self.key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        """Remove the object (or tombstone) under its key; unknown keys are ignored."""
        self.delete_key(self.key_func(obj))

    def delete_key(self, key: str) -> None:
        old = self._items.pop(key, None)
        if old is None:
            return
        if self._on_access is not None:
            self._on_access((old,))
        for name, func in self._indexers.items():
            self._unindex(name, func(old), key)

    def replace(self, items: Iterable[Obj], resource_version: str = "") -> None:
        """Make the store hold exactly ``items`` (indexes rebuilt)."""
        self._items = {self.key_func(obj): obj for obj in items}
        for name, func in self._indexers.items():
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in func(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index

    def resync(self) -> None:
        """Nothing to do for a plain store (the FIFO's resync is what queues Sync deltas)."""

    def put(self, key: str, obj: Obj) -> Obj | None:
        """Store ``obj`` under ``key`` (which the caller computed with :attr:`key_func`) and
        return the object it replaced, or None. The informer computes each key once per
        event and passes it here."""
        items = self._items
        old = items.get(key)
        items[key] = obj
        indices = self._indices
        if old is None:
            for name, func, _ in self._plan:
                index = indices[name]
                for value in func(obj):
                    keys = index.get(value)
                    if keys is None:
                        index[value] = {key}
                    else:
                        keys.add(key)
            return None
        if self._on_access is not None:
            self._on_access((old,))
        old_meta = old.get("metadata") or _NO_META
        new_meta = obj.get("metadata") or _NO_META
        for name, func, field in self._plan:
            if field is not None:
                before, after = old_meta.get(field), new_meta.get(field)
                if before is after or before == after:
                    continue  # same input, same values: nothing to move
            old_values = func(old)
            new_values = func(obj)
            if old_values == new_values:
                continue
            self._unindex(name, [v for v in old_values if v not in new_values], key)
            index = indices[name]
            for value in new_values:
                index.setdefault(value, set()).add(key)
        return old

    def _unindex(self, name: str, values: Iterable[str], key: str) -> None:
        index = self._indices[name]
        for value in values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]

    # -- reads --------------------------------------------------------------------------------

    def get(self, obj: Obj) -> Obj | None:
        return self.get_by_key(self.key_func(obj))

    def get_by_key(self, key: str) -> Obj | None:
        obj = self._items.get(key)
        if obj is not None and self._on_access is not None:
            self._on_access((obj,))
        return obj

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def list(self) -> list[Obj]:
        out = list(self._items.values())
        if self._on_access is not None:
            self._on_access(out)
        return out

    def list_keys(self) -> _Strs:
        return list(self._items)

    def _index(self, name: str) -> dict[str, set[str]]:
        index = self._indices.get(name)
        if index is None:
            raise IndexerError(f"index {name!r} does not exist")
        return index

    def index_keys(self, name: str, value: str) -> _Strs:
        """Keys of the objects indexed under ``value`` in index ``name`` (sorted)."""
        return sorted(self._index(name).get(value, ()))

    def by_index(self, name: str, value: str) -> _Objs:
        """The objects indexed under ``value`` in index ``name`` (in key order)."""
        items = self._items
        out = [items[k] for k in self.index_keys(name, value)]
        if self._on_access is not None:
            self._on_access(out)
        return out

    def index(self, name: str, obj: Obj) -> _Objs:
        """Objects sharing any of ``obj``'s values in index ``name`` (client-go ``Index``)."""
        index = self._index(name)
        keys: set[str] = set()
        for value in self._indexers[name](obj):
            keys |= index.get(value, set())
        items = self._items
        out = [items[k] for k in sorted(keys)]
        if self._on_access is not None:
            self._on_access(out)
        return out

    def list_index_func_values(self, name: str) -> _Strs:
        return sorted(self._index(name))
