"""The sharding domain: a ring's members, their shares, drains, fences and the ring's moves,
folded from the shard.* events of a synthetic three-then-four-member trace."""

from __future__ import annotations

import orjson
import pytest

from pycm.sharding.ring import Ring
from pycm.trace import kinds as k
from pycm.trace.state import State
from tests.support.sharding_trace import T0, layout_written, ring_trace
from tests.trace.state.script import Feed

S = 1_000_000_000


def _fold(until_s: float | None = None) -> State:
    state = State()
    state.apply_all(e for e in ring_trace() if until_s is None or e.ts <= T0 + until_s * S)
    return state


def test_sharding_members_shares_and_liveness_after_the_whole_trace() -> None:
    ring = _fold().snapshot()["sharding"]["pycm"]
    assert sorted(ring["members"]) == ["pycm-0", "pycm-1", "pycm-2", "pycm-3"]
    assert ring["live_members"] == 3
    three = Ring.of(["pycm-0", "pycm-1", "pycm-2"])
    for name in ("pycm-0", "pycm-1", "pycm-2"):
        member = ring["members"][name]
        assert member["lease_live"] and member["reported"] and member["instance"] == name
        assert member["view"] == member["target"] == "pycm-0,pycm-1,pycm-2"
        assert member["share"] == pytest.approx(three.share(name))
    gone = ring["members"]["pycm-3"]
    assert (gone["left"], gone["lease_live"], gone["share"]) == (True, False, 0.0)
    zero = ring["members"]["pycm-0"]
    assert (zero["drains"], zero["last_drain_ms"], zero["max_drain_ms"]) == (2, 2500.0, 2500.0)
    assert zero["draining"] is False and zero["drain_started_ts"] == 0
    assert (zero["relists"], zero["objects_cached"], zero["informers"]) == (2, 118, 3)
    assert (zero["keys_cached"], zero["key_resources"]) == (39, "deployments.apps,replicasets.apps")
    assert ring["members"]["pycm-1"]["fences"] == 1 and ring["fences"] == 1
    assert ring["drains"] == 3


def test_sharding_a_running_drain_and_a_fence_show_while_they_last() -> None:
    ring = _fold(until_s=13).snapshot()["sharding"]["pycm"]
    zero = ring["members"]["pycm-0"]
    assert zero["draining"] and zero["drain_keys"] == 1
    assert zero["drain_started_ts"] == T0 + 12 * S
    assert zero["target"] == "pycm-0,pycm-1,pycm-2,pycm-3"
    ring = _fold(until_s=21).snapshot()["sharding"]["pycm"]
    one = ring["members"]["pycm-1"]
    assert one["fenced"] and not one["lease_live"]
    assert ring["live_members"] == 3  # pycm-0, pycm-2, pycm-3


def test_sharding_moves_name_each_change_in_order() -> None:
    moves = _fold().snapshot()["sharding"]["pycm"]["moves"]
    kinds = [m["kind"] for m in moves]
    assert kinds.count("joined") == 4 and kinds.count("left") == 1
    assert kinds.count("drain") == 3 and kinds.count("drain_started") == 1
    assert kinds.index("drain_started") < kinds.index("fenced") < kinds.index("unfenced")
    assert [m["ts"] for m in moves] == sorted(m["ts"] for m in moves)
    texts = [m["text"] for m in moves]
    assert "pycm-0 drains" in texts[kinds.index("drain_started")]
    assert "after 2500ms (1 key(s) drained)" in next(t for t in texts if "2500ms" in t)
    assert "pycm-1 fenced: renewed 10.2s ago (deadline 10s)" in texts
    assert any("sees pycm-3 gone" in t for t in texts)


def test_sharding_a_member_only_seen_in_another_view_is_live_until_it_is_seen_gone() -> None:
    f = Feed()
    f(k.ShardViewChanged(ring="r", member="a", view="a,b", target="a,b", joined="a,b"), at=0)
    b = f.state.snapshot()["sharding"]["r"]["members"]["b"]
    assert (b["reported"], b["lease_live"], b["instance"]) == (False, True, "")
    f(k.ShardViewChanged(ring="r", member="a", view="a", target="a", left="b"), at=20)
    assert f.state.snapshot()["sharding"]["r"]["members"]["b"]["lease_live"] is False


def test_sharding_fence_is_a_recent_error_and_the_state_round_trips() -> None:
    events = ring_trace()
    whole = State()
    whole.apply_all(events)
    errors = [e for e in whole.snapshot()["errors"] if e["kind"] == "shard.member_fenced"]
    assert [e["instance"] for e in errors] == ["pycm-1"]
    first = State()
    first.apply_all(events[:20])
    resumed = State.restore(orjson.loads(orjson.dumps(first.snapshot())))
    resumed.apply_all(events[20:])
    assert resumed.snapshot()["sharding"] == whole.snapshot()["sharding"]


