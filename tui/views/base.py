"""The view contract: ``show(snapshot, feed)`` on each refresh, ``set_filter(text)`` from `/`."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import DataTable

from pycm.trace.state import Snapshot
from tui.feed import Feed

__all__ = ["View"]


class View(Vertical):
    """A tab's content. Subclasses render from the snapshot only: no clock, no I/O."""

    DEFAULT_CSS = """
    View { height: 1fr; padding: 0 1; }
    """

    filter_text = ""
    # Whether a `key:` term filters this view's rows; where it does not, the app opens the
    # key's object on `/key:ns/name` (enter).
    filters_keys = False

    def show(self, snapshot: Snapshot, feed: Feed) -> None:
        raise NotImplementedError

    def focus_content(self) -> None:
        """Focus the view's table (keys like enter, f and c go to it), else the view."""
        tables = self.query(DataTable)
        if tables:
            tables.first().focus()

    def set_filter(self, text: str) -> None:
        self.filter_text = text

    def matches(self, *fields: str) -> bool:
        """Whether any of ``fields`` contains the filter (case-insensitive; empty matches)."""
        needle = self.filter_text.lower()
        return not needle or any(needle in f.lower() for f in fields)
