"""The layout: where namespace hashes sit on the ring, so that FNV-1a clusters still spread.

The API server hashes a namespace with FNV-1a 64 (a ``shardSelector``'s ranges are over that
hash, so the ring must use it). FNV-1a maps names that differ only in their last characters
(``team-0`` … ``team-9``) into one tiny arc: the last byte's XOR changes the low bits, and the
multiply by the prime moves the high bits very little. On a plain ring such a set lands on one
member.

A :class:`Layout` is a monotone, piecewise-linear map ``T`` from the hash space onto a *virtual*
space ``[0, 2**64)``, given by knots (hash point → virtual point, both strictly increasing; the
corners ``(0, 0)`` and ``(2**64, 2**64)`` are implied). :func:`spread` places the k-th of M
observed namespace hashes so that each member of the ring it is built for holds its fair count
of them (the ring's tokens live in the virtual space; ``T`` decides where hashes sit between
them). Because ``T`` is monotone, a
member's virtual arcs pull back to hash ranges (:meth:`Layout.hash_spans`): still ``[start,
end)`` integer spans that tile the hash space, still one ``shardSelector``. Two namespaces whose
hashes are neighbours (even 1 apart) are both knots, so each gets its own virtual point and a
token may fall between them.

A layout is content-addressed: :attr:`Layout.digest` is a short digest of its knots, and a
member's Lease names the digest of the layout its claim uses. The identity layout (no knots) has
the digest ``""``: a Lease without the annotation claims under the plain ring.

The pure maths live here; who writes the shared layout and when is
:mod:`pycm.sharding.layout_writer`.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from pycm.api.sharding import HASH_SPACE, hash_field

__all__ = ["IDENTITY", "MAX_KNOTS", "Layout", "LayoutError", "spread", "spread_hashes"]

MAX_KNOTS: Final = 256
"""At most this many knots: quantiles of the namespaces past it. 256 knots are ~9 KB in an
annotation, and place each namespace within 1/256 of where an even spread would."""


class LayoutError(ValueError):
    """Knots that do not make a monotone map of the hash space (a corrupt annotation)."""


@dataclass(frozen=True)
class Layout:
    """The map ``T`` given by ``knots``: ``(hash, virtual)`` pairs, strictly increasing in both,
    each coordinate in ``[0, 2**64)``. Between two knots ``T`` is linear, rounded down; below
    the first knot it runs from ``(0, 0)``, past the last one to ``(2**64, 2**64)``."""

    knots: tuple[tuple[int, int], ...] = ()
    # The chain actually walked: the knots with the implied corners. Invariant: hash points
    # strictly increasing and starting at 0; virtual points strictly increasing.
    _points: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _hashes: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _virtuals: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points = list(self.knots)
        if not points or points[0][0] > 0:
            points.insert(0, (0, 0))
        points.append((HASH_SPACE, HASH_SPACE))
        for (h0, v0), (h1, v1) in itertools.pairwise(points):
            if not (0 <= h0 < h1 <= HASH_SPACE and 0 <= v0 < v1 <= HASH_SPACE):
                raise LayoutError(
                    f"layout knots must increase strictly within [0, 2^64): "
                    f"({h0:#x}, {v0:#x}) then ({h1:#x}, {v1:#x})"
                )
        object.__setattr__(self, "_points", tuple(points))
        object.__setattr__(self, "_hashes", tuple(h for h, _ in points))
        object.__setattr__(self, "_virtuals", tuple(v for _, v in points))

    @functools.cached_property
    def digest(self) -> str:
        """A short digest of the knots ("" for the identity layout)."""
        if not self.knots:
            return ""
        return hashlib.blake2b(self.encode().encode(), digest_size=6).hexdigest()

    def encode(self) -> str:
        """The knots as an annotation value: ``hash:virtual`` pairs of 16 hex digits, by ``,``."""
        return ",".join(f"{h:016x}:{v:016x}" for h, v in self.knots)

    @classmethod
    def decode(cls, text: str) -> Layout:
        """The layout :meth:`encode` wrote, or :class:`LayoutError`."""
        knots: list[tuple[int, int]] = []
        for pair in (p for p in text.split(",") if p.strip()):
            h, colon, v = pair.strip().partition(":")
            try:
                if not colon or len(h) != 16 or len(v) != 16:
                    raise ValueError(pair)
                knots.append((int(h, 16), int(v, 16)))
            except ValueError:
                raise LayoutError(
                    f"layout knot must be two 16-digit hex values: {pair!r}"
                ) from None
        if len(knots) > MAX_KNOTS:
            raise LayoutError(f"a layout has at most {MAX_KNOTS} knots, got {len(knots)}")
        return cls(tuple(knots))

    def to_virtual(self, hashed: int) -> int:
        """``T(hashed)``: where a hash sits on the ring."""
        if not self.knots:
            return hashed
        i = bisect.bisect_right(self._hashes, hashed) - 1  # the segment [h_i, h_i+1) holding it
        (h0, v0), (h1, v1) = self._points[i], self._points[i + 1]
        return v0 + (hashed - h0) * (v1 - v0) // (h1 - h0)

    def first_hash_at(self, virtual: int) -> int:
        """The smallest hash ``h`` with ``T(h) >= virtual`` (``2**64`` when none): the start of
        the hash range a virtual span starting at ``virtual`` pulls back to."""
        if not self.knots:
            return virtual
        if virtual <= self._virtuals[0]:
            return 0
        if virtual >= HASH_SPACE:
            return HASH_SPACE
        i = bisect.bisect_left(self._virtuals, virtual) - 1  # v_i < virtual <= v_i+1
        (h0, v0), (h1, v1) = self._points[i], self._points[i + 1]
        # T(h) = v0 + floor((h - h0)(v1 - v0) / (h1 - h0)) >= virtual
        #   iff (h - h0)(v1 - v0) >= (virtual - v0)(h1 - h0): the ceiling of the quotient.
        return h0 + -(-(virtual - v0) * (h1 - h0) // (v1 - v0))

    def hash_spans(self, virtual_spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Virtual ``[start, end)`` spans (in order) as the hash spans ``T`` maps into them."""
        out: list[tuple[int, int]] = []
        for start, end in virtual_spans:
            lo, hi = self.first_hash_at(start), self.first_hash_at(end)
            if lo >= hi:
                continue  # no hash lands in this span
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return out


