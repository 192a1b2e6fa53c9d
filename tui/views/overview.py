"""Overview: every replica (role, lease gauge, transitions, informers synced) and every
controller's queue and reconcile figures, at a glance."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from pycm.trace.state import LeaseSnapshot, Snapshot
from pycm.util.leasetiming import KUBE_DEFAULTS
from tui import format as fmt
from tui.feed import Feed
from tui.views.base import View

__all__ = ["ASSUMED_NOTE", "OverviewView", "assumes_defaults", "lease_gauge"]

GAUGE_WIDTH = 20
ASSUMED_NOTE = (
    "* Kubernetes' default: the trace does not say what this lease's electors run with "
    "(a recording older than lease.election_configured, or a lease pycm only watches)"
)


def assumes_defaults(lease: LeaseSnapshot | None) -> bool:
    """Whether the gauge of ``lease`` shows a timing the trace does not carry."""
    return lease is not None and not (lease["renew_deadline_s"] and lease["lease_duration_s"])


def lease_gauge(lease: LeaseSnapshot | None, now_ts: int) -> Text:
    """Time since the holder's last renew, against the renew deadline (│) and lease duration
    its electors run with (``lease.election_configured``; the duration also as observed on the
    Lease): a timing the trace lacks is Kubernetes' default, marked ``*`` (:data:`ASSUMED_NOTE`
    says why)."""
    if lease is None:
        return Text("no renew seen", style="dim")
    holder = lease["holder"]
    rec = lease["holders"].get(holder)
    last = rec["last_renew_ts"] if rec is not None else 0
    if not last:
        history = lease["history"]
        last = history[-1]["ts"] if history else 0
    duration = lease["lease_duration_s"] or KUBE_DEFAULTS.lease_duration
    deadline = min(lease["renew_deadline_s"] or KUBE_DEFAULTS.renew_deadline, duration)
    if not holder or not last:
        return Text("no renew seen", style="dim")
    since = max(0, now_ts - last) / 1e9
    style = "green" if since < deadline / 2 else "yellow" if since < deadline else "red"
    mark = min(GAUGE_WIDTH - 1, int(deadline / duration * GAUGE_WIDTH))
    text = fmt.bar(since / duration, GAUGE_WIDTH, style=style, marks={mark: "│"})
    deadline_mark = "" if lease["renew_deadline_s"] else "*"
    duration_mark = "" if lease["lease_duration_s"] else "*"
    text.append(
        f" {since:.1f}s / {deadline:g}s{deadline_mark} renew / {duration:g}s{duration_mark} lease",
        style=style,
    )
    return text


class OverviewView(View):
    DEFAULT_CSS = """
    OverviewView #overview-replicas { height: auto; margin-bottom: 1; }
    OverviewView #overview-controllers { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="overview-replicas")
        yield Static(id="overview-controllers")

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        self.query_one("#overview-replicas", Static).update(self.replicas(snapshot))
        self.query_one("#overview-controllers", Static).update(self.controllers(snapshot))

    def replicas(self, snapshot: Snapshot) -> Table:
        now = snapshot["now_ts"]
        leases = snapshot["leases"]
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
        assumed = False
        for name, inst in sorted(snapshot["instances"].items()):
            if not name or not self.matches(name):
                continue
            lease = leases.get(inst["lease"])
            if inst["role"] == "leader":
                gauge = lease_gauge(lease, now)
                assumed = assumed or assumes_defaults(lease)
            else:
                gauge = Text(f"holder {(lease['holder'] if lease else '') or '-'}", style="dim")
            informers = snapshot["informers"].get(name, {})
            synced = sum(1 for i in informers.values() if i["synced"])
            synced_text = Text(
                f"{synced}/{len(informers)}",
                style="green" if informers and synced == len(informers) else "yellow",
            )
            table.add_row(
                name,
                fmt.role_text(inst["role"]),
                inst["lease"] or "-",
                gauge,
                str(lease["transitions"]) if lease else "-",
                synced_text,
                fmt.since_ns(now, inst["last_ts"]),
            )
        if assumed:
            table.caption = ASSUMED_NOTE
            table.caption_justify = "left"
        return table

    def controllers(self, snapshot: Snapshot) -> Group:
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
        queues = snapshot["queues"]
        for instance, controllers in sorted(snapshot["controllers"].items()):
            for name, c in sorted(controllers.items()):
                if not self.matches(instance, name):
                    continue
                if c["disabled"]:
                    # Not started: no numbers at all, rather than zeros that read as idle.
                    reason = f"disabled ({c['disabled_reason']})" if c["disabled_reason"] else ""
                    table.add_row(instance, name, Text(reason or "disabled", style="dim"))
                    continue
                q = queues.get(instance, {}).get(name)
                depth = q["depth"] if q else 0
                table.add_row(
                    instance,
                    name,
                    Text(str(depth), style="yellow" if depth > 100 else ""),
                    fmt.rate(q["adds_per_s"] if q else 0.0),
                    fmt.rate(c["reconciles_per_s"]),
                    fmt.ms(fmt.hist(c["latency"], "p50")),
                    fmt.ms(fmt.hist(c["latency"], "p99")),
                    Text(str(c["errors"]), style="red" if c["errors"] else ""),
                    str(q["retries"] if q else 0),
                    str(c["in_flight"]),
                    fmt.dur_ns(c["longest_running_ns"]),
                )
        counters = snapshot["counters"]
        foot = Text(
            f"events {counters['applied']:,}  lost {counters['lost']:,}  "
            f"unknown kinds {sum(counters['unknown'].values()):,}  "
            f"malformed {counters['malformed']:,}",
            style="dim",
        )
        return Group(table, Text(""), foot)
