"""A DataTable that is refilled from the snapshot each tick and keeps the cursor on its row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.message import Message
from textual.widgets import DataTable

__all__ = ["LiveTable"]


class LiveTable(DataTable[Any]):
    """Rows are keyed; :meth:`refill` replaces them and puts the cursor back on the same key.
    Clicking a header (or :meth:`cycle_sort`) sorts by that column; again, reversed."""

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._columns = list(columns)
        self.sort_column: int | None = None
        self.sort_reverse = False

    def on_mount(self) -> None:
        self.add_columns(*self._columns)

    def refill(self, rows: Sequence[tuple[str, Sequence[Any], Sequence[Any]]]) -> None:
        """``rows`` are ``(key, cells, sort values)``."""
        keep = None
        if self.row_count and self.cursor_row >= 0:
            try:
                keep = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
            except Exception:
                keep = None
        ordered = list(rows)
        if self.sort_column is not None:
            col = self.sort_column
            ordered.sort(key=lambda r: r[2][col], reverse=self.sort_reverse)
        self.clear()
        for key, cells, _ in ordered:
            self.add_row(*cells, key=key)
        if keep is not None:
            for index, (key, _, _) in enumerate(ordered):
                if key == keep:
                    self.move_cursor(row=index, animate=False)
                    break

    def sort_by(self, column: int) -> None:
        if self.sort_column == column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, column > 1
        self.post_message(self.Resorted(self))

    def cycle_sort(self) -> None:
        nxt = 0 if self.sort_column is None else (self.sort_column + 1) % len(self._columns)
        self.sort_column, self.sort_reverse = nxt, nxt > 1
        self.post_message(self.Resorted(self))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)

    class Resorted(Message):
        """The sort changed: the owner refreshes now instead of on the next tick."""

        def __init__(self, table: LiveTable) -> None:
            super().__init__()
            self.table = table
