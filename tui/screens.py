"""Screens above the tabs: one controller's keys (drill-in) and the key help."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from tui import format as fmt

__all__ = ["HELP", "ControllerScreen", "HelpScreen"]

HELP = """\
[b]pycm top[/b] — keys

  ?            this help               q / ctrl+c   quit
  tab          next view               shift+tab    previous view
  1-6          go to a view            p            pause / resume refreshing
  /            filter the view         esc          back (close, clear the filter)
  enter        drill into a row        s            sort (Controllers), or click a header
  f            follow / hold (Events)  c            copy the trace id (Events, keys)
  space        play / pause (replay)   + / -        replay speed
  [ / ]        seek -10 s / +10 s (replay)

Events filter: [b]kind:lease.*[/b]  [b]key:default/web[/b]  [b]instance:pycm-0[/b]  free text
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: 80; height: auto; border: round $primary; padding: 1 2;
                          background: $surface; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help-text")


def key_table(title: str, keys: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", expand=True, box=None)
    for column in (
        "key",
        "duration",
        "result",
        "action",
        "retries",
        "api calls",
        "count",
        "error",
        "trace id",
    ):
        table.add_column(column, no_wrap=column in ("key", "trace id"))
    for k in keys:
        table.add_row(
            k.get("key", ""),
            fmt.dur_ns(k.get("dur_ns", 0)),
            Text(
                k.get("result", ""), style="red" if k.get("result") not in ("success", "") else ""
            ),
            k.get("action", "") or "-",
            str(k.get("retries", 0)),
            str(k.get("api_calls", 0)),
            str(k.get("count", 1)),
            (k.get("error", "") or "-")[:50],
            k.get("trace_id", "") or "-",
        )
    if not keys:
        table.add_row(Text("none", style="dim"), *[""] * 8)
    return table


class ControllerScreen(Screen[None]):
    """The slowest and failing keys of one controller, live. ``c`` copies the trace id of the
    slowest key (or, if any, the most recent failure)."""

    DEFAULT_CSS = """
    ControllerScreen #keys { height: auto; }
    """
    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("c", "copy", "Copy trace id")]

    def __init__(self, instance: str, controller: str) -> None:
        super().__init__()
        self.instance = instance
        self.controller = controller
        self.record: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="keys")
        yield Footer()

    def show(self, snapshot: dict[str, Any]) -> None:
        rec = snapshot.get("controllers", {}).get(self.instance, {}).get(self.controller)
        keys = self.query_one("#keys", Static)
        if rec is None:
            keys.update(Text(f"{self.instance}/{self.controller}: not seen", style="dim"))
            return
        self.record = rec
        head = Text(f"{self.controller} on {self.instance}", style="bold")
        head.append(
            f"   reconciles {rec.get('reconciles', 0):,}  errors {rec.get('errors', 0):,}  "
            f"p50 {fmt.ms(fmt.hist(rec.get('latency'), 'p50'))}  "
            f"p99 {fmt.ms(fmt.hist(rec.get('latency'), 'p99'))}"
        )
        slowest = sorted(rec.get("slowest", []), key=lambda k: -k.get("dur_ns", 0))[:20]
        failing = list(reversed(rec.get("failing", [])))[:20]
        keys.update(
            Group(
                head,
                Text(""),
                key_table("slowest keys", slowest),
                Text(""),
                key_table("failing keys (newest first)", failing),
            )
        )

    def action_copy(self) -> None:
        failing = self.record.get("failing") or []
        slowest = sorted(self.record.get("slowest", []), key=lambda k: -k.get("dur_ns", 0))
        pick = failing[-1] if failing else (slowest[0] if slowest else None)
        if pick and pick.get("trace_id"):
            self.app.copy_to_clipboard(pick["trace_id"])
            self.notify(f"copied trace id {pick['trace_id']}")
