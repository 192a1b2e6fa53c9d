"""Listers: typed-by-convention reads over an indexer (client-go ``listers.go``).

``selector`` is anything with ``matches(labels) -> bool`` — a
:class:`pycm.api.labels.Selector` in practice. Results must not be mutated (copy before change).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pycm.cache.indexer import NAMESPACE_INDEX, Indexer
from pycm.cache.listwatch import Obj

__all__ = ["Lister", "SelectorLike"]


class SelectorLike(Protocol):
    def matches(self, labels: Mapping[str, str], /) -> bool: ...


class Lister:
    """Reads one resource's cache by namespace, name and label selector."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """The object ``namespace/name`` (``name`` alone for cluster-scoped), or None."""
        return self.indexer.get_by_key(f"{namespace}/{name}" if namespace else name)

    def list(self, namespace: str | None = None, selector: SelectorLike | None = None) -> list[Obj]:
        """Objects in ``namespace`` (None: all) whose labels match ``selector`` (None: all)."""
        if namespace is None:
            objs = self.indexer.list()
        else:
            objs = self.indexer.by_index(NAMESPACE_INDEX, namespace)
        if selector is None:
            return objs
        return [o for o in objs if selector.matches((o.get("metadata") or {}).get("labels") or {})]
