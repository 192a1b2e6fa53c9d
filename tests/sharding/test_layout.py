"""The layout: a monotone map of the hash space that tiles it exactly, spreads FNV-1a clusters
(``team-0`` … ``team-9``) over the members, keeps a join's moves to about 1/N, and survives its
annotation."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from pycm.api.sharding import FIELD_NAMESPACE, HASH_SPACE, hash_field, parse
from pycm.sharding.layout import (
    IDENTITY,
    MAX_KNOTS,
    Layout,
    LayoutError,
    spread,
    spread_hashes,
)
from pycm.sharding.ring import Ring

MEMBERS = ["pycm-0", "pycm-1", "pycm-2"]
TEAMS = [f"team-{i}" for i in range(10)]
TENANTS = [f"tenant-{i:03d}" for i in range(300)]
TOP = HASH_SPACE - 1


def _owned(ring: Ring, namespaces: list[str]) -> Counter[str | None]:
    return Counter(ring.owner(hash_field(ns)) for ns in namespaces)


def _probes(layout: Layout) -> list[int]:
    """Hashes where a mistake would show: the edges of the space and around every knot."""
    rng = random.Random(3)
    points = {0, 1, TOP - 1, TOP, *(rng.randrange(HASH_SPACE) for _ in range(300))}
    for h, _ in layout.knots:
        points.update(p for p in (h - 1, h, h + 1) if 0 <= p < HASH_SPACE)
    return sorted(points)


LAYOUTS = [
    pytest.param(IDENTITY, id="identity"),
    pytest.param(spread(TEAMS), id="teams-even"),
    pytest.param(spread(TEAMS, Ring.of(MEMBERS).arcs()), id="teams-for-the-ring"),
    pytest.param(spread(TENANTS, Ring.of(MEMBERS).arcs(), max_knots=16), id="quantiles"),
    # Hashes 1 apart, and knots on the very edges of the space.
    pytest.param(spread_hashes([0, 5, 6, 7, TOP]), id="neighbours-and-edges"),
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_is_monotone_and_its_pullback_agrees_with_it(layout: Layout) -> None:
    probes = _probes(layout)
    virtual = [layout.to_virtual(h) for h in probes]
    assert all(0 <= v < HASH_SPACE for v in virtual)
    assert virtual == sorted(virtual), "T is monotone"
    for h, v in zip(probes, virtual, strict=True):
        # first_hash_at is T's lower inverse: the first hash that reaches v is at most h, and
        # every hash before it falls short of v.
        first = layout.first_hash_at(v)
        assert first <= h and layout.to_virtual(first) >= v
        if first > 0:
            assert layout.to_virtual(first - 1) < v


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_ring_spans_tile_the_hash_space_and_match_the_owner(layout: Layout) -> None:
    ring = Ring.of(MEMBERS, layout=layout)
    spans = sorted((s, e, m) for m in MEMBERS for s, e in ring.spans(m))
    assert spans[0][0] == 0 and spans[-1][1] == HASH_SPACE
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert end == start, "no gap and no overlap between members' spans"
    assert all(isinstance(s, int) and isinstance(e, int) and s < e for s, e, _ in spans)
    for h in _probes(layout):
        holders = [m for s, e, m in spans if s <= h < e]
        assert holders == [ring.owner(h)], f"hash {h:#x}"
    for member in MEMBERS:
        selector = ring.selector(member, FIELD_NAMESPACE)
        assert selector is not None and parse(str(selector)) == selector


def test_layout_separates_namespaces_whose_hashes_are_neighbours() -> None:
    layout = spread_hashes([5, 6, 7])
    assert [layout.to_virtual(h) for h in (5, 6, 7)] == [
        HASH_SPACE // 6,
        HASH_SPACE // 2,
        5 * HASH_SPACE // 6,
    ]
    # Each gets its own third of the ring: three members can own one each.
    owners = {Ring.of(["a"], layout=layout).owner(h) for h in (5, 6, 7)}
    assert owners == {"a"}
    ring = Ring.of(MEMBERS)
    placed = spread_hashes([5, 6, 7], ring.arcs())
    assert sorted(_owners_of(Ring.of(MEMBERS, layout=placed), [5, 6, 7]).values()) == [1, 1, 1]


def _owners_of(ring: Ring, hashes: list[int]) -> Counter[str | None]:
    return Counter(ring.owner(h) for h in hashes)


def test_layout_spreads_team_namespaces_that_the_plain_ring_puts_on_one_member() -> None:
    plain = Ring.of(MEMBERS)
    # The defect, kept as an anchor: FNV-1a puts team-0 … team-9 in one arc of the plain ring.
    assert len(_owned(plain, TEAMS)) == 1
    laid = Ring.of(MEMBERS, layout=spread(TEAMS, plain.arcs()))
    assert sorted(_owned(laid, TEAMS).values()) == [3, 3, 4]
    nine = Ring.of(MEMBERS, layout=spread(TEAMS[:9], plain.arcs()))
    assert sorted(_owned(nine, TEAMS[:9]).values()) == [3, 3, 3]
    # The share the views report is of the namespaces laid out, not of the hash space (where
    # the ten sit in a sliver, and one member's arcs around it would read as ~all of it).
    owned = _owned(laid, TEAMS)
    assert {m: laid.share(m) for m in MEMBERS} == {m: owned[m] / len(TEAMS) for m in MEMBERS}
    assert sum(laid.share(m) for m in MEMBERS) == pytest.approx(1.0)
    assert sum(plain.share(m) for m in MEMBERS) == pytest.approx(1.0)  # the plain ring's: space


@pytest.mark.parametrize("count", [2, 3, 4])
def test_layout_join_with_the_layout_unchanged_moves_about_one_nth(count: int) -> None:
    names = [f"pycm-{i}" for i in range(count)]
    layout = spread(TENANTS, Ring.of(names).arcs())
    before = Ring.of(names, layout=layout)
    after = Ring.of([*names, "pycm-new"], layout=layout)
    moved = [ns for ns in TENANTS if before.owner(hash_field(ns)) != after.owner(hash_field(ns))]
    assert all(after.owner(hash_field(ns)) == "pycm-new" for ns in moved), "only to the newcomer"
    share = len(moved) / len(TENANTS)
    assert 0.5 / (count + 1) < share < 1.5 / (count + 1), share
    # The layout fits the ring it was built for: each member its fair count.
    assert max(_owned(before, TENANTS).values()) - min(_owned(before, TENANTS).values()) <= 6


def test_layout_past_the_knot_limit_keeps_quantiles() -> None:
    many = [f"ns-{i:05d}" for i in range(1000)]
    layout = spread(many, Ring.of(MEMBERS).arcs())
    assert len(layout.knots) == MAX_KNOTS
    counts = _owned(Ring.of(MEMBERS, layout=layout), many).values()
    assert max(counts) < 1.15 * 1000 / 3, counts


def test_layout_of_no_namespaces_is_the_identity() -> None:
    assert spread([]) is IDENTITY
    assert IDENTITY.digest == "" and IDENTITY.to_virtual(12345) == 12345
    assert Ring.of(MEMBERS, layout=IDENTITY).spans("pycm-0") == Ring.of(MEMBERS).spans("pycm-0")


def test_layout_encodes_to_an_annotation_and_back_with_a_stable_digest() -> None:
    layout = spread(TEAMS, Ring.of(MEMBERS).arcs())
    text = layout.encode()
    assert Layout.decode(text) == layout
    assert Layout.decode(text).digest == layout.digest and len(layout.digest) == 12
    assert spread(TEAMS, Ring.of(MEMBERS).arcs()).digest == layout.digest, "deterministic"
    assert spread(TEAMS).digest != layout.digest
    assert Layout.decode("") == IDENTITY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("00000000000000ff", "two 16-digit hex values", id="no-colon"),
        pytest.param("ff:ff", "two 16-digit hex values", id="short"),
        pytest.param("00000000000000zz:0000000000000001", "two 16-digit hex", id="not-hex"),
        pytest.param(
            "0000000000000010:0000000000000020,0000000000000008:0000000000000030",
            "increase strictly",
            id="hashes-go-back",
        ),
        pytest.param(
            "0000000000000010:0000000000000020,0000000000000018:0000000000000020",
            "increase strictly",
            id="virtual-flat",
        ),
        pytest.param("0000000000000010:0000000000000000", "increase strictly", id="flat-start"),
        pytest.param(
            ",".join(f"{i + 1:016x}:{i + 1:016x}" for i in range(MAX_KNOTS + 1)),
            "at most 256 knots",
            id="too-many",
        ),
    ],
)
def test_layout_decode_refuses_knots_that_are_no_monotone_map(text: str, message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        Layout.decode(text)
