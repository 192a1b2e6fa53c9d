"""A table of keys in sections (a controller's queue, its slowest and failing keys) with a cursor
that rests only on keys: enter on any key asks for its object, the highlighted row's trace id is
there to copy.

One DataTable, not one per section, so up/down walk every key in order (the app binds tab to the
views, so focus could not hop between tables). A section is a title row, a row of its column
labels, then its keys (or "none"); those other rows are never opened and the cursor skips them.

The owner calls :meth:`KeysTable.update_rows` on every frame: rows are updated in place, cell by
cell, so an unchanged frame costs one comparison and a changed one neither clears the table (that
would scroll it to the top) nor rebuilds it; the cursor stays on its key, wherever that key moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

__all__ = ["BLANK", "WIDTH", "KeyRow", "KeysTable", "section"]

WIDTH = 9  # columns: the widest section (a key's reconcile: key ... trace id)


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One row. It is a key (selectable, opened by enter) iff ``key`` is set; ``section`` and
    ``key`` name it across frames; ``trace_id`` is what ``c`` copies ("" none). ``cells`` are
    at most :data:`WIDTH`; the table pads the rest."""

    cells: tuple[RenderableType, ...]
    key: str = ""
    section: str = ""
    trace_id: str = ""


def _cells(row: KeyRow) -> tuple[RenderableType, ...]:
    return (*row.cells, *[""] * (WIDTH - len(row.cells)))


def _look(cell: RenderableType) -> object:
    """What a cell shows, comparable: rich's ``Text.__eq__`` ignores the text's own style (a
    key turning "bold red" when marked stuck would be missed)."""
    if isinstance(cell, Text):
        return (cell.plain, str(cell.style), tuple(cell.spans))
    return cell


_HEAD = 3  # a row's looks: its key, section and trace id, then its cells


def _looks(row: KeyRow) -> tuple[object, ...]:
    return (row.key, row.section, row.trace_id, *(_look(c) for c in _cells(row)))


def section(name: str, title: str, columns: Sequence[str], keys: Sequence[KeyRow]) -> list[KeyRow]:
    """A section's rows: its title, its column labels, then ``keys`` (put in section ``name``),
    or a "none" row."""
    return [
        KeyRow((Text(title, style="bold"),)),
        KeyRow(tuple(Text(c, style="dim underline") for c in columns)),
        *(KeyRow(k.cells, k.key, name, k.trace_id) for k in keys),
        *([] if keys else [KeyRow((Text("none", style="dim"),))]),
    ]


BLANK = KeyRow(())


class KeysTable(DataTable[Any]):
    """Rows are :class:`KeyRow`; the cursor moves from key to key. Invariant: ``_rows[i]`` is
    what row ``i`` shows, ``_looks[i]`` its comparable form (row keys are positions, ``str(i)``)."""

    class KeySelected(Message):
        """Enter (or a click on the highlighted row) on a key."""

        def __init__(self, row: KeyRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", show_header=False, **kwargs)
        self._rows: list[KeyRow] = []
        self._looks: list[tuple[object, ...]] = []
        self._placed = False  # the cursor has been on a key (``prefer`` is for the first time)

    def on_mount(self) -> None:
        self.add_columns(*[str(i) for i in range(WIDTH)])

    @property
    def highlighted(self) -> KeyRow | None:
        """The key under the cursor (None on any other row, or when empty)."""
        row = self.cursor_row
        if 0 <= row < len(self._rows) and self._rows[row].key:
            return self._rows[row]
        return None

    def update_rows(self, rows: Sequence[KeyRow], *, prefer: tuple[str, str] = ("", "")) -> None:
        """Show ``rows``. The cursor stays on its key: in its section, else wherever the key went
        (waiting, then processing), else the nearest key. Until it has been on a key, it goes to
        ``prefer`` (section, key) if listed, else to the first key."""
        new = list(rows)
        looks = [_looks(r) for r in new]
        if looks == self._looks:
            return  # most frames: nothing changed
        here, index = self.highlighted, self.cursor_row
        columns = [column.key for column in self.ordered_columns]
        for i, (before, after) in enumerate(zip(self._looks, looks, strict=False)):
            if before != after:
                cells = _cells(new[i])
                for j, column in enumerate(columns):
                    if before[_HEAD + j] != after[_HEAD + j]:
                        self.update_cell(str(i), column, cells[j], update_width=True)
        for i in range(len(self._rows) - 1, len(new) - 1, -1):
            self.remove_row(str(i))
        for i in range(len(self._rows), len(new)):
            self.add_row(*_cells(new[i]), key=str(i))
        self._rows, self._looks = new, looks
        target: int | None = None
        if here is not None:
            target = self._find(here.section, here.key)
            if target is None:
                target = self._find("", here.key)
        elif not self._placed and prefer[1]:
            target = self._find(*prefer)
        if target is None:
            target = self._nearest(index if self._placed else 0)
        if target is not None:
            self._placed = True
            if target != self.cursor_row:
                self.move_cursor(row=target, animate=False)

    def _find(self, name: str, key: str) -> int | None:
        """The row of ``key`` in section ``name`` (in any section if "")."""
        for i, row in enumerate(self._rows):
            if row.key == key and (not name or row.section == name):
                return i
        return None

    def _nearest(self, index: int) -> int | None:
        """The first key at or below row ``index``, else the last above it."""
        for i in range(index, len(self._rows)):
            if self._rows[i].key:
                return i
        for i in range(min(index, len(self._rows)) - 1, -1, -1):
            if self._rows[i].key:
                return i
        return None

    def _step(self, step: int) -> None:
        row = self.cursor_row + step
        while 0 <= row < len(self._rows) and not self._rows[row].key:
            row += step
        if 0 <= row < len(self._rows):
            self.move_cursor(row=row)
        elif step < 0:
            self.scroll_home(animate=False)  # no key above: show the titles up there

    def _snap(self, step: int) -> None:
        """Off a key (a page or home/end move, a click on a title): to the next key ``step``
        way, else the other way."""
        if self.highlighted is None:
            self._step(step)
        if self.highlighted is None:
            self._step(-step)

    # DataTable's cursor actions, so that the cursor lands on keys only.

    def action_cursor_up(self) -> None:
        self._set_hover_cursor(False)
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._set_hover_cursor(False)
        self._step(1)

    def action_page_up(self) -> None:
        super().action_page_up()
        self._snap(-1)

    def action_page_down(self) -> None:
        super().action_page_down()
        self._snap(1)

    def action_scroll_top(self) -> None:
        super().action_scroll_top()
        self._snap(1)

    def action_scroll_bottom(self) -> None:
        super().action_scroll_bottom()
        self._snap(-1)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # A click can land on a title; an update's own highlights are stale by now (it ends
        # with the cursor on a key).
        if event.cursor_row == self.cursor_row:
            self._snap(1)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.highlighted
        if row is not None and event.cursor_row == self.cursor_row:
            self.post_message(self.KeySelected(row))
