"""The Sharding view's ring timeline in `pycm top` (pilot-driven, fed the synthetic ring trace):
one lane per member over the window from the oldest mark to now — joins, a fenced stretch, a
drain stretch, a leave, a killed member seen gone — the live-member row and the legend; the
empty state, and the view's filter."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console
from textual.widgets import Input

from pycm.trace import kinds as k
from pycm.trace.events import Event
from pycm.trace.state import State
from pycm.trace.state.sharding import MARKS
from tests.support.sharding_trace import T0, ring_trace
from tests.tui import scenario
from tests.tui.conftest import settle, text_of
from tui.app import TopApp
from tui.sources import ListSource
from tui.views.leader import TIMELINE_WIDTH
from tui.views.sharding import ShardingView
from tui.views.sharding_timeline import EMPTY_TEXT, ring_timeline

SIZE = (180, 60)
S = 1_000_000_000


def _cell(seconds: float, window_s: float) -> int:
    """The cell holding a moment ``seconds`` into the window: each cell holds up to its end."""
    return max(0, math.ceil(seconds / window_s * TIMELINE_WIDTH) - 1)


def _lanes(text: str) -> dict[str, str]:
    """Label -> the TIMELINE_WIDTH cells of its row: the lanes and the live-member row (the
    rows above the window's length)."""
    out = {}
    for line in text.splitlines():
        line = line.rstrip()
        if line.endswith("now"):
            break
        label = line[:-TIMELINE_WIDTH].strip()
        if label and len(line) > TIMELINE_WIDTH:
            out[label] = line[-TIMELINE_WIDTH:]
    return out


def _stamped(events: list[Event], more: list[tuple[float, str, Event]]) -> list[Event]:
    """``events`` followed by ``more`` (seconds after T0, instance, event), stamped after them."""
    seq = {e.instance: e.seq for e in events}
    out = list(events)
    for seconds, instance, event in more:
        seq[instance] = seq.get(instance, 0) + 1
        object.__setattr__(event, "instance", instance)
        object.__setattr__(event, "seq", seq[instance])
        object.__setattr__(event, "ts", T0 + int(seconds * S))
        out.append(event)
    return out


async def _timeline(events: list[Event], *filter_keys: str) -> str:
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        if filter_keys:
            await pilot.press("slash", *filter_keys)
            await settle(pilot)
        return text_of(app, "#sharding-timeline")


@pytest.mark.asyncio
async def test_sharding_timeline_draws_a_lane_per_member_with_joins_fence_drain_and_leave() -> None:
    text = await _timeline(ring_trace())
    window = 32.0  # the first join to the newest event (the views after pycm-3 left)
    assert "ring pycm over time" in text and "32s window" in text
    lanes = _lanes(text)
    assert list(lanes) == ["pycm-0", "pycm-1", "pycm-2", "pycm-3", "live members"]
    for name in ("pycm-0", "pycm-1", "pycm-2"):
        assert lanes[name][0] == "▲" and "·" not in lanes[name]  # on the ring from the start
    # pycm-3 joins at 10 s and leaves at 30.1 s: off the ring before and after.
    three = lanes["pycm-3"]
    joined, left = _cell(10, window), _cell(30.1, window)
    assert three[:joined] == "·" * joined and three[joined] == "▲"
    assert three[left] == "▼" and three[left + 1 :] == "·" * (TIMELINE_WIDTH - left - 1)
    # pycm-1 is fenced from 20 s to 24 s: a stretch, on the ring again after.
    one = lanes["pycm-1"]
    fenced, unfenced = _cell(20, window), _cell(24, window)
    assert one[fenced:unfenced] == "▒" * (unfenced - fenced)
    assert one[fenced - 1] == "─" and one[unfenced] == "─"
    # pycm-0 waits for a key from 12 s, gives its part up at 14.5 s.
    zero = lanes["pycm-0"]
    started, finished = _cell(12, window), _cell(14.5, window)
    assert zero[started + 1 : finished] == "═" * (finished - started - 1)
    assert zero[finished] == "■" and "═" not in zero[finished:]
    assert zero[_cell(2, window)] == "■"  # the drain that did not wait: a mark, no stretch
    # The ring's live members, where their count changed.
    live = lanes["live members"]
    assert live[0] == "3" and live[joined] == "4" and live[fenced] == "3"
    assert live[unfenced] == "4" and live[left] == "3"
    assert "live members changed: 1 → 2 → 3 → 4 → 3 → 4 → 3" in text
    for meaning in ("joined", "left", "seen gone", "fenced", "draining", "drain finished"):
        assert meaning in text  # the legend


def _relist(seconds: float, member: str) -> tuple[float, str, Event]:
    """A move of ``member`` at ``seconds``: the trace's newest event (its now) is then."""
    return seconds, member, k.ShardRelisted(ring="pycm", member=member, informers=3, share=0.3)


@pytest.mark.asyncio
async def test_sharding_timeline_a_running_drain_and_fence_reach_now() -> None:
    cut = [e for e in ring_trace() if e.ts <= T0 + 12 * S]
    zero = _lanes(await _timeline(_stamped(cut, [_relist(14, "pycm-2")])))["pycm-0"]
    started = _cell(12, 14.0)
    assert zero[started - 1] == "─" and zero[started:] == "═" * (TIMELINE_WIDTH - started)
    cut = [e for e in ring_trace() if e.ts <= T0 + 20 * S]
    one = _lanes(await _timeline(_stamped(cut, [_relist(23, "pycm-2")])))["pycm-1"]
    fenced = _cell(20, 23.0)
    assert one[fenced - 1] == "─" and one[fenced:] == "▒" * (TIMELINE_WIDTH - fenced)


@pytest.mark.asyncio
async def test_sharding_timeline_marks_a_killed_member_gone_from_the_others_views() -> None:
    three = "pycm-0,pycm-1,pycm-2"
    more: list[tuple[float, str, Event]] = [
        (
            50.0,
            who,
            k.ShardViewChanged(
                ring="pycm", member=who, view=three, target="pycm-0,pycm-1", left="pycm-2"
            ),
        )
        for who in ("pycm-0", "pycm-1")
    ]  # pycm-2 was killed: it says nothing, the others see its Lease expire
    text = await _timeline(_stamped(ring_trace(), more))
    lanes = _lanes(text)
    two = lanes["pycm-2"]
    gone = _cell(50, 50.0)
    assert two[gone] == "✖" and two[0] == "▲" and "·" not in two[:gone]
    assert lanes["live members"][gone] == "2"
    assert text.rstrip().splitlines()[-2].endswith("→ 3 → 2")  # the changes line
    assert lanes["pycm-0"][gone] == "◆" and lanes["pycm-3"][-1] == "·"


@pytest.mark.asyncio
async def test_sharding_timeline_follows_the_filter() -> None:
    app = TopApp([ListSource(ring_trace())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7", "slash")
        app.query_one("#filter", Input).value = "pycm-3"  # as typed: one Changed message
        await settle(pilot)
        lanes = _lanes(text_of(app, "#sharding-timeline"))
        assert list(lanes) == ["pycm-3", "live members"]  # the ring's count stays
        app.query_one("#filter", Input).value = "nobody"
        await settle(pilot)
        assert "no member matches the filter" in text_of(app, "#sharding-timeline")


@pytest.mark.asyncio
async def test_sharding_timeline_says_so_when_the_trace_has_no_ring() -> None:
    app = TopApp([ListSource(scenario.build())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = app.query_one(ShardingView)  # its tab is hidden: shown here directly
        view.show(app.snapshot, app.feed)
        await pilot.pause()
        assert text_of(app, "#sharding-timeline").strip() == EMPTY_TEXT


def test_sharding_timeline_draws_a_member_whose_marks_rolled_out_as_it_is_now() -> None:
    """The ring keeps its newest MARKS marks: a flapping member's push a quiet one's out; the
    quiet lanes are then drawn from the members' state (on the ring, or left)."""
    flaps: list[tuple[float, str, Event]] = [
        (40.0 + i, "pycm-1", (k.ShardMemberFenced if i % 2 == 0 else k.ShardMemberUnfenced)())
        for i in range(MARKS)
    ]
    for _, _, event in flaps:
        object.__setattr__(event, "ring", "pycm")
        object.__setattr__(event, "member", "pycm-1")
    state = State()
    state.apply_all(_stamped(ring_trace(), flaps))
    snap = state.snapshot()
    ring = snap["sharding"]["pycm"]
    assert {m["member"] for m in ring["marks"]} == {"pycm-1"}
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(ring_timeline("pycm", ring, snap["now_ts"]))
    lanes = _lanes(console.export_text())
    assert lanes["pycm-0"] == lanes["pycm-2"] == "─" * TIMELINE_WIDTH  # live, no mark left
    assert lanes["pycm-3"] == "·" * TIMELINE_WIDTH  # it left
    assert lanes["pycm-1"][0] == "▒" and set(lanes["pycm-1"]) == {"▒", "─"}  # its flaps
