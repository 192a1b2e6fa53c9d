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
    ("spec", "initContainers"),
    ("spec", "tolerations"),
    ("spec", "affinity"),
    ("spec", "securityContext"),
    ("spec", "volumes", "*", "projected"),
    ("spec", "volumes", "*"),
    ("spec", "="),
    ("status", "="),
)
"""Sub-trees pods of one template usually share. Not the whole ``containers`` or ``volumes``
lists, nor ``status``: in a real cluster those always differ between pods (the per-pod
``kube-api-access-*`` volume and its mounts, pod IPs, start times), so hashing them would be
pure cost; their parts are shared instead. A final ``"="`` shares the string values of that dict
(image names, policies, phase)."""


class _Node:
    """The paths as a trie, walked once per object: ``children`` by key, ``each`` for ``"*"``,
    ``strings`` for a final ``"="``, ``intern`` when a path ends here."""

    __slots__ = ("children", "each", "intern", "strings")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.each: _Node | None = None
        self.strings = False
        self.intern = False

    @classmethod
    def build(cls, paths: Iterable[tuple[str, ...]]) -> _Node:
        root = cls()
        for path in paths:
            node = root
            for step in path:
                if step == "=":
                    node.strings = True
                    break
                if step == "*":
                    node.each = node.each or cls()
                    node = node.each
                else:
                    node = node.children.setdefault(step, cls())
            else:
                node.intern = True
        return root


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
        self._trie = _Node.build(self.paths)
        self.max_entries = max_entries
        self._table: OrderedDict[int, Any] = OrderedDict()
        self._strings: dict[str, str] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def __call__(self, obj: Obj) -> Obj:
        self._apply(obj, self._trie)
        return obj

    def _apply(self, value: Any, node: _Node) -> Any:
        """Process ``value`` at trie ``node`` (children first) and return what replaces it."""
        if node.children and type(value) is dict:
            for key, child in node.children.items():
                sub = value.get(key)
                if sub is not None:
                    new = self._apply(sub, child)
                    if new is not sub:
                        value[key] = new
        if node.each is not None and type(value) is list:
            each = node.each
            for i, sub in enumerate(value):
                new = self._apply(sub, each)
                if new is not sub:
                    value[i] = new
        if node.strings and type(value) is dict:
            strings = self._strings
            for key, sub in value.items():
                if type(sub) is str:
                    shared = strings.get(sub)
                    if shared is None:
                        if len(strings) < self.max_entries:
                            strings[sub] = sub
                    elif shared is not sub:
                        value[key] = shared
        if node.intern:
            return self._intern(value)
        return value

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
