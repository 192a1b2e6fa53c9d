"""The hash ring: which member owns which part of the 64-bit hash space.

Each member places :data:`TOKENS_PER_MEMBER` tokens on the ring; a token owns the arc from the
previous token (exclusive) up to itself (inclusive), as in a classic consistent-hash ring.
Adding or removing one member of N therefore moves about 1/N of the space, and only between
that member and the others. Objects are placed by the same hash the API server uses for
``shardSelector`` (FNV-1a 64 of ``metadata.uid`` or ``metadata.namespace``), so a member's arcs
become its server-side selector (:meth:`Ring.selector`), one ``shardRange`` per arc run.

Tokens are placed with BLAKE2b of ``"<member>#<i>"``, not FNV-1a: member names differ in a last
character or two, and FNV-1a spreads such near-identical inputs poorly. Token placement only
has to agree between members (every member computes the same ring from the same member set);
the object hash has to agree with the server.

The tokens live in a *virtual* space; a :class:`~pycm.sharding.layout.Layout` maps object hashes
onto it (the identity by default, so virtual = hash). A layout spreads namespaces whose FNV-1a
hashes cluster; it is monotone, so a member's arcs still pull back to hash spans and one
selector. Changing the members with the layout unchanged still moves about 1/N of the keys.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from pycm.api.sharding import HASH_SPACE, ShardSelector
from pycm.sharding.layout import IDENTITY, Layout

__all__ = ["TOKENS_PER_MEMBER", "Ring", "join_spans"]

TOKENS_PER_MEMBER: Final = 64
"""Enough that three members' shares stay within a few percent of a third (a spread check in the
tests), few enough that a member's selector stays a short expression once adjacent arcs join."""


def _token(member: str, index: int) -> int:
    digest = hashlib.blake2b(f"{member}#{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True)
class Ring:
    """The ring of a set of members under a layout. Immutable: a membership or layout change
    makes a new ring. Spans and shares are of the hash space (what selectors carry)."""

    members: frozenset[str]
    tokens_per_member: int = TOKENS_PER_MEMBER
    layout: Layout = IDENTITY
    _points: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _owners: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        placed = sorted(
            (_token(member, i), member)
            for member in self.members
            for i in range(self.tokens_per_member)
        )
        object.__setattr__(self, "_points", tuple(point for point, _ in placed))
        object.__setattr__(self, "_owners", tuple(member for _, member in placed))

    @classmethod
    def of(
        cls,
        members: Iterable[str],
        tokens_per_member: int = TOKENS_PER_MEMBER,
        layout: Layout = IDENTITY,
    ) -> Ring:
        return cls(frozenset(members), tokens_per_member, layout)

    def owner(self, hashed: int) -> str | None:
        """The member that owns this hash; None on an empty ring."""
        if not self._points:
            return None
        at = bisect.bisect_left(self._points, self.layout.to_virtual(hashed))
        return self._owners[at % len(self._owners)]  # past the last token: the first one's arc

    def spans(self, member: str) -> list[tuple[int, int]]:
        """``member``'s share as ``[start, end)`` hash spans in order, adjacent arcs joined."""
        return self.layout.hash_spans(self.virtual_spans(member))

    def virtual_spans(self, member: str) -> list[tuple[int, int]]:
        """``member``'s arcs of the virtual space as ``[start, end)`` spans, in order."""
        if member not in self.members:
            return []
        if len(self.members) == 1:
            return [(0, HASH_SPACE)]
        spans: list[tuple[int, int]] = []
        previous = self._points[-1]  # the arc of the first token starts after the last one
        for point, owner in zip(self._points, self._owners, strict=True):
            if owner == member:
                # (previous, point] in hashes is [previous + 1, point + 1) in spans.
                if previous > point:  # the wrap-around arc: the top of the space, then the bottom
                    spans.append((previous + 1, HASH_SPACE))
                    spans.append((0, point + 1))
                else:
                    spans.append((previous + 1, point + 1))
            previous = point
        return join_spans((start, end) for start, end in spans if start < end)

    def arcs(self) -> list[tuple[int, int, str]]:
        """The virtual space as ``(start, end, owner)`` runs in order (empty on an empty ring)."""
        return sorted(
            (start, end, member)
            for member in self.members
            for start, end in self.virtual_spans(member)
        )

    def share(self, member: str) -> float:
        """``member``'s share: of the namespaces the layout places (its knots: each one's hash,
        or evenly spaced samples of them), else of the hash space. Under a layout the hash
        space says little: clustered namespaces sit in a sliver of it, and the views, metrics
        and trace report this share as the member's part of the work."""
        knots = self.layout.knots
        if knots:
            return sum(1 for hashed, _ in knots if self.owner(hashed) == member) / len(knots)
        return sum(end - start for start, end in self.spans(member)) / HASH_SPACE

    def shares(self) -> Mapping[str, float]:
        return {member: self.share(member) for member in sorted(self.members)}

    def selector(self, member: str, field_path: str) -> ShardSelector | None:
        """``member``'s ``shardSelector`` over ``field_path``; None when it owns nothing."""
        spans = self.spans(member)
        return ShardSelector.of(field_path, spans) if spans else None

    def moved_fraction(self, other: Ring) -> float:
        """The fraction of the hash space whose owner differs between the two rings."""
        cuts = sorted({0, HASH_SPACE, *_cuts(self), *_cuts(other)})
        moved = 0
        for start, end in itertools.pairwise(cuts):
            if self.owner(start) != other.owner(start):
                moved += end - start
        return moved / HASH_SPACE


def _cuts(ring: Ring) -> list[int]:
    # Ownership is constant within each member's hash spans: cut at every span's start.
    return [start for member in ring.members for start, _ in ring.spans(member)]


def join_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, end)`` spans in order, those that touch or overlap made one."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
