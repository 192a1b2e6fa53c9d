"""Transforms applied to objects before they are cached (client-go ``TransformFunc``).

A transform runs on a freshly decoded object that nobody else holds yet, before the FIFO queues
it; it may therefore trim it in place (no copy). From the moment the object is queued it belongs
to the cache and is never mutated again (copy before change).

- :func:`drop_managed_fields` — KCM's transform: ``metadata.managedFields`` is server-side apply
  bookkeeping no controller reads, often a third of a pod's JSON.
- :class:`SubtreeInterner` — replaces identical sub-trees of different objects by one shared
  instance (e.g. the container specs of all pods stamped from one template), keyed by their
  canonical JSON. Shared sub-trees are frozen by convention like everything in the cache.
- :func:`chain` composes transforms left to right.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from pycm.cache.listwatch import Obj

__all__ = ["POD_SHARED_PATHS", "SubtreeInterner", "chain", "drop_managed_fields"]

Transform = Callable[[Obj], Obj]


def drop_managed_fields(obj: Obj) -> Obj:
    """Remove ``metadata.managedFields`` (in place: the object is fresh from the decoder)."""
    meta = obj.get("metadata")
    if meta is not None and "managedFields" in meta:
        del meta["managedFields"]
    return obj


def chain(*transforms: Transform) -> Transform:
    def apply(obj: Obj) -> Obj:
        for t in transforms:
            obj = t(obj)
        return obj

    return apply


POD_SHARED_PATHS: tuple[tuple[str, ...], ...] = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("metadata", "ownerReferences"),
    ("spec", "containers", "*", "resources"),
    ("spec", "containers", "*", "env"),
    ("spec", "containers", "*", "ports"),
    ("spec", "containers", "*", "args"),
    ("spec", "containers", "*", "command"),
    ("spec", "containers", "*", "livenessProbe"),
    ("spec", "containers", "*", "readinessProbe"),
    ("spec", "containers", "*", "securityContext"),
    ("spec", "containers", "*", "volumeMounts", "*"),
    ("spec", "containers", "*", "="),
    ("spec", "containers"),
    ("spec", "initContainers"),
    ("spec", "tolerations"),
    ("spec", "affinity"),
    ("spec", "securityContext"),
    ("spec", "volumes", "*", "projected"),
    ("spec", "volumes", "*"),
    ("spec", "volumes"),
    ("spec", "="),
    ("status", "conditions"),
    ("status",),
)
"""Sub-trees pods of one template usually share. Inner paths come first: when a whole
``containers`` list differs between pods (per-pod volume mount names), its parts still share.
A final ``"="`` shares the string values of that dict (image names, policies)."""


class SubtreeInterner:
    """A transform that makes identical sub-trees at ``paths`` one shared object.

    A path is a tuple of keys; ``"*"`` steps into every element of a list, and a final ``"="``
    shares each string value of the dict reached. The table maps the hash of a sub-tree's
    canonical JSON (sorted keys) to its first instance — a hash, not the JSON itself, so a
    sub-tree that turns out to be unique costs a table slot rather than a second copy of its
    text; a hit is confirmed by deep equality, so a hash collision only loses sharing. It holds
    at most ``max_entries`` instances, least recently used dropped first: dropping only loses
    sharing, never correctness. Shared instances must never be mutated — the cache's rule
    anyway, and the mutation detector would catch it.
    """

    def __init__(
        self, paths: Iterable[Sequence[str]] = POD_SHARED_PATHS, *, max_entries: int = 20_000
    ):
        self.paths = [tuple(p) for p in paths]
        self.max_entries = max_entries
        self._table: OrderedDict[int, Any] = OrderedDict()
        self._strings: dict[str, str] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def __call__(self, obj: Obj) -> Obj:
        for path in self.paths:
            self._walk(obj, path)
        return obj

    def _walk(self, node: Any, path: tuple[str, ...]) -> None:
        head, rest = path[0], path[1:]
        if head == "*":
            if isinstance(node, list):
                for i, child in enumerate(node):
                    if rest:
                        self._walk(child, rest)
                    else:
                        node[i] = self._intern(child)
            return
        if not isinstance(node, dict):
            return
        if head == "=":
            strings = self._strings
            for k, v in node.items():
                if type(v) is str:
                    shared = strings.get(v)
                    if shared is None:
                        if len(strings) < self.max_entries:
                            strings[v] = v
                    else:
                        node[k] = shared
            return
        if head not in node:
            return
        if rest:
            self._walk(node[head], rest)
        else:
            node[head] = self._intern(node[head])

    def _intern(self, value: Any) -> Any:
        if not isinstance(value, (dict, list)) or not value:
            return value
        key = hash(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
        table = self._table
        shared = table.get(key)
        if shared is not None and shared == value:
            table.move_to_end(key)
            self.hits += 1
            return shared
        self.misses += 1
        table[key] = value
        if len(table) > self.max_entries:
            table.popitem(last=False)
        return value
