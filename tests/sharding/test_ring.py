"""The hash ring: a partition of the hash space, about 1/N moved per change, selectors that
select exactly the member's share."""

from __future__ import annotations

import itertools
import random

import pytest

from pycm.api.sharding import FIELD_NAMESPACE, HASH_SPACE, hash_field, parse
from pycm.sharding.ring import Ring

MEMBERS = ["pycm-0", "pycm-1", "pycm-2"]


def test_ring_spans_partition_the_hash_space() -> None:
    ring = Ring.of(MEMBERS)
    spans = sorted(span for member in MEMBERS for span in ring.spans(member))
    assert spans[0][0] == 0 and spans[-1][1] == HASH_SPACE
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end == start, "no gap and no overlap between members' spans"
    assert sum(ring.shares().values()) == pytest.approx(1.0)


def test_ring_owner_agrees_with_spans_and_selectors() -> None:
    ring = Ring.of(MEMBERS)
    rng = random.Random(7)
    selectors = {m: ring.selector(m, FIELD_NAMESPACE) for m in MEMBERS}
    for _ in range(2000):
        namespace = f"ns-{rng.randrange(10**9)}"
        owner = ring.owner(hash_field(namespace))
        obj = {"metadata": {"namespace": namespace}}
        matching = [m for m, sel in selectors.items() if sel is not None and sel.matches(obj)]
        assert matching == [owner]
    # The edges of the space belong to someone, and to the span that holds them.
    for hashed in (0, HASH_SPACE - 1):
        owner = ring.owner(hashed)
        assert owner is not None
        assert any(s <= hashed < e for s, e in ring.spans(owner))


def test_ring_selectors_survive_the_wire() -> None:
    ring = Ring.of(MEMBERS)
    for member in MEMBERS:
        selector = ring.selector(member, FIELD_NAMESPACE)
        assert selector is not None and parse(str(selector)) == selector


def test_ring_of_one_owns_everything_and_empty_owns_nothing() -> None:
    assert Ring.of(["solo"]).spans("solo") == [(0, HASH_SPACE)]
    assert Ring.of([]).owner(123) is None
    assert Ring.of(MEMBERS).spans("stranger") == []
    assert Ring.of(MEMBERS).selector("stranger", FIELD_NAMESPACE) is None


def test_ring_shares_are_balanced_within_the_token_spread() -> None:
    # 64 tokens a member: each share is within about ±25 % of 1/N for these names (the spread
    # falls as 1/sqrt(tokens); the tokens are the trade against the selector's length).
    for count in (2, 3, 5):
        shares = Ring.of([f"pycm-{i}" for i in range(count)]).shares().values()
        assert all(0.75 / count < share < 1.25 / count for share in shares), shares


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_ring_join_moves_about_one_nth_and_only_to_the_new_member(count: int) -> None:
    before = Ring.of([f"pycm-{i}" for i in range(count)])
    after = Ring.of([f"pycm-{i}" for i in range(count + 1)])
    moved = before.moved_fraction(after)
    assert moved == pytest.approx(after.share(f"pycm-{count}"))
    assert 0.6 / (count + 1) < moved < 1.4 / (count + 1)
    rng = random.Random(count)
    for _ in range(2000):
        hashed = rng.randrange(HASH_SPACE)
        if before.owner(hashed) != after.owner(hashed):
            assert after.owner(hashed) == f"pycm-{count}"
    # A leave is the same change backwards.
    assert after.moved_fraction(before) == pytest.approx(moved)
