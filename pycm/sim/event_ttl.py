"""Events expire: kube-apiserver stores each core/v1 Event with an etcd lease of
``--event-ttl`` (default one hour), renewed by every write, so an Event disappears that long
after it was last written.

:class:`Expiry` keeps the deadlines of the objects whose kind's strategy ``expires`` (only
Events): one entry per write, in deadline order (every entry has the same TTL, so appending
keeps the order). An entry whose object was written again since is stale and skipped; the
newer write holds its own entry. Expiry is checked on every write, so an idle store holds what
it held (there is no timer task).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from pycm.sim.objects import Obj
from pycm.util.clock import Clock

if TYPE_CHECKING:
    from pycm.sim.gc import DeleteOptions, ObjectRef
    from pycm.sim.resources import Registry, Resource, ResourceKey

__all__ = ["EVENT_TTL", "Expiry"]

# kube-apiserver's --event-ttl default.
EVENT_TTL = 3600.0


class ExpiringStore(Protocol):
    """The subset of the Store expiry uses."""

    registry: Registry

    def peek_ref(self, ref: ObjectRef) -> Obj | None: ...

    def delete(
        self, res: Resource, namespace: str | None, name: str, options: DeleteOptions | None
    ) -> tuple[Obj, bool]: ...


class Expiry:
    """Deadlines of expiring objects (see the module)."""

    def __init__(self, clock: Clock, ttl: float = EVENT_TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        # (deadline, resource key, namespace, name, resourceVersion of the write)
        self._deadlines: deque[tuple[float, ResourceKey, str, str, str]] = deque()
        self._expiring = False

    def __len__(self) -> int:
        return len(self._deadlines)

    def written(self, key: ResourceKey, namespace: str, name: str, rv: str) -> None:
        """An expiring object was written (created or updated) at ``rv``."""
        self._deadlines.append((self.clock.monotonic() + self.ttl, key, namespace, name, rv))

    def expire(self, store: ExpiringStore) -> None:
        """Delete what has outlived its TTL since its last write (a deletion is a write, so
        this does not recurse)."""
        if self._expiring or not self._deadlines:
            return
        now = self.clock.monotonic()
        deadlines = self._deadlines
        self._expiring = True
        try:
            while deadlines and deadlines[0][0] <= now:
                _, key, ns, name, rv = deadlines.popleft()
                current = store.peek_ref((key, ns, name))
                if current is None or current["metadata"].get("resourceVersion") != rv:
                    continue  # deleted, or written again (a later entry holds its deadline)
                res = store.registry.resources.get(key)
                if res is not None:
                    store.delete(res, ns or None, name, None)
        finally:
            self._expiring = False
