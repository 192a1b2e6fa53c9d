"""Who writes the ring's layout, and when: any member, rarely, with optimistic concurrency.

The layout (:mod:`pycm.sharding.layout`) lives in one shared object, the Lease
``<ring>-layout`` in the lease namespace (:mod:`pycm.sharding.membership` reads and writes its
format). Every member reads it with the ring's Leases at each period and adopts it like a
membership change. A member that is settled (its published claim is its target) asks its
:class:`LayoutWriter` at each period; every ``every`` periods (the first time once the member
set has held that long) the writer lists the namespaces (names only) and :func:`plan_layout`
decides whether the current layout is *clearly* unbalanced for the current members:

    some member owns more than 1.5 × its fair share of the namespaces (M / N) *and* more than
    one namespace above it.

Only then is a new layout built (each member its fair count) and written — created, or updated
with the resourceVersion the member read, so that of two writers one gets a conflict; the loser
rereads at its next period and, the layout now balanced, writes nothing. The hysteresis keeps
layouts rare: each change makes every member drain what moves and relist its sharded informers.
A namespace or two more never triggers one.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pycm.api.sharding import hash_field
from pycm.sharding.layout import Layout, spread
from pycm.sharding.ring import TOKENS_PER_MEMBER, Ring

__all__ = [
    "LIST_EVERY",
    "LayoutPlan",
    "LayoutStore",
    "LayoutWriter",
    "NamespaceLister",
    "plan_layout",
    "unbalanced",
]

log = logging.getLogger(__name__)

LIST_EVERY: Final = 10
"""Periods between two namespace lists (20 s at the default 2 s retry period): namespaces come
and go slowly, and the hysteresis would ignore a few anyway."""

NamespaceLister = Callable[[], Awaitable[list[str]]]
"""The names of the cluster's namespaces (a list of names only; no watch, no cache)."""


class LayoutStore(Protocol):
    async def write_layout(self, name: str, body: dict[str, Any], resource_version: str) -> bool:
        """Create the Lease (``resource_version`` "") or update it from that version; False on
        a conflict (someone else wrote it, or it went away)."""


@dataclass(frozen=True, slots=True)
class LayoutPlan:
    """A layout to write, and why: the most namespaces one member owns before and after."""

    layout: Layout
    namespaces: int
    members: int
    most_before: int
    most_after: int


def _counts(ring: Ring, hashes: Iterable[int]) -> list[int]:
    owned = Counter(ring.owner(h) for h in hashes)
    return [owned.get(member, 0) for member in sorted(ring.members)]


def unbalanced(counts: list[int], namespaces: int) -> bool:
    """The hysteresis: some member owns more than 1.5 × the fair share and more than one
    namespace above it (integers: ``2·most·N > 3·M`` and ``most·N > M + N``)."""
    if not counts or namespaces == 0:
        return False
    most, members = max(counts), len(counts)
    return 2 * most * members > 3 * namespaces and most * members > namespaces + members


def plan_layout(
    namespaces: Iterable[str],
    members: frozenset[str],
    current: Layout,
    tokens_per_member: int = TOKENS_PER_MEMBER,
) -> LayoutPlan | None:
    """The layout to write for these namespaces and members, or None to keep ``current``."""
    names = sorted(set(namespaces))
    hashes = {hash_field(ns) for ns in names}
    if not hashes or not members:
        return None
    before = _counts(Ring(members, tokens_per_member, current), hashes)
    if not unbalanced(before, len(hashes)):
        return None
    layout = spread(names, Ring(members, tokens_per_member).arcs())
    after = _counts(Ring(members, tokens_per_member, layout), hashes)
    if layout.digest == current.digest or max(after) >= max(before):
        return None  # no better than what every member already follows
    return LayoutPlan(layout, len(hashes), len(members), max(before), max(after))


class LayoutWriter:
    """One member's writer: lists the namespaces every ``every`` calls of :meth:`plan` — the
    first time once the member set has held for ``every`` calls (members joining one by one at
    start-up, or a rolling restart, would otherwise get a layout fitted to a passing set), and
    at the next call after a conflict — and writes what :func:`plan_layout` says."""

    def __init__(
        self, store: LayoutStore, namespaces: NamespaceLister, *, every: int = LIST_EVERY
    ) -> None:
        if every < 1:
            raise ValueError(f"the layout writer lists at least every period, got {every}")
        self.store = store
        self._namespaces = namespaces
        self.every = every
        self._due_in = every  # calls of plan() until the next list
        self._members: frozenset[str] = frozenset()  # the member set of the last call
        self._failing = False  # the last list failed (logged once per failing streak)

    async def plan(
        self, members: frozenset[str], current: Layout, tokens_per_member: int
    ) -> LayoutPlan | None:
        """Called at each period of a settled member; lists the namespaces when due. A ring of
        one is balanced whatever the layout: nothing is listed."""
        if members != self._members:
            self._members = members
            self._due_in = self.every  # a member set must hold a full period first
        if len(members) < 2:
            return None
        if self._due_in > 0:
            self._due_in -= 1
            return None
        self._due_in = self.every - 1
        try:
            names = await self._namespaces()
        except Exception as exc:  # refused (no RBAC for namespaces) or the API is down
            if not self._failing:
                log.warning("sharding: listing namespaces for the layout failed: %s", exc)
            self._failing = True
            return None
        if self._failing:
            log.info("sharding: listing namespaces for the layout works again")
            self._failing = False
        return plan_layout(names, members, current, tokens_per_member)

    async def write(self, name: str, body: dict[str, Any], resource_version: str) -> bool:
        """Write the planned layout; on a conflict list again at the next period (after the
        member has reread the ring: the other writer's layout may already do)."""
        try:
            written = await self.store.write_layout(name, body, resource_version)
        except Exception as exc:
            log.warning("sharding: writing the layout Lease %s failed: %s", name, exc)
            written = False
        if not written:
            self._due_in = 0
        return written
