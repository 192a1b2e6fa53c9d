"""Overview: every replica (role, lease gauge, transitions, informers synced) and every
controller's queue and reconcile figures, at a glance."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from tui import format as fmt
from tui.feed import Feed
from tui.views.base import LeaseTiming, View

__all__ = ["OverviewView", "lease_gauge"]

GAUGE_WIDTH = 20
_KCM = LeaseTiming()


def lease_gauge(lease: dict[str, Any], now_ts: int, timing: LeaseTiming = _KCM) -> Text:
    """Time since the holder's last renew, against the renew deadline (│) and lease duration
    (the observed one when a LeaderObserved carried it, else ``timing``'s, marked ``*``)."""
    holder = lease.get("holder", "")
    rec = lease.get("holders", {}).get(holder, {})
    last = rec.get("last_renew_ts", 0)
    if not last:
        history = lease.get("history") or []
        last = history[-1]["ts"] if history else 0
    duration = lease.get("lease_duration_s") or timing.lease_duration
    deadline = min(timing.renew_deadline, duration)
    if not holder or not last:
        return Text("no renew seen", style="dim")
    since = max(0, now_ts - last) / 1e9
    style = "green" if since < deadline / 2 else "yellow" if since < deadline else "red"
    mark = min(GAUGE_WIDTH - 1, int(deadline / duration * GAUGE_WIDTH))
    text = fmt.bar(since / duration, GAUGE_WIDTH, style=style, marks={mark: "│"})
    known = "" if lease.get("lease_duration_s") else "*"
    text.append(f" {since:.1f}s / {deadline:g}s renew / {duration:g}s{known} lease", style=style)
    return text


class OverviewView(View):
    DEFAULT_CSS = """
    OverviewView #overview-replicas { height: auto; margin-bottom: 1; }
    OverviewView #overview-controllers { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="overview-replicas")
        yield Static(id="overview-controllers")

    def show(self, snapshot: dict[str, Any], feed: Feed) -> None:
        self.query_one("#overview-replicas", Static).update(self.replicas(snapshot))
        self.query_one("#overview-controllers", Static).update(self.controllers(snapshot))

    def replicas(self, snapshot: dict[str, Any]) -> Table:
        now = snapshot.get("now_ts", 0)
        leases = snapshot.get("leases", {})
        table = Table(title="Replicas", title_justify="left", expand=True, box=None)
        for column in (
            "replica",
            "role",
            "lease",
            "renew (since / deadline / duration)",
            "transitions",
            "informers synced",
            "last event",
        ):
            table.add_column(column)
        for name, inst in sorted(snapshot.get("instances", {}).items()):
            if not name or not self.matches(name):
                continue
            lease = leases.get(inst.get("lease", ""), {})
            gauge = (
                lease_gauge(lease, now, self.timing)
                if inst.get("role") == "leader"
                else Text(f"holder {lease.get('holder') or '-'}", style="dim")
            )
            informers = snapshot.get("informers", {}).get(name, {})
            synced = sum(1 for i in informers.values() if i.get("synced"))
            synced_text = Text(
                f"{synced}/{len(informers)}",
                style="green" if informers and synced == len(informers) else "yellow",
            )
            table.add_row(
                name,
                fmt.role_text(inst.get("role", "unknown")),
                inst.get("lease") or "-",
                gauge,
                str(lease.get("transitions", 0)) if lease else "-",
                synced_text,
                fmt.since_ns(now, inst.get("last_ts", 0)),
            )
        return table

    def controllers(self, snapshot: dict[str, Any]) -> Group:
        table = Table(title="Controllers", title_justify="left", expand=True, box=None)
        for column in (
            "replica",
            "controller",
            "queue depth",
            "adds/s",
            "syncs/s",
            "p50",
            "p99",
            "errors",
            "retries",
            "in flight",
            "longest running",
        ):
            table.add_column(
                column, justify="left" if column in ("replica", "controller") else "right"
            )
        queues = snapshot.get("queues", {})
        for instance, controllers in sorted(snapshot.get("controllers", {}).items()):
            for name, c in sorted(controllers.items()):
                if not self.matches(instance, name):
                    continue
                q = queues.get(instance, {}).get(name, {})
                depth = q.get("depth", 0)
                table.add_row(
                    instance,
                    name,
                    Text(str(depth), style="yellow" if depth > 100 else ""),
                    fmt.rate(q.get("adds_per_s", 0.0)),
                    fmt.rate(c.get("reconciles_per_s", 0.0)),
                    fmt.ms(fmt.hist(c.get("latency"), "p50")),
                    fmt.ms(fmt.hist(c.get("latency"), "p99")),
                    Text(str(c.get("errors", 0)), style="red" if c.get("errors") else ""),
                    str(q.get("retries", 0)),
                    str(c.get("in_flight", 0)),
                    fmt.dur_ns(c.get("longest_running_ns", 0)),
                )
        counters = snapshot.get("counters", {})
        foot = Text(
            f"events {counters.get('applied', 0):,}  lost {counters.get('lost', 0):,}  "
            f"unknown kinds {sum(counters.get('unknown', {}).values()):,}  "
            f"malformed {counters.get('malformed', 0):,}",
            style="dim",
        )
        return Group(table, Text(""), foot)
