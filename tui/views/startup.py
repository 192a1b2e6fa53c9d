"""Start-up: each replica's waterfall of start-up steps, offset from its first step."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from pycm.trace.state import InstanceSnapshot, Snapshot
from tui import format as fmt
from tui.feed import Feed
from tui.views.base import View

__all__ = ["StartupView", "waterfall"]

BAR_WIDTH = 50


def waterfall(inst: InstanceSnapshot, now_ts: int, width: int = BAR_WIDTH) -> Table:
    steps = sorted(inst["steps"].items(), key=lambda kv: (kv[1]["start_ts"], kv[0]))
    table = Table(box=None, expand=False)
    table.add_column("step", no_wrap=True)
    table.add_column("start", justify="right")
    table.add_column("duration", justify="right")
    table.add_column("", no_wrap=True)
    if not steps:
        return table
    t0 = min(s["start_ts"] for _, s in steps)
    ends = [
        s["start_ts"] + (s["dur_ns"] if s["outcome"] else max(0, now_ts - s["start_ts"]))
        for _, s in steps
    ]
    span = max(1, max(ends) - t0)
    for (name, s), end in zip(steps, ends, strict=True):
        start = s["start_ts"]
        a = int((start - t0) / span * width)
        b = max(a + 1, int((end - t0) / span * width))
        outcome = s["outcome"]
        style = {"ok": "green", "": "yellow"}.get(outcome, "red")
        text = Text(" " * a)
        text.append("█" * (b - a), style=style)
        if not outcome:
            text.append(" running", style="yellow")
        elif outcome != "ok":
            text.append(f" {outcome} {s['error'][:40]}", style="red")
        dur = s["dur_ns"] if outcome else end - start
        table.add_row(name, fmt.ms((start - t0) / 1e6), fmt.dur_ns(dur), text)
    return table


class StartupView(View):
    DEFAULT_CSS = """
    StartupView VerticalScroll { height: 1fr; }
    StartupView #waterfall { height: auto; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="waterfall")

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        now = snapshot["now_ts"]
        parts: list[Any] = []
        for name, inst in sorted(snapshot["instances"].items()):
            if not name or not self.matches(name) or not inst["steps"]:
                continue
            head = Text(f"{name}", style="bold")
            head.append(f"  {inst['command']} {inst['version']}".rstrip(), style="dim")
            parts += [head, waterfall(inst, now), Text("")]
        if not parts:
            parts = [Text("no start-up steps seen", style="dim")]
        self.query_one("#waterfall", Static).update(Group(*parts))
