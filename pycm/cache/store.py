"""Keys, tombstones and the store protocols of the cache (client-go ``store.go``).

An object's key is ``namespace/name``, or ``name`` for cluster-scoped objects
(:func:`meta_namespace_key`). A :class:`DeletedFinalStateUnknown` is the tombstone a FIFO queues
for an object that vanished while the watch was down: the last state the cache knew, under its
key. Handlers' ``on_delete`` receives either the object or such a tombstone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pycm.cache.listwatch import Obj

__all__ = [
    "DeletedFinalStateUnknown",
    "KeyError_",
    "KeyFunc",
    "KeyListerGetter",
    "ReflectorStore",
    "deletion_handling_key",
    "meta_namespace_key",
]


class KeyError_(ValueError):
    """An object has no name to build a key from."""


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """An object deleted while the watch was down: ``obj`` is the last state the cache held."""

    key: str
    obj: Obj


KeyFunc = Callable[[Any], str]


def meta_namespace_key(obj: Any) -> str:
    """``namespace/name`` (or ``name`` when cluster-scoped); a tombstone gives its own key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise KeyError_(f"object has no metadata.name: kind={obj.get('kind')!r}")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


deletion_handling_key = meta_namespace_key
"""client-go's DeletionHandlingMetaNamespaceKeyFunc: the same function here (tombstone-aware)."""


class ReflectorStore(Protocol):
    """The subset of a store that the reflector uses (client-go ``ReflectorStore``)."""

    def add(self, obj: Obj) -> None: ...

    def update(self, obj: Obj) -> None: ...

    def delete(self, obj: Obj) -> None: ...

    def replace(self, items: Iterable[Obj], resource_version: str) -> None: ...

    def resync(self) -> None: ...


class KeyListerGetter(Protocol):
    """What a FIFO needs of the indexer it feeds: the keys it knows and their objects."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Obj | None: ...
