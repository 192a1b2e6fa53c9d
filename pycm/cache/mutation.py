"""A debug check that cached objects are never mutated (client-go ``mutation_detector.go``).

The cache hands out the very objects it stores; a handler or controller that edits one in place
corrupts every reader's view (and, with interned sub-trees, other objects too). With the
detector on — tests turn it on — the informer records a deep copy of every object it stores and
compares it with the live object whenever that object is handed out or replaced (and on
:meth:`MutationDetector.check_all`); a difference raises :class:`CacheMutationError`, which the
informer lets crash its run instead of logging it. It costs a deep copy per stored object and a
deep compare per access: debugging only.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

__all__ = ["CacheMutationError", "MutationDetector"]


class CacheMutationError(AssertionError):
    """A cached object was changed in place; the message names it."""


class MutationDetector:
    """Invariant: ``_copies[id(obj)] == (obj, snapshot)`` for every object recorded and not
    forgotten (holding ``obj`` keeps its id from being reused)."""

    def __init__(self, resource: str = "") -> None:
        self.resource = resource
        self._copies: dict[int, tuple[Any, Any]] = {}

    def __len__(self) -> int:
        return len(self._copies)

    def record(self, obj: Any) -> None:
        self._copies[id(obj)] = (obj, copy.deepcopy(obj))

    def forget(self, obj: Any) -> None:
        entry = self._copies.get(id(obj))
        if entry is not None and entry[0] is obj:
            self._check(entry)
            del self._copies[id(obj)]

    def check(self, objs: Iterable[Any]) -> None:
        copies = self._copies
        for obj in objs:
            entry = copies.get(id(obj))
            if entry is not None and entry[0] is obj:
                self._check(entry)

    def check_all(self) -> None:
        for entry in list(self._copies.values()):
            self._check(entry)

    def _check(self, entry: tuple[Any, Any]) -> None:
        obj, snapshot = entry
        if obj != snapshot:
            meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
            name = f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
            raise CacheMutationError(
                f"a cached {self.resource or 'object'} was mutated in place: {name!r} "
                "(copy before change)"
            )
