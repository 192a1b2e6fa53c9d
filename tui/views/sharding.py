"""Sharding: per ring, its members — whose Lease is live, each one's share of the hash space
(published, and the target it moves to), the keys of its share (the objects of its controllers'
primary resources) and all the objects its sharded informers cache, its drains and fences — and
the ring's moves, newest last (joins, leaves, drains, fences, relists). The tab is shown only
once the trace has a ring (``pycm run --sharded``)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from pycm.trace.state import Snapshot
from pycm.trace.state.sharding import MemberSnapshot, RingSnapshot
from tui.feed import Feed
from tui.format import count, ms, since_ns
from tui.views.base import View
from tui.views.sharding_timeline import RingTimeline
from tui.views.table import LiveTable

__all__ = ["COLUMNS", "MOVES_SHOWN", "ShardingView", "lease_text"]

COLUMNS = (
    "ring",
    "member",
    "lease",
    "share",
    "→ target",
    "keys",
    "objects",
    "in flight",
    "drain",
    "drains",
    "last drain",
    "fences",
    "view",
)
MOVES_SHOWN = 12

_MOVE_STYLE = {
    "joined": "green",
    "left": "yellow",
    "fenced": "bold red",
    "unfenced": "green",
    "drain_started": "yellow",
    "drain": "cyan",
    "relist": "dim",
    "view": "",
}


def lease_text(member: MemberSnapshot) -> Text:
    if member["left"]:
        return Text("left", style="dim")
    if member["fenced"]:
        return Text("fenced", style="bold red")
    if not member["reported"]:
        return Text("seen live" if member["lease_live"] else "seen gone", style="dim")
    return Text("live", style="green") if member["lease_live"] else Text("expired", style="red")


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


class ShardingView(View):
    DEFAULT_CSS = """
    ShardingView #sharding-summary { height: auto; }
    ShardingView LiveTable { height: 1fr; }
    ShardingView #sharding-moves { height: auto; max-height: 16; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last: tuple[Snapshot, Feed] | None = None

    @staticmethod
    def wanted(snapshot: Snapshot) -> bool:
        """Shown only when the trace has a sharding ring."""
        return bool(snapshot.get("sharding"))

    def compose(self) -> ComposeResult:
        yield Static(id="sharding-summary")
        yield LiveTable(COLUMNS, id="sharding-table")
        yield Static(id="sharding-moves")
        yield RingTimeline(id="sharding-timeline")  # lanes per member: sharding_timeline.py

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        self._last = (snapshot, feed)
        rings = snapshot.get("sharding") or {}
        now = snapshot["now_ts"]
        summary = Text()
        moves = Text()
        rows = []
        for name, ring in sorted(rings.items()):
            self._summarize(summary, name, ring)
            for identity, member in ring["members"].items():
                if not self.matches(name, identity, member["instance"]):
                    continue
                rows.append(self._row(name, identity, member, now))
            shown = [m for m in ring["moves"] if self.matches(m["member"], m["text"])]
            for move in shown[-MOVES_SHOWN:]:
                moves.append(f"{since_ns(now, move['ts']):>10}  ", style="dim")
                moves.append(move["text"], style=_MOVE_STYLE.get(move["kind"], ""))
                moves.append("\n")
        if not rings:
            summary.append("no sharding ring in this trace (pycm run --sharded)", style="dim")
        rows.sort(key=lambda r: r[0])
        summary.rstrip()
        moves.rstrip()
        self.query_one("#sharding-summary", Static).update(summary)
        self.query_one(LiveTable).refill(rows)
        self.query_one("#sharding-moves", Static).update(moves)
        self.query_one(RingTimeline).show(rings, now, self.matches)

    @staticmethod
    def _summarize(out: Text, name: str, ring: RingSnapshot) -> None:
        members = ring["members"]
        out.append(f"ring {name}: ", style="bold")
        out.append(f"{ring['live_members']} live", style="green")
        out.append(f" of {len(members)} members seen")
        draining = [m for m, rec in members.items() if rec["draining"]]
        if draining:
            out.append(f"  draining: {', '.join(sorted(draining))}", style="yellow")
        fenced = [m for m, rec in members.items() if rec["fenced"]]
        if fenced:
            out.append(f"  fenced: {', '.join(sorted(fenced))}", style="bold red")
        out.append(f"  drains {ring['drains']}, fences {ring['fences']}")
        if ring.get("layout"):  # (absent from an older recording's snapshot)
            out.append(f"  layout {ring['layout']} ({ring['layouts']} written)", style="magenta")
        out.append("\n")

    @staticmethod
    def _row(
        ring: str, identity: str, m: MemberSnapshot, now: int
    ) -> tuple[str, tuple[Any, ...], tuple[Any, ...]]:
        moving = m["target_share"] != m["share"] and m["target"] and m["target"] != m["view"]
        drain: Text | str = "-"
        if m["draining"]:
            drain = Text(
                f"{m['drain_keys']} key(s), {since_ns(now, m['drain_started_ts'])}", style="yellow"
            )
        cells = (
            ring,
            identity,
            lease_text(m),
            _pct(m["share"]) if m["reported"] else "-",
            _pct(m["target_share"]) if moving else "",
            count(m["keys"]) if m["relists"] else "-",
            count(m["objects"]) if m["relists"] else "-",
            str(m["keys_in_flight"]),
            drain,
            str(m["drains"]),
            ms(m["last_drain_ms"]) if m["drains"] else "-",
            Text(str(m["fences"]), style="red") if m["fences"] else "0",
            m["view"] or "-",
        )
        sort = (
            ring,
            identity,
            m["lease_live"],
            m["share"],
            m["target_share"],
            m["keys"],
            m["objects"],
            m["keys_in_flight"],
            m["draining"],
            m["drains"],
            m["last_drain_ms"],
            m["fences"],
            m["view"],
        )
        return f"{ring}\0{identity}", cells, sort

    def on_live_table_resorted(self, event: LiveTable.Resorted) -> None:
        if self._last is not None:
            self.show(*self._last)