def test_sharding_a_drain_the_ring_undid_ends_with_the_view_that_matches_the_target() -> None:
    f = Feed()
    f(k.ShardViewChanged(ring="r", member="a", view="a,b,c", target="a,b,c"), at=0)
    f(k.ShardDrainStarted(ring="r", member="a", keys=1, share_dropped=0.2), at=1)
    f(k.ShardViewChanged(ring="r", member="a", view="a,b,c", target="a,b"), at=1)
    assert f.state.snapshot()["sharding"]["r"]["members"]["a"]["draining"] is True
    # c came back before a published the view without it: nothing was given up.
    f(k.ShardViewChanged(ring="r", member="a", view="a,b,c", target="a,b,c"), at=3)
    a = f.state.snapshot()["sharding"]["r"]["members"]["a"]
    assert (a["draining"], a["drain_started_ts"], a["drains"]) == (False, 0, 0)


def test_sharding_keys_and_objects_cached_follow_the_sharded_informers_reports() -> None:
    """After a relist the counts the event carries are from before it; the member's informers'
    own reports (same instance, the resources the relist named) say what it holds now: objects
    from all of them, keys from those of the key resources (its controllers' primaries)."""
    state = _fold()
    zero = state.snapshot()["sharding"]["pycm"]["members"]["pycm-0"]
    assert zero["resources"] == "deployments.apps,pods,replicasets.apps"
    assert zero["objects"] == zero["objects_cached"] == 118  # no informer reports in the trace
    assert zero["keys"] == zero["keys_cached"] == 39
    for resource, objects in (("pods", 60), ("replicasets.apps", 20)):
        event = k.InformerSynced(resource=resource, objects=objects, duration_ms=5.0)
        object.__setattr__(event, "instance", "pycm-0")
        object.__setattr__(event, "ts", T0 + 40 * S)
        state.apply(event)
    other = k.InformerSynced(resource="pods", objects=999)  # another replica's pods
    object.__setattr__(other, "instance", "pycm-1")
    object.__setattr__(other, "ts", T0 + 40 * S)
    state.apply(other)
    zero = state.snapshot()["sharding"]["pycm"]["members"]["pycm-0"]
    assert (zero["objects"], zero["keys"]) == (80, 20)  # the pods are no keys


def test_sharding_a_killed_member_is_not_live_once_another_sees_it_gone() -> None:
    f = Feed()
    f(k.ShardMemberJoined(ring="r", member="a", view="a"), at=0, instance="a")
    f(k.ShardViewChanged(ring="r", member="a", view="a,b", target="a,b"), at=1, instance="a")
    f(k.ShardViewChanged(ring="r", member="b", view="a,b", target="a,b"), at=1, instance="b")
    # a is killed: it says nothing more; b sees its Lease expire.
    f(
        k.ShardViewChanged(ring="r", member="b", view="a,b", target="b", left="a"),
        at=20,
        instance="b",
    )
    ring = f.state.snapshot()["sharding"]["r"]
    assert ring["members"]["a"]["lease_live"] is False and ring["live_members"] == 1
    # a comes back (a partition healed): its own newer report wins again.
    f(k.ShardViewChanged(ring="r", member="a", view="a,b", target="a,b"), at=25, instance="a")
    assert f.state.snapshot()["sharding"]["r"]["members"]["a"]["lease_live"] is True


def test_sharding_a_written_layout_is_the_rings_with_a_move_and_a_mark() -> None:
    state = _fold()
    state.apply(layout_written(40.0, "0123456789ab", ""))
    ring = state.snapshot()["sharding"]["pycm"]
    assert (ring["layout"], ring["layouts"]) == ("0123456789ab", 1)
    move = ring["moves"][-1]
    assert (move["kind"], move["member"]) == ("layout", "pycm-1")
    assert move["text"] == (
        "pycm-1 wrote layout 0123456789ab (was the plain ring): 10 namespace(s) over 3 member(s),"
        " at most 10 on one member before, 4 after"
    )
    mark = ring["marks"][-1]
    assert (mark["kind"], mark["member"], mark["live"]) == ("layout", "pycm-1", 3)
    state.apply(layout_written(50.0, "ba9876543210", "0123456789ab"))
    ring = state.snapshot()["sharding"]["pycm"]
    assert (ring["layout"], ring["layouts"]) == ("ba9876543210", 2)
    restored = State.restore(orjson.loads(orjson.dumps(state.snapshot())))
    assert restored.snapshot()["sharding"]["pycm"]["layout"] == "ba9876543210"
