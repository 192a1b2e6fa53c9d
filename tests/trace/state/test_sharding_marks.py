"""The sharding domain's mark history (each member's lane on the ring's timeline): what happened
to which member and when, in order, bounded per ring, with the ring's live members after each
mark; the marks of members that say nothing (killed, or never reporting) come from the first
other member that sees them change."""

from __future__ import annotations

import orjson

from pycm.trace import kinds as k
from pycm.trace.state import State
from pycm.trace.state.sharding import MARKS
from tests.support.sharding_trace import T0, ring_trace
from tests.trace.state.script import T0 as FEED_T0
from tests.trace.state.script import Feed

S = 1_000_000_000


def _marks(state: State, ring: str = "pycm") -> list[tuple[float, str, str, str, int]]:
    return [
        (round((m["ts"] - T0) / S, 1), m["member"], m["kind"], m["by"], m["live"])
        for m in state.snapshot()["sharding"][ring]["marks"]
    ]


def test_sharding_marks_follow_the_ring_trace_in_order_with_the_live_count() -> None:
    state = State()
    state.apply_all(ring_trace())
    marks = _marks(state)
    assert [m[0] for m in marks] == sorted(m[0] for m in marks)
    lifecycle = [(t, member, kind, live) for t, member, kind, _, live in marks if kind != "view"]
    assert lifecycle == [
        (0.0, "pycm-0", "joined", 1),
        (0.1, "pycm-1", "joined", 2),
        (0.2, "pycm-2", "joined", 3),
        (2.0, "pycm-0", "drain", 3),
        (2.0, "pycm-0", "relist", 3),
        (2.0, "pycm-1", "relist", 3),
        (2.0, "pycm-2", "relist", 3),
        (10.0, "pycm-3", "joined", 4),
        (12.0, "pycm-0", "drain_started", 4),
        (14.5, "pycm-0", "drain", 4),
        (14.6, "pycm-0", "relist", 4),
        (20.0, "pycm-1", "fenced", 3),
        (24.0, "pycm-1", "unfenced", 4),
        (30.0, "pycm-3", "drain", 4),
        (30.1, "pycm-3", "left", 3),
    ]
    # Every member reported its own marks; the others seeing pycm-3 go after it left add none.
    assert all(by == member for _, member, _, by, _ in marks)
    views = [(t, member) for t, member, kind, _, _ in marks if kind == "view"]
    assert views[-3:] == [(32.0, "pycm-0"), (32.0, "pycm-1"), (32.0, "pycm-2")]


def test_sharding_marks_a_killed_member_gone_once_by_the_first_that_sees_it() -> None:
    f = Feed()
    f(k.ShardMemberJoined(ring="r", member="a", view="a"), at=0, instance="a")
    f(k.ShardMemberJoined(ring="r", member="b", view="b"), at=0, instance="b")
    f(k.ShardMemberJoined(ring="r", member="c", view="c"), at=0, instance="c")
    for who in "bc":  # a is killed: it says nothing; both others see its Lease expire
        f(
            k.ShardViewChanged(ring="r", member=who, view="b,c", target="b,c", left="a"),
            at=20,
            instance=who,
        )
    gone = [m for m in f.state.snapshot()["sharding"]["r"]["marks"] if m["member"] == "a"]
    assert [(m["kind"], m["by"], m["live"]) for m in gone] == [("joined", "a", 1), ("gone", "b", 2)]
    # a comes back (a partition healed): its own report puts its lane back on the ring.
    f(k.ShardViewChanged(ring="r", member="a", view="a,b,c", target="a,b,c"), at=25, instance="a")
    last = f.state.snapshot()["sharding"]["r"]["marks"][-1]
    assert (last["member"], last["kind"], last["live"]) == ("a", "view", 3)


def test_sharding_marks_a_member_that_never_reports_joined_and_gone_by_others_views() -> None:
    f = Feed()
    f(k.ShardViewChanged(ring="r", member="a", view="a", target="a,b", joined="a,b"), at=0)
    f(k.ShardViewChanged(ring="r", member="a", view="a,b", target="a,b"), at=1)  # no news of b
    f(k.ShardViewChanged(ring="r", member="a", view="a", target="a", left="b"), at=9)
    marks = f.state.snapshot()["sharding"]["r"]["marks"]
    assert [(m["member"], m["kind"], m["by"]) for m in marks] == [
        ("b", "joined", "a"),
        ("a", "view", "a"),
        ("a", "view", "a"),
        ("b", "gone", "a"),
        ("a", "view", "a"),
    ]
    assert [m["live"] for m in marks] == [2, 2, 2, 1, 1]


def test_sharding_marks_keep_the_newest_per_ring_and_survive_a_restore() -> None:
    f = Feed()
    for i in range(MARKS + 10):  # a flapping member: fenced and unfenced over and over
        kind = k.ShardMemberFenced if i % 2 == 0 else k.ShardMemberUnfenced
        f(kind(ring="r", member="a"), at=i)
    f(k.ShardMemberJoined(ring="other", member="x", view="x"), at=100)
    snap = f.state.snapshot()["sharding"]
    marks = snap["r"]["marks"]
    assert len(marks) == MARKS
    assert [m["ts"] for m in marks] == [FEED_T0 + i * S for i in range(10, MARKS + 10)]
    assert [m["kind"] for m in marks[:2]] == ["fenced", "unfenced"]
    assert [m["member"] for m in snap["other"]["marks"]] == ["x"]  # its own bound, its own ring
    resumed = State.restore(orjson.loads(orjson.dumps(f.state.snapshot())))
    f2 = Feed(resumed)
    f2(k.ShardMemberLeft(ring="r", member="a"), at=200)
    after = resumed.snapshot()["sharding"]["r"]["marks"]
    assert len(after) == MARKS  # the restored ring is bounded as the folded one
    assert after[-1]["kind"] == "left" and after[0]["ts"] == FEED_T0 + 11 * S
