from __future__ import annotations

import io

from textual.pilot import Pilot

from tui.app import TopApp


async def settle(pilot: Pilot[int], rounds: int = 3) -> TopApp:
    """Let the sources push, then apply and show everything (the tick, without waiting)."""
    app = pilot.app
    assert isinstance(app, TopApp)
    for _ in range(rounds):
        await pilot.pause()
        app.flush(force=True)
    await pilot.pause()
    return app


def text_of(app: TopApp, selector: str) -> str:
    """The plain text a Static shows (its Rich content rendered wide, without styles)."""
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


def table_rows(app: TopApp, selector: str) -> list[list[str]]:
    from textual.widgets import DataTable

    table = app.screen.query_one(selector, DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def table_text(app: TopApp, selector: str) -> str:
    """A DataTable's rows as lines of text (cells joined by two spaces)."""
    return "\n".join("  ".join(cells) for cells in table_rows(app, selector))
