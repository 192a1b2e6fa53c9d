"""Controllers: a sortable table of every controller of every replica; ``enter`` drills in."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from pycm.trace.state import Snapshot
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
        self._last: tuple[Snapshot, Feed] | None = None

    def compose(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="controllers-table")
        yield Static(
            "enter: keys of the controller  s / click a header: sort", id="controllers-hint"
        )

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        self._last = (snapshot, feed)
        rows = []
        queues = snapshot["queues"]
        for instance, controllers in snapshot["controllers"].items():
            for name, c in controllers.items():
                if not self.matches(instance, name):
                    continue
                if c["disabled"]:
                    # Not started: said so, rather than zeros that read as an idle controller
                    # (sorted after the running ones).
                    reason = f"disabled ({c['disabled_reason']})" if c["disabled_reason"] else ""
                    cells_off = (instance, name, reason or "disabled", *("-",) * 9)
                    sort_off = (instance, name, -1, -1.0, 0.0, 0.0, 0.0, -1, -1, -1, -1, -1)
                    rows.append((f"{instance}\0{name}", cells_off, sort_off))
                    continue
                q = queues.get(instance, {}).get(name)
                retries, depth = (q["retries"], q["depth"]) if q else (0, 0)
                lat = c["latency"]
                p50, p90, p99 = (fmt.hist(lat, p) for p in ("p50", "p90", "p99"))
                sort = (
                    instance,
                    name,
                    c["reconciles"],
                    c["reconciles_per_s"],
                    p50 or 0.0,
                    p90 or 0.0,
                    p99 or 0.0,
                    c["errors"],
                    retries,
                    depth,
                    c["in_flight"],
                    c["longest_running_ns"],
                )
                cells = (
                    instance,
                    name,
                    fmt.count(c["reconciles"]),
                    fmt.rate(c["reconciles_per_s"]),
                    fmt.ms(p50),
                    fmt.ms(p90),
                    fmt.ms(p99),
                    str(c["errors"]),
                    str(retries),
                    str(depth),
                    str(c["in_flight"]),
                    fmt.dur_ns(c["longest_running_ns"]),
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
