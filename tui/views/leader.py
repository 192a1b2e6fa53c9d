"""Leader: per lease, the holder timeline across replicas, the renew latency sparkline, why
renews failed, the observed clock skew, and a flap alert; with coordinated leader election the
preferred holder the coordinator asked for and the candidates with their versions."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from pycm.trace.state import LeaseSnapshot, Snapshot
from tui import format as fmt
from tui.feed import Feed
from tui.views.base import View
from tui.views.overview import ASSUMED_NOTE, assumes_defaults, lease_gauge

__all__ = ["FLAP_THRESHOLD", "LeaderView", "candidates_table", "timeline"]

FLAP_THRESHOLD = 3  # holder changes in the last hour beyond which the lease is flapping
TIMELINE_WIDTH = 60
_PALETTE = ("green", "cyan", "magenta", "yellow", "blue", "red")


def timeline(lease: LeaseSnapshot, now_ts: int, width: int = TIMELINE_WIDTH) -> Table:
    """One row per identity that held the lease: █ where it held it, over the window from the
    first recorded change to ``now_ts``."""
    history = list(lease["history"])
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column("holder", no_wrap=True)
    table.add_column("timeline", no_wrap=True)
    if not history or not now_ts:
        table.add_row(Text("no holder change seen", style="dim"), "")
        return table
    start = min(h["ts"] for h in history)
    span = max(1, now_ts - start)
    holders = sorted(
        {h["new"] for h in history if h["new"]} | {h["old"] for h in history if h["old"]}
    )
    # who held it in each cell: the last change at or before the cell's end
    cells: list[str] = []
    i, current = 0, history[0]["old"]
    for cell in range(width):
        end = start + span * (cell + 1) // width
        while i < len(history) and history[i]["ts"] <= end:
            current = history[i]["new"]
            i += 1
        cells.append(current)
    for n, holder in enumerate(holders):
        row = Text()
        style = _PALETTE[n % len(_PALETTE)]
        for who in cells:
            row.append("█" if who == holder else "·", style=style if who == holder else "dim")
        table.add_row(holder, row)
    table.add_row(
        Text(f"{span / 1e9:.0f}s window", style="dim"), Text("now".rjust(width), style="dim")
    )
    return table


def candidates_table(lease: LeaseSnapshot) -> Table | None:
    """The lease's LeaseCandidates, oldest emulation version first (the one the coordinator's
    OldestEmulationVersion picks); None when the lease has none (not coordinated)."""
    candidates = lease["candidates"]
    if not candidates:
        return None
    table = Table(title="candidates", title_justify="left", box=None)
    for column in ("identity", "emulation", "binary", "renews", "pings", ""):
        table.add_column(column, justify="left" if column in ("identity", "") else "right")

    def order(item: tuple[str, Any]) -> tuple[tuple[int, ...], str]:
        version = item[1]["emulation_version"]
        parts = tuple(int(p) if p.isdigit() else 0 for p in version.split("-")[0].split("."))
        return parts, item[0]

    for identity, c in sorted(candidates.items(), key=order):
        role = ""
        if identity == lease["holder"]:
            role = "holder"
        if identity == lease["preferred_holder"]:
            role = "preferred"
        table.add_row(
            identity,
            c["emulation_version"],
            c["binary_version"],
            str(c["renews"]),
            str(c["pings"]),
            Text(role, style="bold yellow" if role == "preferred" else "green"),
        )
    return table


class LeaderView(View):
    DEFAULT_CSS = """
    LeaderView #lease-summary { height: auto; }
    LeaderView #renew-title { height: 1; margin-top: 1; }
    LeaderView Sparkline { height: 3; margin-bottom: 1; }
    LeaderView #lease-details { height: auto; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="lease-summary")
            yield Static("renew latency (ms)", id="renew-title")
            yield Sparkline([], id="renew-sparkline")
            yield Static(id="lease-details")

    def selected_lease(self, snapshot: Snapshot) -> tuple[str, LeaseSnapshot] | None:
        leases = snapshot["leases"]
        for name in sorted(leases):
            if self.matches(name):
                return name, leases[name]
        return None

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        now = snapshot["now_ts"]
        chosen = self.selected_lease(snapshot)
        summary = self.query_one("#lease-summary", Static)
        details = self.query_one("#lease-details", Static)
        sparkline = self.query_one("#renew-sparkline", Sparkline)
        if chosen is None:
            summary.update(Text("no lease seen yet", style="dim"))
            details.update("")
            sparkline.data = []
            return
        name, lease = chosen
        summary.update(self.summary(name, lease, now, len(snapshot["leases"])))
        sparkline.data = [float(r["latency_ms"]) for r in lease["renew_history"]]
        details.update(self.details(lease))

    def summary(self, name: str, lease: LeaseSnapshot, now: int, n_leases: int) -> Group:
        changes = lease["changes_last_hour"]
        head = Text()
        head.append(f"Lease {name}", style="bold")
        if n_leases > 1:
            head.append(f"  (1 of {n_leases}; / to pick)", style="dim")
        head.append("   holder ")
        head.append(lease["holder"] or "-", style="bold green")
        head.append(f"   transitions {lease['transitions']}")
        head.append(f"   changes seen {lease['changes']} ({changes} in the last hour)")
        parts: list[Any] = [head]
        if lease["strategy"] or lease["preferred_holder"]:
            coordinated = Text(f" coordinated ({lease['strategy'] or 'no strategy'})")
            if lease["preferred_holder"]:
                coordinated.append("   preferred holder ")
                coordinated.append(lease["preferred_holder"], style="bold yellow")
                coordinated.append(": the holder is stepping down", style="yellow")
            parts.append(coordinated)
        if changes > FLAP_THRESHOLD:
            parts.append(
                Text(
                    f" FLAPPING: {changes} holder changes in the last hour "
                    f"(threshold {FLAP_THRESHOLD}) ",
                    style="bold white on red",
                )
            )
        parts.append(lease_gauge(lease, now))
        if assumes_defaults(lease):
            parts.append(Text(ASSUMED_NOTE, style="dim"))
        parts.append(Text(""))
        parts.append(timeline(lease, now))
        return Group(*parts)

    def details(self, lease: LeaseSnapshot) -> Group:
        latency = lease["renew_latency"]
        stats = Text(
            f"renews {latency['count']}  p50 {fmt.ms(fmt.hist(latency, 'p50'))}  "
            f"p99 {fmt.ms(fmt.hist(latency, 'p99'))}  max {fmt.ms(fmt.hist(latency, 'max'))}   "
            f"skew {lease['skew_ms']:+.0f}ms "
            f"(max |{lease['max_abs_skew_ms']:.0f}|ms)"
        )
        failures = Table(title="renew failures", title_justify="left", box=None)
        failures.add_column("reason")
        failures.add_column("count", justify="right")
        for reason, n in sorted(lease["failures"].items(), key=lambda kv: -kv[1]):
            failures.add_row(Text(reason, style="red"), str(n))
        if not lease["failures"]:
            failures.add_row(Text("none", style="dim"), "")
        holders = Table(title="holders", title_justify="left", box=None)
        for column in ("identity", "renews", "failures", "last latency", "max latency"):
            holders.add_column(column, justify="left" if column == "identity" else "right")
        for identity, h in sorted(lease["holders"].items()):
            holders.add_row(
                identity,
                str(h["renews"]),
                str(h["failures"]),
                fmt.ms(h["last_latency_ms"]),
                fmt.ms(h["max_latency_ms"]),
            )
        candidates = candidates_table(lease)
        if candidates is None:
            return Group(stats, Text(""), failures, Text(""), holders)
        return Group(stats, Text(""), failures, Text(""), holders, Text(""), candidates)
