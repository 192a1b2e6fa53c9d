"""The controller drill-down's keys under a cursor (issue 36, "enter on any key"): every key
listed — processing, backing off, waiting, slowest, failing — is selected with up/down and
opened with enter; ``c`` copies the highlighted row's trace id; the cursor stays on its key
while the live rows change. Also the other ways in: a ``/key:`` filter, an Events row."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input

from pycm.trace import kinds as k
from pycm.trace.events import Event
from tests.trace.state.script import Feed
from tests.tui.conftest import settle
from tui.app import TopApp
from tui.keys_table import KeysTable
from tui.object_screen import ObjectScreen
from tui.screens import ControllerScreen
from tui.sources import ListSource
from tui.views import ControllersView

SIZE = (160, 50)
# The reconciles of the story, slowest first: key -> its duration (ms).
SLOW = {"default/slow": 300, "default/mid": 200, "default/fast": 100}


class Story:
    """Events stamped as a bus would (instance "a", controller "deployment"), kept to be fed."""

    def __init__(self) -> None:
        self.feed = Feed()
        self.at = 0.0
        self.traces: dict[str, str] = {}

    def __call__(self, event: Event, **env: Any) -> Event:
        self.at += 0.01
        return self.feed(event, at=self.at, **env)

    def reconcile(self, key: str, dur_ms: int) -> list[Event]:
        span = self.feed.span()
        trace = self.traces[key] = span.rjust(32, "7")
        begin = self(
            k.ReconcileStarted(controller="deployment", key=key, resource="deployments"),
            span_id=span,
            trace_id=trace,
        )
        end = self(
            k.ReconcileFinished(controller="deployment", key=key, action="noop"),
            span_id=span,
            trace_id=trace,
            dur_ns=dur_ms * 1_000_000,
        )
        return [begin, end]

    def add(self, key: str) -> Event:
        return self(k.ItemAdded(queue="deployment", key=key, reason="update"))

    def take(self, key: str) -> Event:
        return self(k.ItemTaken(queue="deployment", key=key))


def story() -> tuple[Story, list[Event]]:
    """Three reconciled keys (slowest first: slow, mid, fast), two more reconciled once and
    now waiting again (w1, then w2); nothing processing, nothing failing."""
    s = Story()
    events: list[Event] = []
    for key, dur in SLOW.items():
        events += s.reconcile(key, dur)
    for key in ("default/w1", "default/w2"):
        events += s.reconcile(key, 10)
    events += [s.add("default/w1"), s.add("default/w2")]
    return s, events


async def drill(pilot: Any) -> tuple[ControllerScreen, KeysTable]:
    app = await settle(pilot)
    app.on_controllers_view_drill_requested(ControllersView.DrillRequested("a", "deployment"))
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, ControllerScreen)
    return screen, screen.query_one("#keys", KeysTable)


async def type_filter(pilot: Any, text: str) -> None:
    """Type ``text`` into the filter at once (a key press each is slow)."""
    pilot.app.query_one("#filter", Input).value = text
    await pilot.pause()


def highlighted(table: KeysTable) -> tuple[str, str]:
    row = table.highlighted
    assert row is not None
    # what the cursor's row shows is that key (not only what the table believes)
    assert str(table.get_row_at(table.cursor_row)[0]) == row.key
    return row.section, row.key


@pytest.mark.asyncio
async def test_controller_keys_enter_on_a_waiting_key_opens_that_key_s_object() -> None:
    _, events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        _, table = await drill(pilot)
        assert highlighted(table) == ("slowest", "default/slow")  # no failure: the slowest
        await pilot.press("up")  # over the blank, title and labels: the last waiting key
        assert highlighted(table) == ("waiting", "default/w2")
        await pilot.press("up")
        assert highlighted(table) == ("waiting", "default/w1")
        await pilot.press("up")  # nothing processing or backing off: stays on w1
        assert highlighted(table) == ("waiting", "default/w1")
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "deployments/default/w2"
        await pilot.press("escape")
        await pilot.press("down", "down", "enter")  # the second slowest
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "deployments/default/mid"


@pytest.mark.asyncio
async def test_controller_keys_cursor_stays_on_its_key_when_rows_change() -> None:
    s, events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        screen, table = await drill(pilot)
        await pilot.press("up")
        assert highlighted(table) == ("waiting", "default/w2")
        index = table.cursor_row
        # w1 is taken: it moves to processing, w2 up a row (its old row is now the blank)
        app.feed.push("test", [s.take("default/w1")])
        await settle(pilot)
        assert highlighted(table) == ("waiting", "default/w2")
        assert table.cursor_row == index - 1
        await pilot.press("up")
        assert highlighted(table) == ("processing", "default/w1")
        # w2 is taken too: the key moved section, the cursor with it
        await pilot.press("down")
        app.feed.push("test", [s.take("default/w2")])
        await settle(pilot)
        assert highlighted(table) == ("processing", "default/w2")
        # an unchanged frame touches no row: the widget is not rebuilt per frame
        touched: list[str] = []
        for name in ("add_row", "remove_row", "update_cell", "clear"):
            original = getattr(table, name)

            def spy(*args: Any, _name: str = name, _f: Any = original, **kw: Any) -> Any:
                touched.append(_name)
                return _f(*args, **kw)

            setattr(table, name, spy)
        app.flush(force=True)
        screen.show(app.snapshot)
        assert touched == []
        assert screen.query_one("#keys", KeysTable) is table


@pytest.mark.asyncio
async def test_controller_keys_c_copies_the_highlighted_row_s_trace_id() -> None:
    s, events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        _, table = await drill(pilot)
        await pilot.press("down")
        assert highlighted(table) == ("slowest", "default/mid")
        await pilot.press("c")
        assert app.clipboard == s.traces["default/mid"]
        await pilot.press("down", "c")
        assert app.clipboard == s.traces["default/fast"]
        await pilot.press("up", "up", "up")  # a waiting key: no trace id in its row
        assert highlighted(table) == ("waiting", "default/w2")
        await pilot.press("c")
        assert app.clipboard == s.traces["default/fast"]  # unchanged
        notices = [n.message for n in app._notifications]
        assert notices[-1] == "default/w2: no trace id in this row"


@pytest.mark.asyncio
async def test_a_key_filter_outside_the_events_view_opens_the_object() -> None:
    _, events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3", "slash")
        await type_filter(pilot, "key:default/mid")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "deployments/default/mid"
        await pilot.press("escape")
        # not left behind as a filter hiding every controller
        assert app.view("controllers").filter_text == ""
        await pilot.press("slash")
        await type_filter(pilot, "key:default/nothing")
        await pilot.press("enter")
        await settle(pilot)
        assert len(app.screen_stack) == 1  # no object screen
        assert [n.message for n in app._notifications][-1] == "no history of default/nothing yet"


@pytest.mark.asyncio
async def test_events_view_enter_on_an_older_row_of_a_live_stream_opens_that_row() -> None:
    s, events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        table = app.query_one("#events-table", DataTable)
        assert table.cursor_row == len(events) - 1  # following: on the newest
        await pilot.press("up", "up", "up")  # w2's reconcile.end
        # the stream goes on: while following, this refill would put the cursor back
        app.feed.push("test", s.reconcile("default/late", 5))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "deployments/default/w2"
