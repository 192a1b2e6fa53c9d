"""The controllers panel's drill-down: a click on a controller shows what its queue holds now
(made-up protocol messages, :class:`tests.browser.conftest.ScriptedDashboard`)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ScriptedDashboard, hello

pytestmark = pytest.mark.browser

WAIT_MS = 10_000
S = 10**9


def _snapshot(now: int) -> dict[str, Any]:
    contents = {
        "waiting_count": 3,
        "backing_off_count": 1,
        "processing_count": 1,
        "waiting": [
            {"key": "default/new", "since_ts": now - 2 * S, "age_ms": 2000.0},
        ],
        "backing_off": [
            {
                "key": "default/flaky",
                "since_ts": now - S,
                "retries": 4,
                "due_ts": now + 90 * S,
                "due_in_ms": 90_000.0,
                "last_error": "503 the server is currently unable to handle the request",
            }
        ],
        "processing": [
            {"key": "default/hung", "since_ts": now - 75 * S, "for_ms": 75_000.0, "stuck": True}
        ],
        "stuck": {"default/hung": 2},
    }
    return {
        "v": 1,
        "now_ts": now,
        "instances": {"r1": {"role": "leader", "first_ts": now - 100 * S, "last_seq": 9}},
        "controllers": {
            "r1": {
                "deployment": {"reconciles": 5, "errors": 4, "slowest": [], "failing": []},
                "replicaset": {"reconciles": 1, "errors": 0, "slowest": [], "failing": []},
            }
        },
        "queues": {
            "r1": {
                "deployment": {"depth": 1, "retries": 4, "contents": contents},
                "replicaset": {"depth": 0, "retries": 0},
            }
        },
    }


def test_controller_click_drills_into_keys_waiting_backing_off_and_processing(
    scripted: ScriptedDashboard, page: Page
) -> None:
    url = scripted.page([hello([{"name": "r1", "snapshot": _snapshot(time.time_ns())}])])
    page.goto(url)
    drill = page.locator("#queue-drill")
    row = page.locator('#controllers-table tbody tr[data-controller="r1/deployment"]')
    expect(row).to_have_count(1, timeout=WAIT_MS)
    expect(drill).to_be_hidden()
    row.click()
    expect(drill).to_be_visible()
    expect(page.locator("#queue-drill-h")).to_have_text(
        "queue of r1/deployment now: 1 processing, 1 backing off, 3 waiting"
    )
    hung = page.locator('#queue-processing tbody tr[data-key="default/hung"]')
    expect(hung).to_have_class(re.compile(r"\bbad\b"))
    cells = hung.locator("td").all_inner_texts()
    assert cells[0] == "default/hung"
    assert re.fullmatch(r"1 min 1[5-9] s STUCK", cells[1]), cells
    assert cells[2] == "2"
    flaky = page.locator('#queue-backing-off tbody tr[data-key="default/flaky"] td')
    texts = flaky.all_inner_texts()
    assert texts[:2] == ["default/flaky", "4"]
    assert re.fullmatch(r"in 1 min (2\d|30) s", texts[2]), texts
    assert texts[3] == "503 the server is currently unable to handle the request"
    expect(page.locator("#queue-waiting thead th").first).to_have_text("waiting (3, 1 shown)")
    waited = page.locator('#queue-waiting tbody tr[data-key="default/new"] td').all_inner_texts()
    assert waited[0] == "default/new" and re.fullmatch(r"\d+\.\d s", waited[1]), waited
    # Another controller: its queue, empty; the close button hides the drill-down.
    page.locator('#controllers-table tbody tr[data-controller="r1/replicaset"]').click()
    expect(page.locator("#queue-drill-h")).to_have_text(
        "queue of r1/replicaset now: 0 processing, 0 backing off, 0 waiting"
    )
    expect(page.locator("#queue-processing tbody td")).to_have_text("none")
    expect(row).not_to_have_class(re.compile(r"\bselected\b"))
    page.locator("#queue-drill-close").click()
    expect(drill).to_be_hidden()


def test_stuck_worker_incident_has_its_own_lane(scripted: ScriptedDashboard, page: Page) -> None:
    now = time.time_ns()
    incident = {
        "ts": now - 3 * S,
        "instance": "r1",
        "type": "stuck_worker",
        "text": "deployment: worker 2 stuck on default/hung for 61s (threshold 60s)",
        "trace_id": "",
    }
    url = scripted.page(
        [hello([{"name": "r1", "snapshot": _snapshot(now), "incidents": [incident]}])]
    )
    page.goto(url)
    marker = page.locator('#incident-lanes .lane[data-type="stuck_worker"] .marker')
    expect(marker).to_have_count(1, timeout=WAIT_MS)
    marker.hover()
    expect(page.locator("#incident-tip")).to_contain_text("stuck on default/hung for 61s")
