"""Screens above the tabs: one controller's keys (drill-in: what its queue holds now, its
slowest and failing keys) and the key help."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from pycm.trace.state import ControllerSnapshot, KeySnapshot, Snapshot
from pycm.trace.state.queue_contents import QueueContentsSnapshot
from tui import format as fmt
from tui.keys_table import BLANK, KeyRow, KeysTable, section

__all__ = ["HELP", "ControllerScreen", "HelpScreen"]

HELP = """\
[b]pycm top[/b] — keys

  ?          this help              q / ctrl+c  quit
  tab        next view              shift+tab   previous view
  1-7        go to a view           p           pause / resume refreshing
  /          filter the view        esc         back, clear the filter
  up / down  move the cursor        enter       drill in; why (below)
  s          sort (Controllers), or click a header
  f          follow / hold (Events; moving off the newest holds too)
  c          copy the highlighted row's trace id (Events, keys)
  space      play / pause (replay)  + / -       replay speed
  [ / ]      seek -10 s / +10 s (replay)

Events filter: [b]kind:lease.*[/b]  [b]key:default/web[/b]  [b]instance:pycm-0[/b]  free text

Why did it run: enter opens an object's history and chain of causes —
  on any event of the Events view: the object it names;
  on any key of a controller's keys (Controllers, enter): processing,
    backing off, waiting, slowest or failing;
  after [b]/key:default/web[/b] enter in any view but Events (there it filters
    the key's events: enter on one of them).
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


KEY_COLUMNS = (
    "key",
    "duration",
    "result",
    "action",
    "retries",
    "api calls",
    "count",
    "error",
    "trace id",
)


def key_rows(keys: list[KeySnapshot]) -> list[KeyRow]:
    """A reconcile per key (the slowest, or the failing): its cells and its trace id."""
    return [
        KeyRow(
            (
                k["key"],
                fmt.dur_ns(k["dur_ns"]),
                Text(k["result"], style="red" if k["result"] not in ("success", "") else ""),
                k["action"] or "-",
                str(k["retries"]),
                str(k["api_calls"]),
                str(k["count"]),
                (k["error"] or "-")[:50],
                k["trace_id"] or "-",
            ),
            key=k["key"],
            trace_id=k["trace_id"],
        )
        for k in keys
    ]


QUEUE_KEYS = 15  # keys listed per section of the queue's contents
# The sections share the table's columns: a backing-off key's last error goes under the
# reconciles' "error", so that it widens that column, not their "action".
_UNDER_ERROR = ("",) * (KEY_COLUMNS.index("error") - 3)


def _title(title: str, count: int, shown: int) -> str:
    more = f", {shown} shown" if shown < count else ""
    return f"{title} ({count}{more})"


def queue_rows(contents: QueueContentsSnapshot | None) -> list[KeyRow]:
    """What a queue holds now: the keys processing, backing off and waiting."""
    if contents is None:
        return [KeyRow((Text("queue: no events seen", style="dim"),))]
    processing = contents["processing"][:QUEUE_KEYS]
    stuck = contents.get("stuck", {})
    held = []
    for p in processing:
        marked = p.get("stuck", False)
        worker = stuck.get(p["key"])
        cells: tuple[RenderableType, ...] = (
            Text(p["key"], style="bold red" if marked else ""),
            Text(fmt.ms(p["for_ms"]) + (" STUCK" if marked else ""), style="red" if marked else ""),
            "-" if worker is None or worker < 0 else str(worker),
        )
        held.append(KeyRow(cells, key=p["key"]))
    backing = contents["backing_off"][:QUEUE_KEYS]
    back = []
    for b in backing:
        due = b["due_in_ms"]
        cells = (
            b["key"],
            str(b["retries"]),
            f"in {fmt.ms(due)}" if due > 0 else "due",
            *_UNDER_ERROR,
            Text((b["last_error"] or "-")[:60], style="red" if b["last_error"] else "dim"),
        )
        back.append(KeyRow(cells, key=b["key"]))
    waiting = contents["waiting"][:QUEUE_KEYS]
    wait = [KeyRow((w["key"], fmt.ms(w["age_ms"])), key=w["key"]) for w in waiting]
    return [
        *section(
            "processing",
            _title("processing", contents["processing_count"], len(processing)),
            ("key", "for", "worker"),
            held,
        ),
        BLANK,
        *section(
            "backing off",
            _title("backing off", contents["backing_off_count"], len(backing)),
            ("key", "retries", "next retry", *_UNDER_ERROR, "last error"),
            back,
        ),
        BLANK,
        *section(
            "waiting",
            _title("waiting", contents["waiting_count"], len(waiting)),
            ("key", "waiting for"),
            wait,
        ),
    ]


class ControllerScreen(Screen[None]):
    """One controller, live: what its queue holds now (keys processing, backing off with their
    retries, next retry and last error, waiting), its slowest and its failing keys — every key
    a row under a cursor. Enter opens the highlighted key's object, ``c`` copies its trace id
    (slowest and failing keys have one). The cursor starts on the newest failure, else the
    slowest key, and stays on its key while the rows change."""

    DEFAULT_CSS = """
    ControllerScreen #keys-head { height: auto; padding: 0 1; }
    ControllerScreen #keys { height: 1fr; }
    """
    AUTO_FOCUS = "#keys"
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
        yield Static(id="keys-head")
        yield KeysTable(id="keys")
        yield Footer()

    def show(self, snapshot: Snapshot) -> None:
        rec = snapshot["controllers"].get(self.instance, {}).get(self.controller)
        head = self.query_one("#keys-head", Static)
        table = self.query_one("#keys", KeysTable)
        if rec is None:
            head.update(Text(f"{self.instance}/{self.controller}: not seen", style="dim"))
            table.update_rows([])
            return
        self.record = rec
        line = Text(f"{self.controller} on {self.instance}", style="bold")
        line.append(
            f"   reconciles {rec['reconciles']:,}  errors {rec['errors']:,}  "
            f"p50 {fmt.ms(fmt.hist(rec['latency'], 'p50'))}  "
            f"p99 {fmt.ms(fmt.hist(rec['latency'], 'p99'))}"
        )
        head.update(line)
        slowest = sorted(rec["slowest"], key=lambda k: -k["dur_ns"])[:20]
        failing = list(reversed(rec["failing"]))[:20]
        queue = snapshot["queues"].get(self.instance, {}).get(self.controller)
        contents = queue.get("contents") if queue is not None else None
        # Where the cursor starts: the newest failure, else the slowest key (what to look at).
        prefer = ("failing", failing[0]["key"]) if failing else ("", "")
        if not failing and slowest:
            prefer = ("slowest", slowest[0]["key"])
        table.update_rows(
            [
                KeyRow((Text("queue now", style="bold underline"),)),
                *queue_rows(contents),
                BLANK,
                *section("slowest", "slowest keys", KEY_COLUMNS, key_rows(slowest)),
                BLANK,
                *section("failing", "failing keys (newest first)", KEY_COLUMNS, key_rows(failing)),
            ],
            prefer=prefer,
        )

    def on_keys_table_key_selected(self, event: KeysTable.KeySelected) -> None:
        event.stop()
        self.post_message(self.KeyRequested(event.row.key))

    def action_open_key(self) -> None:
        row = self.query_one("#keys", KeysTable).highlighted
        if row is not None:
            self.post_message(self.KeyRequested(row.key))

    def action_copy(self) -> None:
        row = self.query_one("#keys", KeysTable).highlighted
        if row is None:
            self.notify("no key under the cursor", severity="warning")
        elif not row.trace_id:
            # Queue keys carry no trace: their reconciles are the slowest and failing rows.
            self.notify(f"{row.key}: no trace id in this row", severity="warning")
        else:
            self.app.copy_to_clipboard(row.trace_id)
            self.notify(f"copied trace id {row.trace_id}")