IDENTITY: Final = Layout()
"""No knots: virtual = hash (the plain ring)."""


def spread(
    namespaces: Iterable[str],
    arcs: Sequence[tuple[int, int, str]] = ((0, HASH_SPACE, ""),),
    max_knots: int = MAX_KNOTS,
) -> Layout:
    """The layout that gives each member of a ring its fair count of these namespaces.

    ``arcs`` are the ring's virtual arcs in order, ``(start, end, owner)``, tiling the space
    (:meth:`pycm.sharding.ring.Ring.arcs`); the default, one arc, spreads the namespaces evenly.
    Each of N owners gets ``M // N`` of the M distinct hashes (the remainder to the owners of the
    largest shares), placed among its arcs in proportion to their lengths (largest remainders)
    and evenly within each arc. The sorted hashes take those places in order, so the map is
    monotone. Past ``max_knots`` namespaces only the quantiles are knots (the rest fall between
    them). No namespaces: the identity layout.

    Why per owner and not simply evenly: with 64 tokens a member, shares of the ring are within
    about ±25 % of 1/N, so ten evenly spread namespaces still split 1/4/5 over three members.
    The layout fits the ring it was built for; a later join moves about 1/N of the namespaces
    (the tokens are unchanged) and the writer rebuilds only when the split is clearly off."""
    return spread_hashes({hash_field(ns) for ns in namespaces}, arcs, max_knots)


def spread_hashes(
    hashed: Iterable[int],
    arcs: Sequence[tuple[int, int, str]] = ((0, HASH_SPACE, ""),),
    max_knots: int = MAX_KNOTS,
) -> Layout:
    """:func:`spread` of namespace hashes rather than names."""
    hashes = sorted(set(hashed))
    count = len(hashes)
    if count == 0:
        return IDENTITY
    places = _places(count, arcs)
    if any(b <= a for a, b in itertools.pairwise(places)) or places[-1] >= HASH_SPACE:
        places = [(2 * i + 1) * HASH_SPACE // (2 * count) for i in range(count)]  # tiny arcs
    picks = min(count, max_knots)
    # The j-th knot takes the namespace at the middle of the j-th of `picks` equal runs.
    indices = sorted({(2 * j + 1) * count // (2 * picks) for j in range(picks)})
    return Layout(tuple((hashes[i], places[i]) for i in indices))


def _places(count: int, arcs: Sequence[tuple[int, int, str]]) -> list[int]:
    """``count`` increasing virtual points: each owner's quota, spread over its arcs."""
    lengths: dict[str, int] = {}
    for start, end, owner in arcs:
        lengths[owner] = lengths.get(owner, 0) + end - start
    owners = sorted(lengths, key=lambda o: (-lengths[o], o))
    quota = {
        o: count // len(owners) + (1 if i < count % len(owners) else 0)
        for i, o in enumerate(owners)
    }
    per_arc = [0] * len(arcs)
    for owner in owners:
        mine = [i for i, (_, _, o) in enumerate(arcs) if o == owner]
        total, want = lengths[owner], quota[owner]
        # Exact largest remainders: arc i's fair part is want * length_i / total.
        parts = {i: divmod(want * (arcs[i][1] - arcs[i][0]), total) for i in mine}
        for i in mine:
            per_arc[i] = parts[i][0]
        left = want - sum(per_arc[i] for i in mine)
        for i in sorted(mine, key=lambda i: (-parts[i][1], i))[:left]:
            per_arc[i] += 1
    places: list[int] = []
    for (start, end, _), n in zip(arcs, per_arc, strict=True):
        places.extend(start + (2 * j + 1) * (end - start) // (2 * n) for j in range(n))
    return places
