"""KeysTable alone: the cursor rests on keys only (home/end, a click on a title), and a cell
whose text keeps its words but changes style is updated."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from tui.keys_table import BLANK, KeyRow, KeysTable, section


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield KeysTable(id="keys")


def rows(stuck: bool = False) -> list[KeyRow]:
    style = "bold red" if stuck else ""
    return [
        *section("a", "section a", ("key",), [KeyRow((Text("ns/a1", style=style),), "ns/a1")]),
        BLANK,
        *section(
            "b", "section b", ("key",), [KeyRow(("ns/b1",), "ns/b1"), KeyRow(("ns/b2",), "ns/b2")]
        ),
    ]


def at(table: KeysTable) -> str:
    row = table.highlighted
    return row.key if row is not None else f"row {table.cursor_row}"


@pytest.mark.asyncio
async def test_keys_table_cursor_rests_on_keys_after_home_end_and_a_click_on_a_title() -> None:
    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeysTable)
        table.update_rows(rows())
        table.focus()
        await pilot.pause()
        assert at(table) == "ns/a1"  # the first key, not the title above it
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert at(table) == "ns/b2"
        await pilot.press("ctrl+home")
        await pilot.pause()
        assert at(table) == "ns/a1"
        await pilot.click(KeysTable, offset=(2, 4))  # section b's title (row 4)
        await pilot.pause()
        assert at(table) == "ns/b1"


@pytest.mark.asyncio
async def test_keys_table_updates_a_cell_whose_style_alone_changed() -> None:
    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeysTable)
        table.update_rows(rows())
        table.update_rows(rows(stuck=True))  # rich's Text == would call the two equal
        await pilot.pause()
        cell = table.get_row_at(2)[0]
        assert isinstance(cell, Text) and str(cell.style) == "bold red"
