"""Events: the live log of recent events; filter by kind, key or text; follow or hold (moving the
cursor off the newest event holds); select one to see all its attributes and its trace id (``c``
copies the trace id); enter opens the object it names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from pycm.trace import Event, to_dict
from pycm.trace.format import kind_of, summary
from pycm.trace.state import Snapshot
from tui.feed import Feed
from tui.views.base import View

__all__ = ["SHOWN", "EventsView", "event_filter", "key_term"]

SHOWN = 300  # rows listed: the newest matching events
_KEYED = ("key", "resource", "lease", "controller", "queue")


def key_term(text: str) -> str:
    """The key of a filter that is one ``key:`` term (``key:default/web`` -> ``default/web``),
    else ""."""
    terms = text.split()
    if len(terms) == 1 and terms[0].startswith("key:"):
        return terms[0].removeprefix("key:")
    return ""


def event_filter(text: str) -> Callable[[Event], bool]:
    """``kind:lease.*`` (a prefix with ``*``), ``key:ns/name``, ``instance:x``; other words must
    appear in the event's JSON. All terms must match."""
    kinds: list[str] = []
    keys: list[str] = []
    instances: list[str] = []
    words: list[str] = []
    for term in text.split():
        name, sep, value = term.partition(":")
        if sep and name == "kind":
            kinds.append(value)
        elif sep and name == "key":
            keys.append(value.lower())
        elif sep and name == "instance":
            instances.append(value.lower())
        else:
            words.append(term.lower())

    def accept(event: Event) -> bool:
        kind = kind_of(event)
        for k in kinds:
            if not (kind.startswith(k[:-1]) if k.endswith("*") else kind == k):
                return False
        for k in keys:
            if not any(k in str(getattr(event, f, "")).lower() for f in _KEYED):
                return False
        for i in instances:
            if i not in str(event.instance).lower():
                return False
        if words:
            line = orjson.dumps(to_dict(event)).decode().lower()
            return all(w in line for w in words)
        return True

    return accept


class EventsView(View):
    DEFAULT_CSS = """
    EventsView #events-table { height: 2fr; }
    EventsView #event-detail { height: 1fr; border-top: solid $primary; overflow-y: auto; }
    EventsView #events-status { height: 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("f", "toggle_follow", "Follow"),
        Binding("c", "copy_trace_id", "Copy trace id"),
    ]

    follow: reactive[bool] = reactive(True)
    filters_keys = True

    class Copied(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class ObjectRequested(Message):
        """Enter on an event: open the object it names (if it has a history)."""

        def __init__(self, event: Event) -> None:
            super().__init__()
            self.event = event

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._accept: Callable[[Event], bool] = event_filter("")
        self._rows: list[Event] = []
        self.selected: Event | None = None
        self._feed: Feed | None = None
        self._mark: tuple[int, int] = (-1, -1)  # (generation, applied) last listed

    def compose(self) -> ComposeResult:
        yield Static(id="events-status")
        table: DataTable[Any] = DataTable(cursor_type="row", id="events-table")
        yield table
        yield Static("select an event to see its attributes", id="event-detail")

    def on_mount(self) -> None:
        self.query_one("#events-table", DataTable).add_columns("seq", "instance", "kind", "summary")

    def set_filter(self, text: str) -> None:
        super().set_filter(text)
        self._accept = event_filter(text)
        if self._feed is not None:
            self._refill(self._feed)

    def watch_follow(self, follow: bool) -> None:
        if follow and self._feed is not None:
            self._refill(self._feed)
        self._status()

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        self._feed = feed
        mark = (feed.generation, feed.state.applied)
        if self.follow and mark != self._mark:
            self._refill(feed)

    def _refill(self, feed: Feed) -> None:
        self._mark = (feed.generation, feed.state.applied)
        accept = self._accept
        rows: list[Event] = []
        for event in reversed(feed.recent):
            if accept(event):
                rows.append(event)
                if len(rows) >= SHOWN:
                    break
        rows.reverse()
        self._rows = rows
        table = self.query_one("#events-table", DataTable)
        table.clear()
        for i, event in enumerate(rows):
            table.add_row(
                str(event.seq), event.instance, kind_of(event), summary(event)[:120], key=str(i)
            )
        if self.follow and rows:
            table.move_cursor(row=len(rows) - 1, animate=False)
        self._status()

    def _status(self) -> None:
        mode = "following" if self.follow else "held (f to follow)"
        text = f"{len(self._rows)} events shown, {mode}"
        if self.filter_text:
            text += f", filter: {self.filter_text}"
        self.query_one("#events-status", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        index = int(event.row_key.value or 0)
        if 0 <= index < len(self._rows):
            self.select(self._rows[index])
        table = event.data_table
        if self.follow and event.cursor_row == table.cursor_row < table.row_count - 1:
            # The user moved off the newest event: hold the list, or the next refill (a live
            # stream refills every tick) puts the cursor back on the newest and enter opens
            # that one. (A refill's own highlights are stale here: it ends on the newest.)
            self.follow = False

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.follow = False  # hold the list while looking at one event
        index = int(event.row_key.value or 0)
        if 0 <= index < len(self._rows):
            self.post_message(self.ObjectRequested(self._rows[index]))

    def select(self, event: Event) -> None:
        self.selected = event
        attrs = to_dict(event)
        text = Text()
        text.append(f"{kind_of(event)}", style="bold")
        text.append(f"   trace id {event.trace_id or '-'}  (c copies)\n", style="cyan")
        for name, value in attrs.items():
            text.append(f"{name}: ", style="dim")
            text.append(f"{value}\n")
        self.query_one("#event-detail", Static).update(text)

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow

    def action_copy_trace_id(self) -> None:
        if self.selected is not None and self.selected.trace_id:
            self.app.copy_to_clipboard(self.selected.trace_id)
            self.post_message(self.Copied(self.selected.trace_id))
