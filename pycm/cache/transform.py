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
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import orjson

from pycm.cache.listwatch import Obj

__all__ = ["POD_SHARED_PATHS", "SubtreeInterner", "chain", "drop_managed_fields", "template_key"]

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


def template_key(obj: Obj) -> Hashable | None:
    """Which template stamped ``obj``: its controller owner's uid and the template-hash label
    (``pod-template-hash`` of a ReplicaSet's pods, ``controller-revision-hash`` of a StatefulSet's
    or DaemonSet's). Objects with neither share one key; ``None`` (no guide) for objects of a
    custom resource, whose schema may let one field hold ``1``, ``1.0`` or ``true`` — values
    Python's ``==`` does not tell apart (built-in kinds have typed schemas: one JSON type per
    field, so ``==`` between two of their sub-trees at the same path is exact). An object
    without ``apiVersion`` counts as built-in: the items of a built-in list come without it,
    while custom resources are served as unstructured objects that always carry it."""
    api_version = obj.get("apiVersion")
    if type(api_version) is str and "/" in api_version:
        group = api_version.partition("/")[0]
        if "." in group and not group.endswith(".k8s.io"):
            return None
    meta = obj.get("metadata")
    if type(meta) is not dict:
        return None
    owner = None
    owners = meta.get("ownerReferences")
    if type(owners) is list and owners and type(owners[0]) is dict:
        owner = owners[0].get("uid")
    labels = meta.get("labels")
    revision = None
    if type(labels) is dict:
        revision = labels.get("pod-template-hash") or labels.get("controller-revision-hash")
    return (owner, revision)


class SubtreeInterner:
    """A transform that makes identical sub-trees at ``paths`` one shared object.

    A path is a tuple of keys; ``"*"`` steps into every element of a list, and a final ``"="``
    shares each string value of the dict reached.

    Two ways to find the shared instance, cheapest first:

    - **the template's last object** (``guide``, default :func:`template_key`): objects stamped
      from one template are mostly identical, so the sub-tree at the same path of the previous
      object with the same key is compared with ``==`` (C-level, stops at the first difference,
      and the keys of decoded objects are the same string objects, compared by identity). On a
      hit the whole sub-tree is replaced without being walked or serialized.
    - **the table**: otherwise the hash of the sub-tree's canonical JSON (sorted keys) maps to
      its first instance — a hash, not the JSON itself, so a sub-tree that turns out to be
      unique costs a table slot rather than a second copy of its text; a hit is confirmed by
      deep equality, so a hash collision only loses sharing. It serves the first object of each
      template (tolerations common to all templates) and objects without a guide; a sub-tree
      that differs from the template's last object is per-object (a pod's own token volume)
      and is not hashed at all.

    Both hold at most ``max_entries`` instances, least recently used dropped first: dropping
    only loses sharing, never correctness. Shared instances must never be mutated — the cache's
    rule anyway, and the mutation detector would catch it.
    """

    def __init__(
        self,
        paths: Iterable[Sequence[str]] = POD_SHARED_PATHS,
        *,
        max_entries: int = 20_000,
        guide: Callable[[Obj], Hashable | None] | None = template_key,
    ):
        self.paths = [tuple(p) for p in paths]
        self._trie = _Node.build(self.paths)
        self.max_entries = max_entries
        self.guide = guide
        self._table: OrderedDict[int, Any] = OrderedDict()
        self._last: dict[Hashable, Obj] = {}
        self._strings: dict[str, str] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def __call__(self, obj: Obj) -> Obj:
        guide = self.guide
        key = guide(obj) if guide is not None else None
        if key is None:
            self._apply(obj, self._trie, None)
            return obj
        last = self._last
        self._apply(obj, self._trie, last.pop(key, None))
        last[key] = obj  # newest last: the oldest key is dropped first
        if len(last) > self.max_entries:
            del last[next(iter(last))]
        return obj

    def _apply(self, value: Any, node: _Node, ref: Any) -> Any:
        """Process ``value`` at trie ``node`` (children first) and return what replaces it;
        ``ref`` is what the template's last object holds at the same place (or None)."""
        if node.intern and ref is not None and ref is not value and ref == value:
            self.hits += 1
            return ref
        if node.children and type(value) is dict:
            if type(ref) is dict:
                # The common case, inlined: a leaf equal to the template's is taken as is.
                for key, child in node.children.items():
                    sub = value.get(key)
                    if sub is not None:
                        was = ref.get(key)
                        if child.intern and was is not None and was == sub:
                            if was is not sub:
                                value[key] = was
                                self.hits += 1
                            continue
                        new = self._apply(sub, child, was)
                        if new is not sub:
                            value[key] = new
            else:
                for key, child in node.children.items():
                    sub = value.get(key)
                    if sub is not None:
                        new = self._apply(sub, child, None)
                        if new is not sub:
                            value[key] = new
        if node.each is not None and type(value) is list:
            each = node.each
            refl = ref if type(ref) is list else None
            n = len(refl) if refl is not None else 0
            for i, sub in enumerate(value):
                was = refl[i] if i < n else None  # type: ignore[index]
                if each.intern and was is not None and was == sub:
                    if was is not sub:
                        value[i] = was
                        self.hits += 1
                    continue
                new = self._apply(sub, each, was)
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
            if ref is not None and type(ref) is type(value):
                # The template's last object differs here: a per-object value (a pod's own
                # token volume), hashing it would only fill the table.
                self.misses += 1
                return value
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
