"""Informers: per replica and resource: synced, objects, events/s, backlog, last RV, relists,
errors."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult

from pycm.trace.state import Snapshot
from tui.feed import Feed
from tui.views.base import View
from tui.views.table import LiveTable

__all__ = ["COLUMNS", "InformersView"]

COLUMNS = (
    "replica",
    "resource",
    "synced",
    "objects",
    "events/s",
    "backlog",
    "last RV",
    "lists",
    "relists",
    "watch opens",
    "backoffs",
    "last error",
)


class InformersView(View):
    """The objects, the watch's events/s and the backlog are the state's, kept live by the
    informers' progress reports (``informer.progress``) while a watch is open."""

    DEFAULT_CSS = """
    InformersView LiveTable { height: 1fr; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last: tuple[Snapshot, Feed] | None = None

    def compose(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="informers-table")

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        self._last = (snapshot, feed)
        rows = []
        for instance, informers in snapshot["informers"].items():
            for resource, i in informers.items():
                if not self.matches(instance, resource):
                    continue
                key = f"{instance}\0{resource}"
                rate = i["watch_events_per_s"]
                synced = i["synced"]
                error = i["last_error"]
                cells = (
                    instance,
                    resource,
                    Text("yes", style="green") if synced else Text("no", style="yellow"),
                    f"{i['objects']:,}",
                    f"{rate:.1f}",
                    f"{i['pending']:,}",
                    i["resource_version"] or "-",
                    str(i["lists"]),
                    str(i["relists"]),
                    str(i["watch_opens"]),
                    str(i["backoffs"]),
                    Text(error[:60], style="red") if error else "-",
                )
                sort = (
                    instance,
                    resource,
                    synced,
                    i["objects"],
                    rate,
                    i["pending"],
                    i["resource_version"],
                    i["lists"],
                    i["relists"],
                    i["watch_opens"],
                    i["backoffs"],
                    error,
                )
                rows.append((key, cells, sort))
        rows.sort(key=lambda r: r[0])
        self.query_one(LiveTable).refill(rows)

    def on_live_table_resorted(self, event: LiveTable.Resorted) -> None:
        if self._last is not None:
            self.show(*self._last)
