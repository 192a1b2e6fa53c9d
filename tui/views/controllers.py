"""Controllers: a sortable table of every controller of every replica; ``enter`` drills in."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from tui import format as fmt
from tui.feed import Feed
from tui.views.base import View
from tui.views.table import LiveTable

__all__ = ["COLUMNS", "ControllersView"]

COLUMNS = (
    "replica",
    "controller",
    "reconciles",
    "syncs/s",
    "p50",
    "p90",
    "p99",
    "errors",
    "requeues",
    "depth",
    "in flight",
    "longest",
)


class ControllersView(View):
    DEFAULT_CSS = """
    ControllersView LiveTable { height: 1fr; }
    ControllersView #controllers-hint { height: 1; color: $text-muted; }
    """
    BINDINGS = [Binding("s", "sort", "Sort")]

    class DrillRequested(Message):
        """The user asked for one controller's keys."""

        def __init__(self, instance: str, controller: str) -> None:
            super().__init__()
            self.instance = instance
            self.controller = controller

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last: tuple[dict[str, Any], Feed] | None = None

    def compose(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="controllers-table")
        yield Static(
            "enter: keys of the controller  s / click a header: sort", id="controllers-hint"
        )

    def show(self, snapshot: dict[str, Any], feed: Feed) -> None:
        self._last = (snapshot, feed)
        rows = []
        queues = snapshot.get("queues", {})
        for instance, controllers in snapshot.get("controllers", {}).items():
            for name, c in controllers.items():
                if not self.matches(instance, name):
                    continue
                q = queues.get(instance, {}).get(name, {})
                lat = c.get("latency")
                p50, p90, p99 = (fmt.hist(lat, p) for p in ("p50", "p90", "p99"))
                sort = (
                    instance,
                    name,
                    c.get("reconciles", 0),
                    c.get("reconciles_per_s", 0.0),
                    p50 or 0.0,
                    p90 or 0.0,
                    p99 or 0.0,
                    c.get("errors", 0),
                    q.get("retries", 0),
                    q.get("depth", 0),
                    c.get("in_flight", 0),
                    c.get("longest_running_ns", 0),
                )
                cells = (
                    instance,
                    name,
                    fmt.count(c.get("reconciles", 0)),
                    fmt.rate(c.get("reconciles_per_s", 0.0)),
                    fmt.ms(p50),
                    fmt.ms(p90),
                    fmt.ms(p99),
                    str(c.get("errors", 0)),
                    str(q.get("retries", 0)),
                    str(q.get("depth", 0)),
                    str(c.get("in_flight", 0)),
                    fmt.dur_ns(c.get("longest_running_ns", 0)),
                )
                rows.append((f"{instance}\0{name}", cells, sort))
        rows.sort(key=lambda r: r[0])
        self.query_one(LiveTable).refill(rows)

    def action_sort(self) -> None:
        self.query_one(LiveTable).cycle_sort()

    def on_live_table_resorted(self, event: LiveTable.Resorted) -> None:
        if self._last is not None:
            self.show(*self._last)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value or ""
        instance, _, controller = key.partition("\0")
        self.post_message(self.DrillRequested(instance, controller))
