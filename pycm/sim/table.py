"""One stored kind's objects by (namespace, name), kept in key order for lists and their pages.

A list walks the keys in (namespace, name) order from a bisection: the sorted keys are kept
until the set of keys next changes, so a paged list costs O(limit · log n) a page instead of a
sort and a scan of all.

Each object is kept with its JSON encoding (``orjson.dumps`` of it, made once when it was
committed: the store encodes it then for the watch history anyway), so a list page is served
by joining encodings rather than encoding its objects again — as kube-apiserver's watch cache
serves objects it has serialized once. Encoding a page of 500 pods was most of the emulator's
cost of a list (~18 ms of ~20 ms a page); the joined bytes are what ``orjson`` would write. The
cost is one reference an object: the same bytes the history holds while it holds the object's
last event, one encoding an object beyond that.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from pycm.sim.objects import Obj
from pycm.sim.selectors import FieldSelector, LabelSelector
from pycm.sim.shardselector import ShardSelector
from pycm.sim.tokens import encode_continue

__all__ = ["Key", "ListPage", "Table"]

Key = tuple[str, str]  # (namespace, name); namespace "" for a cluster-scoped kind


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[Obj]
    resource_version: int
    continue_token: str  # "" on the last page
    remaining: int | None
    # ``orjson.dumps`` of each of ``items``, in the same order.
    encoded: list[bytes] = field(default_factory=list)


class Table:
    """The stored objects of one kind (the store's own dicts: never mutate them)."""

    __slots__ = ("_encoded", "_objects", "_sorted")

    def __init__(self) -> None:
        self._objects: dict[Key, Obj] = {}
        # Invariant: the same keys as `_objects`, each with `orjson.dumps` of its object (an
        # object is never mutated once stored, so its encoding stays its own).
        self._encoded: dict[Key, bytes] = {}
        # Invariant: None, or the keys of `_objects` in order (dropped when a key comes or goes).
        self._sorted: list[Key] | None = None

    def __contains__(self, key: Key) -> bool:
        return key in self._objects

    def __iter__(self) -> Iterator[Key]:
        return iter(self._objects)

    def get(self, key: Key) -> Obj | None:
        return self._objects.get(key)

    def encoded(self, key: Key) -> bytes | None:
        """``orjson.dumps`` of the object at ``key`` (None: there is none)."""
        return self._encoded.get(key)

    def put(self, key: Key, obj: Obj, encoded: bytes | None = None) -> None:
        """Store ``obj`` (``encoded``: its ``orjson.dumps``, when the caller has made it)."""
        if key not in self._objects:
            self._sorted = None
        self._objects[key] = obj
        self._encoded[key] = encoded if encoded is not None else orjson.dumps(obj)

    def pop(self, key: Key) -> None:
        if self._objects.pop(key, None) is not None:
            del self._encoded[key]
            self._sorted = None

    def sorted_keys(self) -> list[Key]:
        if self._sorted is None:
            self._sorted = sorted(self._objects)
        return self._sorted

    def select(
        self,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        after: Key | None = None,
        limit: int | None = None,
        shards: ShardSelector | None = None,
    ) -> list[tuple[Key, Obj]]:
        """Matching (key, object) pairs in key order, after ``after``; at most ``limit + 1`` of
        them when ``limit`` is given (the extra one tells that more follow). ``shards``: a
        shardSelector's ranges, as one more selector."""
        keys = self.sorted_keys()
        lo = bisect_left(keys, (namespace, "")) if namespace else 0
        if after is not None:
            lo = max(lo, bisect_right(keys, after))
        if not labels.requirements and not fields.terms and shards is None:
            # Every key in range matches: the page is a slice (no test of each object).
            hi = bisect_left(keys, (namespace + "\x00", "")) if namespace else len(keys)
            if limit is not None:
                hi = min(hi, lo + limit + 1)
            objects = self._objects
            return [(key, objects[key]) for key in keys[lo:hi]]
        out = []
        for i in range(lo, len(keys)):
            key = keys[i]
            if namespace and key[0] != namespace:
                break
            obj = self._objects[key]
            meta_ = obj.get("metadata") or {}
            if labels.requirements and not labels.matches(meta_.get("labels")):
                continue
            if fields.terms and not fields.matches(obj):
                continue
            if shards is not None and not shards.matches(obj):
                continue
            out.append((key, obj))
            if limit is not None and len(out) > limit:
                break
        return out

    def count_after(self, namespace: str | None, after: Key) -> int:
        """How many keys (of ``namespace``, if given) sort after ``after``."""
        keys = self.sorted_keys()
        hi = bisect_left(keys, (namespace + "\x00", "")) if namespace else len(keys)
        return max(0, hi - bisect_right(keys, after))

    def page(
        self,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int | None,
        after: Key | None,
        list_rv: int,
        shards: ShardSelector | None = None,
    ) -> ListPage:
        """The page after ``after`` of at most ``limit`` (None or 0: every) matching objects,
        read at ``list_rv``. ``remaining`` (remainingItemCount) is given only for a list without
        selectors (a shardSelector included), as kube-apiserver does: with a selector it would
        be a guess."""
        page_size = limit if limit is not None and limit > 0 else None
        selected = self.select(
            namespace, labels, fields, after=after, limit=page_size, shards=shards
        )
        encoded = self._encoded
        if page_size is None or len(selected) <= page_size:
            items = [o for _, o in selected]
            return ListPage(items, list_rv, "", None, [encoded[k] for k, _ in selected])
        page = selected[:page_size]
        last = page[-1][0]
        remaining = None
        if not labels.requirements and not fields.terms and shards is None:
            remaining = self.count_after(namespace, last)
        return ListPage(
            [o for _, o in page],
            list_rv,
            encode_continue(list_rv, last[0], last[1]),
            remaining,
            [encoded[k] for k, _ in page],
        )
