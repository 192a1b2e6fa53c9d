"""The ring's timeline in the Sharding view: per ring, one lane per member over the recent
window — when it joined, was fenced (a stretch), drained (a stretch), moved (its view changed,
its informers relisted), left or was seen gone — and a row of the ring's live members where
their count changed. Drawn from the state's mark history (``sharding.<ring>.marks``, the newest
:data:`~pycm.trace.state.sharding.MARKS`): the window runs from the oldest mark kept to the
snapshot's ``now_ts``, :data:`~tui.views.leader.TIMELINE_WIDTH` cells wide like the Leader
view's holder timeline.

A lane before its first mark in the window is inferred from that mark (a member whose first
mark is not a join was on the ring already); a member with no mark left is drawn as it is now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from pycm.trace.state.sharding import MarkSnapshot, MemberSnapshot, RingSnapshot
from tui.views.leader import TIMELINE_WIDTH

__all__ = ["EMPTY_TEXT", "LEGEND", "Lane", "RingTimeline", "Window", "lane_cells", "ring_timeline"]

EMPTY_TEXT = "no sharding events in this trace (pycm run --sharded)"
LIVE_ROW = "live members"
COUNTS_SHOWN = 12  # the newest live-member counts spelled out under the lanes


class Lane(Enum):
    """Where a member stands at a moment: each has its background glyph and style."""

    OFF = ("·", "dim")  # not on the ring: before its join, after it left or was seen gone
    ON = ("─", "green")
    FENCED = ("▒", "red")  # its own Lease unrenewed past the deadline: it takes no key
    DRAINING = ("═", "yellow")  # waiting for in-flight keys it gives up


# A mark's glyph, its style and its rank: in a cell holding several marks the highest rank shows
# (a fence or a leave shorter than a cell still shows). An unfence has no glyph: the lane's
# background after it (on the ring again) says it.
_GLYPHS: dict[str, tuple[str, str, int]] = {
    "gone": ("✖", "bold red", 7),
    "left": ("▼", "bold yellow", 6),
    "joined": ("▲", "bold green", 5),
    "fenced": ("▒", "bold red", 4),
    "drain": ("■", "bold cyan", 3),
    "drain_started": ("═", "bold yellow", 2),
    "view": ("◆", "cyan", 1),
    "relist": ("◆", "cyan", 1),
    "layout": ("◇", "bold magenta", 1),
}

LEGEND = (
    ("▲", "bold green", "joined"),
    ("▼", "bold yellow", "left"),
    ("✖", "bold red", "seen gone (Lease expired)"),
    ("▒", "red", "fenced"),
    ("═", "yellow", "draining"),
    ("■", "bold cyan", "drain finished"),
    ("◆", "cyan", "moved (view changed, relist)"),
    ("◇", "bold magenta", "wrote a new layout"),
    ("─", "green", "on the ring"),
    ("·", "dim", "off"),
)


def _after(lane: Lane, kind: str) -> Lane:
    """The lane after a mark of ``kind``."""
    if kind == "joined" or kind == "unfenced":
        return Lane.ON
    if kind in ("left", "gone"):
        return Lane.OFF
    if kind == "fenced":
        return Lane.FENCED
    if kind == "drain_started":
        return Lane.DRAINING
    if kind == "drain":
        return Lane.ON if lane is Lane.DRAINING else lane
    # view, relist: a member reporting is alive (back from "gone" after a partition healed)
    return Lane.ON if lane is Lane.OFF else lane


def _before(first: str) -> Lane:
    """The lane before a member's first mark in the window."""
    if first == "joined":
        return Lane.OFF
    if first == "unfenced":
        return Lane.FENCED
    return Lane.ON  # a drain finished may not have waited at all: not drawn as a stretch


def _now(member: MemberSnapshot | None) -> Lane:
    """The lane of a member with no mark in the window: as the snapshot has it now."""
    if member is None or member["left"]:
        return Lane.OFF
    if member["fenced"]:
        return Lane.FENCED
    if member["draining"]:
        return Lane.DRAINING
    return Lane.ON if member["lease_live"] else Lane.OFF


