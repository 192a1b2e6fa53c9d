"""The layout writer: the hysteresis (no rewrite for a balanced set or a namespace or two more; a
rewrite for the clustered set), its listing cadence, and a conflict retried at the next period."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest

from pycm.api.sharding import hash_field
from pycm.sharding.layout import IDENTITY, Layout, spread
from pycm.sharding.layout_writer import LayoutWriter, plan_layout, unbalanced
from pycm.sharding.ring import TOKENS_PER_MEMBER, Ring

MEMBERS = frozenset({"pycm-0", "pycm-1", "pycm-2"})
TEAMS = [f"team-{i}" for i in range(10)]
# Names that differ early spread well enough under FNV-1a (9 / 7 / 4): no layout needed.
SPREAD = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
]


def _fitted(namespaces: list[str]) -> Layout:
    return spread(namespaces, Ring(MEMBERS).arcs())


@pytest.mark.parametrize(
    ("counts", "namespaces", "expected"),
    [
        pytest.param([10, 0, 0], 10, True, id="all-on-one"),
        pytest.param([4, 3, 3], 10, False, id="fair"),
        pytest.param([5, 4, 1], 10, False, id="5-of-10-is-not-past-1.5x"),
        pytest.param([6, 2, 2], 10, True, id="6-of-10"),
        pytest.param([2, 1, 0], 3, False, id="one-above-fair-is-noise"),
        pytest.param([9, 7, 4], 20, False, id="9-of-20"),
        pytest.param([3, 0, 0], 3, True, id="three-on-one"),
        pytest.param([], 0, False, id="nothing"),
    ],
)
def test_layout_writer_hysteresis_table(counts: list[int], namespaces: int, expected: bool) -> None:
    assert unbalanced(counts, namespaces) is expected


@pytest.mark.parametrize(
    ("namespaces", "current"),
    [
        pytest.param(SPREAD, IDENTITY, id="names-that-spread-under-the-plain-ring"),
        pytest.param(TEAMS, _fitted(TEAMS), id="teams-under-their-layout"),
        pytest.param([*TEAMS, "team-10", "team-11"], _fitted(TEAMS), id="two-more-teams"),
        pytest.param(TEAMS, _fitted(TEAMS), id="same-again"),
        pytest.param([], IDENTITY, id="no-namespaces"),
    ],
)
def test_layout_writer_keeps_a_layout_that_is_not_clearly_unbalanced(
    namespaces: list[str], current: Layout
) -> None:
    if namespaces:  # the premise: the current layout is acceptable for these namespaces
        ring = Ring(MEMBERS, TOKENS_PER_MEMBER, current)
        owned = Counter(ring.owner(hash_field(ns)) for ns in namespaces)
        assert not unbalanced([owned.get(m, 0) for m in MEMBERS], len(namespaces))
    assert plan_layout(namespaces, MEMBERS, current) is None


def test_layout_writer_rewrites_the_clustered_set() -> None:
    plan = plan_layout(TEAMS, MEMBERS, IDENTITY)
    assert plan is not None
    assert (plan.namespaces, plan.members, plan.most_before, plan.most_after) == (10, 3, 10, 4)
    assert plan.layout == _fitted(TEAMS)
    assert plan_layout(TEAMS, MEMBERS, plan.layout) is None, "written once, then kept"


class _Store:
    """Records each write; answers with the queued outcomes (True: written, False: conflict)."""

    def __init__(self, outcomes: list[bool]) -> None:
        self.outcomes = outcomes
        self.writes: list[tuple[str, str]] = []

    async def write_layout(self, name: str, body: dict[str, Any], resource_version: str) -> bool:
        self.writes.append((name, resource_version))
        return self.outcomes.pop(0)


class _Lister:
    def __init__(self, names: list[str], fail: bool = False) -> None:
        self.names, self.fail, self.calls = names, fail, 0

    async def __call__(self) -> list[str]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("namespaces is forbidden")
        return list(self.names)


@pytest.mark.asyncio
async def test_layout_writer_lists_every_n_periods_and_retries_a_conflict_at_once() -> None:
    lister = _Lister(SPREAD)
    writer = LayoutWriter(_Store([]), lister, every=4)
    calls = []
    for _ in range(13):
        assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is None
        calls.append(lister.calls)
    assert calls == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3], "after a full period, every 4th"
    # A new member set waits a full period again (it may be passing: members join one by one).
    for _ in range(4):
        assert await writer.plan(MEMBERS | {"pycm-3"}, IDENTITY, TOKENS_PER_MEMBER) is None
    assert lister.calls == 3

    lister = _Lister(TEAMS)
    store = _Store([False, True])
    writer = LayoutWriter(store, lister, every=4)
    for _ in range(4):
        assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is None
    plan = await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER)
    assert plan is not None
    assert not await writer.write("pycm-layout", {}, "7"), "someone else wrote first"
    # The next period (after the member reread the ring) lists and plans again.
    plan = await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER)
    assert plan is not None and lister.calls == 2
    assert await writer.write("pycm-layout", {}, "9")
    assert store.writes == [("pycm-layout", "7"), ("pycm-layout", "9")]
    assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is None
    assert lister.calls == 2, "after a write, the usual cadence"


@pytest.mark.asyncio
async def test_layout_writer_that_cannot_list_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lister = _Lister(TEAMS, fail=True)
    writer = LayoutWriter(_Store([]), lister, every=1)
    with caplog.at_level(logging.WARNING, logger="pycm.sharding.layout_writer"):
        for _ in range(4):
            assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is None
    assert lister.calls == 3, "after a full period (one call), at each"
    assert [r.getMessage() for r in caplog.records] == [
        "sharding: listing namespaces for the layout failed: namespaces is forbidden"
    ]
    lister.fail = False
    assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is not None


@pytest.mark.asyncio
async def test_layout_writer_of_a_ring_of_one_lists_nothing() -> None:
    lister = _Lister(TEAMS)
    writer = LayoutWriter(_Store([]), lister, every=1)
    for _ in range(3):
        assert await writer.plan(frozenset({"pycm-0"}), IDENTITY, TOKENS_PER_MEMBER) is None
    assert lister.calls == 0, "one member owns everything under any layout"
    assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is None  # a new set: it waits
    assert await writer.plan(MEMBERS, IDENTITY, TOKENS_PER_MEMBER) is not None
