"""The Object screen (pycm top's "why"): opened by enter on an event, by a key: filter and
from a controller's drill-down; shows the chain of causes and the history, live."""

from __future__ import annotations

import pytest

from pycm.trace.events import Event
from tests.trace.state.script import Feed
from tests.trace.state.test_objects import scale_story
from tests.tui.conftest import settle, text_of
from tui.app import TopApp
from tui.object_screen import ObjectScreen
from tui.sources import ListSource

SIZE = (200, 50)


def story() -> list[Event]:
    events: list[Event] = []
    f = Feed()
    apply = f.state.apply
    f.state.apply = lambda e: (events.append(e), apply(e))[1]  # type: ignore[method-assign]
    scale_story(f)
    return events


@pytest.mark.asyncio
async def test_object_screen_from_a_key_filter_shows_chain_and_history() -> None:
    app = TopApp([ListSource(story())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")  # the Events view
        await pilot.press("slash")
        for ch in "key:default/web-6dc5":
            await pilot.press(ch)
        await pilot.press("enter")  # the filter: the key's events, the list focused
        await settle(pilot)
        assert not isinstance(app.screen, ObjectScreen)
        await pilot.press("enter")  # the highlighted event's object
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "replicasets/default/web-6dc5"
        text = text_of(app, "#object")
        assert "replicasets default/web-6dc5 reconciled by replicaset" in text
        assert "  because deployment default/web's reconcile (trace" in text
        assert "because kubectl-scale updated deployments default/web (spec.replicas)" in text
        assert "event      Normal  SuccessfulCreate" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, ObjectScreen)


@pytest.mark.asyncio
async def test_object_screen_from_enter_on_an_event_of_the_events_view() -> None:
    events = story()
    app = TopApp([ListSource(events)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        view = app.query_one("#events-view")
        table = view.query_one("#events-table")
        table.focus()
        # the pod's create (an api.request): the 5th event of the story
        table.move_cursor(row=4)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "pods/default/web-6dc5-abcde"
        text = text_of(app, "#object")
        assert "pods default/web-6dc5-abcde created by replicaset default/web-6dc5's reconcile" in (
            text
        )


@pytest.mark.asyncio
async def test_object_screen_from_a_controller_drill_down() -> None:
    app = TopApp([ListSource(story())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.on_controllers_view_drill_requested(
            type("Drill", (), {"instance": "a", "controller": "deployment"})()  # type: ignore[arg-type]
        )
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ObjectScreen)
        assert app.screen.ref.path == "deployments/default/web"
        assert "because kubectl-scale updated it (spec.replicas) at RV 12" in text_of(
            app, "#object"
        )
