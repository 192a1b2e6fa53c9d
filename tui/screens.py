"""Screens above the tabs: one controller's keys (drill-in: what its queue holds now, its
slowest and failing keys) and the key help."""

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
from pycm.trace.state.queue_contents import QueueContentsSnapshot
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


QUEUE_KEYS = 15  # keys listed per section of the queue's contents


def _section(title: str, count: int, shown: int) -> str:
    more = f", {shown} shown" if shown < count else ""
    return f"{title} ({count}{more})"


def queue_tables(contents: QueueContentsSnapshot | None) -> Group:
    """What a queue holds now: the keys processing, backing off and waiting."""
    if contents is None:
        return Group(Text("queue: no events seen", style="dim"))
    processing = contents["processing"][:QUEUE_KEYS]
    held = Table(
        title=_section("processing", contents["processing_count"], len(processing)),
        title_justify="left",
        expand=True,
        box=None,
    )
    for column in ("key", "for", "worker"):
        held.add_column(column, no_wrap=column == "key")
    stuck = contents.get("stuck", {})
    for p in processing:
        marked = p.get("stuck", False)
        worker = stuck.get(p["key"])
        held.add_row(
            Text(p["key"], style="bold red" if marked else ""),
            Text(fmt.ms(p["for_ms"]) + (" STUCK" if marked else ""), style="red" if marked else ""),
            "-" if worker is None or worker < 0 else str(worker),
        )
    backing = contents["backing_off"][:QUEUE_KEYS]
    back = Table(
        title=_section("backing off", contents["backing_off_count"], len(backing)),
        title_justify="left",
        expand=True,
        box=None,
    )
    for column in ("key", "retries", "next retry", "last error"):
        back.add_column(column, no_wrap=column == "key")
    for b in backing:
        due = b["due_in_ms"]
        back.add_row(
            b["key"],
            str(b["retries"]),
            f"in {fmt.ms(due)}" if due > 0 else "due",
            Text((b["last_error"] or "-")[:60], style="red" if b["last_error"] else "dim"),
        )
    waiting = contents["waiting"][:QUEUE_KEYS]
    wait = Table(
        title=_section("waiting", contents["waiting_count"], len(waiting)),
        title_justify="left",
        expand=True,
        box=None,
    )
    for column in ("key", "waiting for"):
        wait.add_column(column, no_wrap=column == "key")
    for w in waiting:
        wait.add_row(w["key"], fmt.ms(w["age_ms"]))
    for table, rows in ((held, processing), (back, backing), (wait, waiting)):
        if not rows:
            table.add_row(Text("none", style="dim"), *[""] * (len(table.columns) - 1))
    return Group(held, Text(""), back, Text(""), wait)


class ControllerScreen(Screen[None]):
    """One controller, live: what its queue holds now (keys processing, backing off with their
    retries, next retry and last error, waiting), its slowest and its failing keys. ``c`` copies
    the trace id of the slowest key (or, if any, the most recent failure)."""

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
        queue = snapshot["queues"].get(self.instance, {}).get(self.controller)
        contents = queue.get("contents") if queue is not None else None
        keys.update(
            Group(
                head,
                Text(""),
                Text("queue now", style="bold"),
                queue_tables(contents),
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
