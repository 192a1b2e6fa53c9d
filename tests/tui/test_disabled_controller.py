"""A controller the manager did not start (controller.disabled) shows as disabled, with the
reason, in pycm top's overview and controllers views — not as an all-zero row that reads like
an idle controller."""

from __future__ import annotations

import pytest

from pycm.trace import kinds as k
from tests.tui import scenario
from tests.tui.conftest import settle, table_rows, text_of
from tui.app import TopApp
from tui.sources import ListSource

SIZE = (160, 50)


def _events() -> list[k.Event]:
    events = scenario.build()
    disabled = k.ControllerDisabled(controller="echo", reason="--controllers")
    # Stamped as the bus would: the next seq of its instance, at start-up time.
    seq = max(e.seq for e in events if e.instance == scenario.B) + 1
    for field, value in (("seq", seq), ("ts", scenario.T0), ("instance", scenario.B)):
        object.__setattr__(disabled, field, value)
    return [*events, disabled]


@pytest.mark.asyncio
async def test_disabled_controller_is_shown_disabled_not_idle() -> None:
    app = TopApp([ListSource(_events())])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        overview = text_of(app, "#overview-controllers")
        (echo,) = [line for line in overview.splitlines() if " echo " in f" {line} "]
        assert echo.split() == ["pycm-b", "echo", "disabled", "(--controllers)"]
        (running,) = [line for line in overview.splitlines() if "deployment" in line]
        assert "disabled" not in running
        await pilot.press("3")
        await settle(pilot)
        rows = {row[1]: row for row in table_rows(app, "#controllers-table")}
        assert rows["echo"][2:] == ["disabled (--controllers)", *["-"] * 9]
        assert rows["deployment"][2] == "43"