class Window:
    """``width`` cells from ``start`` to ``now``: a cell holds the moments up to its end."""

    def __init__(self, start: int, now: int, width: int) -> None:
        self.start, self.width = start, width
        self.span = max(1, now - start)

    def cell(self, ts: int) -> int:
        return max(0, min(self.width - 1, ((ts - self.start) * self.width - 1) // self.span))


def lane_cells(
    marks: Iterable[MarkSnapshot], window: Window, initial: Lane
) -> list[tuple[str, str]]:
    """One member's lane as (glyph, style) per cell; ``marks`` are its own, oldest first."""
    by_cell: dict[int, list[str]] = {}
    for mark in marks:
        by_cell.setdefault(window.cell(mark["ts"]), []).append(mark["kind"])
    cells: list[tuple[str, str]] = []
    lane = initial
    for cell in range(window.width):
        kinds = by_cell.get(cell, ())
        shown: tuple[str, str, int] | None = None
        for kind in kinds:
            lane = _after(lane, kind)
            glyph = _GLYPHS.get(kind)
            if glyph is not None and (shown is None or glyph[2] > shown[2]):
                shown = glyph
        cells.append(shown[:2] if shown is not None else lane.value)
    return cells


def _count_row(marks: list[MarkSnapshot], window: Window) -> Text:
    """The ring's live members: the count of each cell's last mark, where it changed."""
    last_in_cell: dict[int, int] = {}
    for mark in marks:
        last_in_cell[window.cell(mark["ts"])] = mark["live"]
    row = Text()
    shown: int | None = None
    for cell in range(window.width):
        live = last_in_cell.get(cell)
        if live is None or live == shown:
            row.append("─" if shown is not None else " ", style="dim")
            continue
        style = "bold" if shown is None else "bold green" if live > shown else "bold red"
        row.append(str(live) if live < 10 else "+", style=style)
        shown = live
    return row


def _counts(marks: list[MarkSnapshot]) -> list[int]:
    """The live-member counts the ring went through, mark by mark (repeats dropped)."""
    counts: list[int] = []
    for mark in marks:
        if not counts or mark["live"] != counts[-1]:
            counts.append(mark["live"])
    return counts


def _lane_text(cells: list[tuple[str, str]]) -> Text:
    text = Text()
    for glyph, style in cells:
        text.append(glyph, style=style)
    return text


def _legend() -> Text:
    text = Text()
    for glyph, style, meaning in LEGEND:
        text.append(glyph, style=style)
        text.append(f" {meaning}  ", style="dim")
    text.rstrip()
    return text


def ring_timeline(
    name: str,
    ring: RingSnapshot,
    now_ts: int,
    matches: Callable[..., bool] = lambda *_: True,
    width: int = TIMELINE_WIDTH,
) -> Group:
    """The timeline of one ring: a lane per member that ``matches`` (ring, member, instance),
    the live-member row, the window's length and the legend."""
    title = Text(f"ring {name} over time", style="bold")
    marks: list[MarkSnapshot] = sorted(ring.get("marks") or [], key=lambda m: m["ts"])
    if not marks or not now_ts:
        return Group(title, Text(f"no membership marks for ring {name} yet", style="dim"))
    window = Window(marks[0]["ts"], max(now_ts, marks[-1]["ts"]), width)
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column("member", no_wrap=True)
    table.add_column("timeline", no_wrap=True)
    members = ring["members"]
    names = sorted(set(members) | {m["member"] for m in marks})
    shown = 0
    for member in names:
        snapshot = members.get(member)
        if not matches(name, member, snapshot["instance"] if snapshot else ""):
            continue
        own = [m for m in marks if m["member"] == member]
        initial = _before(own[0]["kind"]) if own else _now(snapshot)
        table.add_row(member, _lane_text(lane_cells(own, window, initial)))
        shown += 1
    if not shown:
        table.add_row(Text("no member matches the filter", style="dim"), "")
    table.add_row(Text(LIVE_ROW, style="dim"), _count_row(marks, window))
    table.add_row(
        Text(f"{window.span / 1e9:.0f}s window", style="dim"),
        Text("now".rjust(width), style="dim"),
    )
    counts = _counts(marks)
    history = " → ".join(str(n) for n in counts[-COUNTS_SHOWN:])
    earlier = "… → " if len(counts) > COUNTS_SHOWN else ""
    changes = Text(f"live members changed: {earlier}{history}", style="dim")
    return Group(title, table, changes, _legend())


class RingTimeline(Static):
    """The Sharding view's timelines, one per ring (the view calls :meth:`show`)."""

    DEFAULT_CSS = """
    RingTimeline { height: auto; margin-top: 1; }
    """

    def show(
        self, rings: dict[str, RingSnapshot], now_ts: int, matches: Callable[..., bool]
    ) -> None:
        parts: list[Any] = []
        for name, ring in sorted(rings.items()):
            if parts:
                parts.append(Text(""))
            parts.append(ring_timeline(name, ring, now_ts, matches))
        self.update(Group(*parts) if parts else Text(EMPTY_TEXT, style="dim"))
