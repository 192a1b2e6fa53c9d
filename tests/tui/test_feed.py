"""The app's feed: bounded buffering, snapshot merging, typed source statuses."""

from __future__ import annotations

from pycm.trace import Event
from pycm.trace import kinds as k
from pycm.trace.state import State
from pycm.trace.stream import SourceState, SourceStatus
from tui.feed import Feed, status_text


def renewed(seq: int) -> Event:
    return k.LeaseRenewed(
        lease="kube-system/pycm",
        identity="pycm-a",
        latency_ms=3.0,
        seq=seq,
        ts=1_790_000_000_000_000_000 + seq,
        instance="pycm-a",
    )


def test_feed_overflow_drops_oldest_and_counts() -> None:
    feed = Feed(max_buffer=3)
    feed.push("a", [renewed(i) for i in range(1, 6)])
    assert feed.dropped == 2
    assert feed.drain() == 3
    assert [e.seq for e in feed.recent] == [3, 4, 5]


def test_feed_snapshot_merge_keeps_known_instances() -> None:
    feed = Feed()
    feed.push("a", [renewed(1)])
    feed.drain()
    other = State()
    other.apply(
        k.LeaseRenewed(lease="kube-system/pycm", identity="pycm-a", seq=9, ts=9, instance="pycm-a")
    )
    other.apply(
        k.ControllerStarted(controller="deployment", workers=2, seq=1, ts=9, instance="pycm-b")
    )
    feed.push_snapshot("a", other.snapshot())
    assert feed.state.instances["pycm-a"].last_seq == 1  # ours kept
    assert ("pycm-b", "deployment") in feed.state.controllers  # theirs adopted
    feed.push_snapshot("a", {"instances": "garbage"})  # not fatal


def test_feed_status_typed_and_shown_as_text() -> None:
    feed = Feed()
    feed.set_status("r1", SourceStatus(SourceState.CONNECTED))
    feed.set_status("r2", SourceStatus(SourceState.UNAUTHORIZED, "HTTP 401; retrying in 2.0s"))
    feed.set_status("replay", SourceStatus(SourceState.FAILED, "cannot read: No such file"))
    assert feed.status["r2"].state is SourceState.UNAUTHORIZED
    assert feed.statuses == {
        "r1": "live",
        "r2": "unauthorized (HTTP 401; retrying in 2.0s)",
        "replay": "cannot read: No such file",
    }
    assert feed.take_dirty()
    feed.set_status("r1", SourceStatus(SourceState.CONNECTED))
    assert not feed.take_dirty()  # no change, no redraw


def test_status_text_of_every_state_is_not_empty() -> None:
    assert all(status_text(SourceStatus(s)) for s in SourceState)
