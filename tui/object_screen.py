"""The Object screen: one object's chain of causes and history (``pycm top``'s "why").

Opened by enter on an event that names an object (a reconcile, a write, a core/v1 Event, a
queue key) in the Events view — so also after a ``key:namespace/name`` filter there: enter
submits it, a second enter opens the highlighted event's object; by enter on any key of a
controller's drill-down (:class:`tui.screens.ControllerScreen`); by ``/key:namespace/name``
enter in any other view. Read from the viewer's own state
(:func:`pycm.trace.why.object_report`): the steps of the events this viewer has seen, the ring's
backfill included. ``c`` copies the trace id of the newest reconcile in the chain.
"""

from __future__ import annotations

import datetime as dt

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from pycm.trace.objref import ObjectRef
from pycm.trace.state import State
from pycm.trace.why import ObjectReport, object_report, step_text

__all__ = ["ObjectScreen"]

_STEP_STYLE = {"watch": "cyan", "reconcile": "bold", "write": "green", "event": "magenta"}


def _clock(ts: int) -> str:
    at = dt.datetime.fromtimestamp(ts / 1e9, tz=dt.UTC)
    return at.strftime("%H:%M:%S.%f")[:-3]


class ObjectScreen(Screen[None]):
    """One object's chain of causes (why its newest step ran) and its last steps, live."""

    DEFAULT_CSS = """
    ObjectScreen #object { height: auto; }
    """
    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("c", "copy", "Copy trace id")]

    def __init__(self, ref: ObjectRef) -> None:
        super().__init__()
        self.ref = ref
        self.report: ObjectReport | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="object")
        yield Footer()

    def show(self, state: State) -> None:
        self.report = report = object_report(state, self.ref)
        head = Text(str(self.ref), style="bold")
        head.append(f"   {len(report['steps'])} steps", style="dim")
        if report["dropped"]:
            head.append(f", {report['dropped']} older dropped", style="dim")
        why = Text()
        if not report["chain"]:
            why.append("no step of it seen yet", style="dim")
        for depth, link in enumerate(report["chain"]):
            style = "bold" if depth == 0 else ("yellow" if link["what"] == "writer" else "")
            why.append("  " * depth + link["text"] + "\n", style=style)
        table = Table(title="history (UTC)", title_justify="left", expand=True, box=None)
        table.add_column("time", no_wrap=True)
        table.add_column("instance", no_wrap=True)
        table.add_column("step")
        for step in reversed(report["steps"]):
            table.add_row(
                _clock(step["ts"]),
                step["instance"],
                Text(step_text(step), style=_STEP_STYLE.get(step["step"], "")),
            )
        self.query_one("#object", Static).update(
            Group(head, Text(""), Text("why", style="underline"), why, table)
        )

    def action_copy(self) -> None:
        chain = self.report["chain"] if self.report is not None else []
        trace = next((link["trace_id"] for link in chain if link["trace_id"]), "")
        if trace:
            self.app.copy_to_clipboard(trace)
            self.notify(f"copied trace id {trace}")
