"""The controller drill-down's queue section: keys processing (a stuck one marked), backing off
(retries, next retry, last error) and waiting, from the scripted scenario plus a few keys."""

from __future__ import annotations

import pytest

from pycm.trace import Event
from pycm.trace import kinds as k
from pycm.trace.events import Outcome
from tests.tui import scenario
from tests.tui.conftest import settle, table_text
from tui.app import TopApp
from tui.sources import ListSource

S, MS, T0, B = scenario.S, scenario.MS, scenario.T0, scenario.B


def _with_queue_keys() -> list[Event]:
    s = scenario.Script()
    s.events = scenario.build()
    s._seq = {e.instance: e.seq for e in s.events}  # continue each instance's numbering
    s._span = 1000
    # default/hung: taken at 45 s, marked stuck at 55 s (a 10 s threshold); now is 60 s.
    s.add(k.ItemAdded(queue="deployment", key="default/hung"), T0 + 44 * S, B)
    s.add(k.ItemTaken(queue="deployment", key="default/hung"), T0 + 45 * S, B)
    s.add(
        k.WorkerStuck(
            controller="deployment",
            key="default/hung",
            worker=2,
            processing_s=10.0,
            threshold_s=10.0,
        ),
        T0 + 55 * S,
        B,
    )
    # default/flaky: its 4th failure, requeued for 30 s at 55 s.
    s.add(
        k.ItemRequeued(queue="deployment", key="default/flaky", retries=4, delay_ms=30_000.0),
        T0 + 55 * S,
        B,
    )
    s.step(
        k.ReconcileStarted(controller="deployment", key="default/flaky"),
        k.ReconcileFinished(
            controller="deployment",
            key="default/flaky",
            outcome=Outcome.ERROR,
            error="503 the server is currently unable to handle the request",
        ),
        T0 + 54 * S + 900 * MS,
        101 * MS,
        B,
    )
    s.add(k.ItemAdded(queue="deployment", key="default/new"), T0 + 58 * S, B)
    return sorted(s.events, key=lambda e: (e.instance, e.seq))


@pytest.mark.asyncio
async def test_controller_drill_down_shows_what_the_queue_holds() -> None:
    app = TopApp([ListSource(_with_queue_keys())])
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        keys = table_text(app, "#keys")
    queue = keys.split("queue now")[1].split("slowest keys")[0]
    processing = queue.split("processing (1)")[1].split("backing off")[0]
    hung = next(line for line in processing.splitlines() if "default/hung" in line)
    assert hung.split() == ["default/hung", "15.0s", "STUCK", "2"]
    backing = queue.split("backing off (2)")[1].split("waiting")[0]
    rows = [line.split() for line in backing.splitlines() if line.strip().startswith("default/")]
    # default/broken (20 ms after 54 s: due) first, then default/flaky (due at 85 s: in 25 s)
    assert rows[0][:4] == ["default/broken", "3", "due", "conflict"]
    assert rows[1][:6] == ["default/flaky", "4", "in", "25.0s", "503", "the"]
    waiting = queue.split("waiting (1)")[1]
    new = next(line for line in waiting.splitlines() if "default/new" in line)
    assert new.split() == ["default/new", "2.0s"]
