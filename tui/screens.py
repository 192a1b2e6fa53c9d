"""Screens above the tabs: one controller's keys (drill-in) and the key help."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from pycm.trace.state import ControllerSnapshot, KeySnapshot, Snapshot
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
Why did it run: enter on an event, in a controller's keys, or after a [b]key:[/b] filter opens
the object's history and chain of causes
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


def key_table(title: str, keys: list[KeySnapshot]) -> Table:
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
            k["key"],
            fmt.dur_ns(k["dur_ns"]),
            Text(k["result"], style="red" if k["result"] not in ("success", "") else ""),
            k["action"] or "-",
            str(k["retries"]),
            str(k["api_calls"]),
            str(k["count"]),
            (k["error"] or "-")[:50],
            k["trace_id"] or "-",
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
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("c", "copy", "Copy trace id"),
        Binding("enter", "open_key", "Why (the key's object)"),
    ]

    class KeyRequested(Message):
        """Open the object of ``key`` (its history and chain of causes)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, instance: str, controller: str) -> None:
        super().__init__()
        self.instance = instance
        self.controller = controller
        self.record: ControllerSnapshot | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="keys")
        yield Footer()

    def show(self, snapshot: Snapshot) -> None:
        rec = snapshot["controllers"].get(self.instance, {}).get(self.controller)
        keys = self.query_one("#keys", Static)
        if rec is None:
            keys.update(Text(f"{self.instance}/{self.controller}: not seen", style="dim"))
            return
        self.record = rec
        head = Text(f"{self.controller} on {self.instance}", style="bold")
        head.append(
            f"   reconciles {rec['reconciles']:,}  errors {rec['errors']:,}  "
            f"p50 {fmt.ms(fmt.hist(rec['latency'], 'p50'))}  "
            f"p99 {fmt.ms(fmt.hist(rec['latency'], 'p99'))}"
        )
        slowest = sorted(rec["slowest"], key=lambda k: -k["dur_ns"])[:20]
        failing = list(reversed(rec["failing"]))[:20]
        keys.update(
            Group(
                head,
                Text(""),
                key_table("slowest keys", slowest),
                Text(""),
                key_table("failing keys (newest first)", failing),
            )
        )

    def _picked(self) -> KeySnapshot | None:
        """The key ``c`` and enter act on: the newest failure, else the slowest."""
        if self.record is None:
            return None
        failing = self.record["failing"]
        slowest = sorted(self.record["slowest"], key=lambda k: -k["dur_ns"])
        return failing[-1] if failing else (slowest[0] if slowest else None)

    def action_open_key(self) -> None:
        pick = self._picked()
        if pick is not None:
            self.post_message(self.KeyRequested(pick["key"]))

    def action_copy(self) -> None:
        if self.record is None:
            return
        failing = self.record["failing"]
        slowest = sorted(self.record["slowest"], key=lambda k: -k["dur_ns"])
        pick = failing[-1] if failing else (slowest[0] if slowest else None)
        if pick and pick["trace_id"]:
            self.app.copy_to_clipboard(pick["trace_id"])
            self.notify(f"copied trace id {pick['trace_id']}")
