"""The page's views of a picture drawn exactly (made-up protocol messages, see
:class:`tests.browser.conftest.ScriptedDashboard`): what an on-call engineer reads off them must
be what the messages say."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import ScriptedDashboard, hello

pytestmark = pytest.mark.browser

WAIT_MS = 10_000
JAEGER = "http://127.0.0.1:16686"
# One bus's reconciles share their trace ids' high half (pycm.trace.context.new_id_key): two
# reconciles differ only in the low half.
HIGH = "12d7402351fc4e0a"
TRACE_A = HIGH + "59bcaccc07bfb8c0"
TRACE_B = HIGH + "afc3e692450af67f"


def _open(page: Page, scripted: ScriptedDashboard, *messages: tuple[str, dict[str, Any]]) -> None:
    url = scripted.page(list(messages))
    page.goto(url)
    assert page.url == url.split("login?", 1)[0], "logged in"


def _controller_snapshot(now: int) -> dict[str, Any]:
    def slow(key: str, trace_id: str, ms: float) -> dict[str, Any]:
        return {
            "key": key,
            "ts": now,
            "dur_ns": int(ms * 1e6),
            "result": "success",
            "outcome": "ok",
            "trace_id": trace_id,
        }

    record = {
        "reconciles": 2,
        "errors": 0,
        "slowest": [slow("default/web", TRACE_A, 25.9), slow("default/api", TRACE_B, 15.0)],
        "failing": [],
    }
    return {
        "v": 1,
        "now_ts": now,
        "instances": {"r1": {"role": "leader", "first_ts": now - 10**10, "last_seq": 2}},
        "controllers": {"r1": {"deployment": record}},
    }


@pytest.mark.parametrize("jaeger", [JAEGER, None], ids=["jaeger-links", "no-jaeger"])
def test_keys_table_trace_ids_tell_two_reconciles_apart(
    scripted: ScriptedDashboard, page: Page, jaeger: str | None
) -> None:
    snapshot = _controller_snapshot(time.time_ns())
    _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot}], jaeger_url=jaeger))
    cells = page.locator("#keys-table tbody tr td:last-child")
    expect(cells).to_have_count(2, timeout=WAIT_MS)
    # The slowest first; each row names its own trace in full (what Jaeger and grep need).
    assert cells.all_inner_texts() == [TRACE_A, TRACE_B]
    if jaeger:
        links = page.locator("#keys-table tbody a")
        assert [links.nth(i).get_attribute("href") for i in range(2)] == [
            f"{JAEGER}/trace/{TRACE_A}",
            f"{JAEGER}/trace/{TRACE_B}",
        ]


def test_incident_hover_names_the_whole_trace_id(scripted: ScriptedDashboard, page: Page) -> None:
    now = time.time_ns()
    snapshot = _controller_snapshot(now)
    incident = {
        "ts": now - 2 * 10**9,
        "instance": "r1",
        "type": "slow_reconcile",
        "text": "deployment default/web took 1.2 s",
        "trace_id": TRACE_B,
    }
    _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot, "incidents": [incident]}]))
    marker = page.locator("#incident-lanes .marker.slow_reconcile")
    expect(marker).to_have_count(1, timeout=WAIT_MS)
    marker.hover()
    expect(page.locator("#incident-tip")).to_contain_text(f"trace {TRACE_B}")


def _x_span(page: Page, chart: str) -> tuple[float, float]:
    scale = page.evaluate(
        f"(x => [x.min, x.max])(window.pycmDashboard.panels.{chart}.plot.scales.x)"
    )
    return float(scale[0]), float(scale[1])


def test_charts_of_a_fresh_source_span_the_timelines_window_not_years(
    scripted: ScriptedDashboard, page: Page
) -> None:
    # A replica that has just (re)started: one series sample, one renew.
    now = time.time_ns()
    snapshot = _controller_snapshot(now)
    snapshot["leases"] = {
        "kube-system/pycm": {
            "name": "kube-system/pycm",
            "holder": "r1",
            "history": [{"ts": now - 10**9, "old": "", "new": "r1"}],
            "renew_history": [{"ts": now, "holder": "r1", "latency_ms": 3.0, "ok": True}],
        }
    }
    sample = {
        "ts": now,
        "controllers": {"r1/deployment": {"depth": 2.0, "syncs_per_s": 1.0}},
        "informers": {},
    }
    _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot, "series": [sample]}]))
    expect(page.locator("#depth-chart canvas")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator("#renew-chart canvas")).to_have_count(1, timeout=WAIT_MS)
    for chart in ("controllers.depth", "controllers.syncs", "lease.chart"):
        low, high = _x_span(page, chart)
        # The lanes' span: the last minute (the sources are younger than the window), ending now.
        assert 55 <= high - low <= 70, (chart, low, high)
        assert abs(high - now / 1e9) < 30, (chart, high)


def test_waterfall_durations_are_readable_at_the_right_end(
    scripted: ScriptedDashboard, page: Page
) -> None:
    # A standby that took over: a long wait for the lease, then short steps at the right end.
    now = time.time_ns()
    t0 = now - 60 * 10**9
    ms = 10**6

    def step(start_ms: float, dur_ms: float) -> dict[str, Any]:
        return {"start_ts": t0 + int(start_ms * ms), "dur_ns": int(dur_ms * ms), "outcome": "ok"}

    steps = {
        "startup": step(0, 900),
        "lease.acquired": step(900, 49_000),
        "controller.init/deployment": step(49_900, 2.6),
        "informer.synced/pods": step(49_903, 20.8),
    }
    snapshot = {
        "v": 1,
        "now_ts": now,
        "instances": {"r1": {"role": "leader", "first_ts": t0, "last_seq": 9, "steps": steps}},
    }
    _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot}]))
    expect(page.locator("#waterfall .step")).to_have_count(4, timeout=WAIT_MS)
    # A duration drawn inside its bar (in the page's background colour) must have a bar under
    # it as wide as the text; a short bar's duration goes beside the bar, in the muted colour.
    hidden = page.evaluate(
        """[...document.querySelectorAll("#waterfall .step")].filter((s) => {
             const ms = s.querySelector(".ms");
             return ms.classList.contains("inside")
               && s.querySelector(".bar").getBoundingClientRect().width
                  < ms.getBoundingClientRect().width;
           }).map((s) => s.querySelector(".label").textContent)"""
    )
    assert hidden == []
    expect(page.locator("#waterfall .step .ms")).to_have_text(
        ["900 ms", "49000 ms", "2.6 ms", "20.8 ms"]
    )


def test_restarted_replica_start_up_events_reach_the_log(
    scripted: ScriptedDashboard, page: Page
) -> None:
    # r1 ran to seq 100 and restarted: the hub sends a fresh hello (its new state, numbered
    # from 1 again) and the new process's recent events, its start-up among them.
    now = time.time_ns()

    def snapshot(last_seq: int, first_ts: int) -> dict[str, Any]:
        instance = {"role": "standby", "first_ts": first_ts, "last_seq": last_seq}
        return {"v": 1, "now_ts": now, "instances": {"r1": instance}}

    def events(seqs: range, base_ts: int) -> tuple[str, dict[str, Any]]:
        return (
            "events",
            {
                "source": "r1",
                "events": [
                    {"kind": "startup.begin" if seq == 1 else "lease.acquire_attempt", "v": 1}
                    | {"seq": seq, "ts": base_ts + seq * 1000, "instance": "r1", "line": ""}
                    for seq in seqs
                ],
            },
        )

    old, new = now - 60 * 10**9, now - 5 * 10**9
    _open(
        page,
        scripted,
        hello([{"name": "r1", "snapshot": snapshot(100, old)}]),
        events(range(91, 101), old),
        hello([{"name": "r1", "snapshot": snapshot(5, new)}]),
        events(range(1, 6), new),
    )
    expect(page.locator("#log-list li")).to_have_count(15, timeout=WAIT_MS)
    logged = page.evaluate("window.pycmDashboard.model.recent(2000, () => true).map(e => e.ev.seq)")
    assert logged == [*range(91, 101), *range(1, 6)]
    expect(page.locator("#log-list li .kind").nth(10)).to_have_text("startup.begin ")


def test_charts_tell_time_in_utc_as_the_timelines_and_the_log_do(
    scripted: ScriptedDashboard, browser: Browser
) -> None:
    # A browser in Berlin: the lanes, the lease changes and the log say UTC (as pycm's text
    # does); a chart in local time would put one moment an hour apart on the same page.
    context = browser.new_context(
        viewport={"width": 1280, "height": 720}, timezone_id="Europe/Berlin"
    )
    page = context.new_page()
    now = time.time_ns()
    snapshot = _controller_snapshot(now)
    sample = {"ts": now, "controllers": {"r1/deployment": {"depth": 2.0}}, "informers": {}}
    try:
        _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot, "series": [sample]}]))
        expect(page.locator("#depth-chart canvas")).to_have_count(1, timeout=WAIT_MS)
        labels = page.evaluate("window.pycmDashboard.panels.controllers.depth.plot.axes[0]._values")
        # 24-hour clock labels as the lanes and the log write them (uPlot's own were 12-hour,
        # "4:32pm", under a date line).
        assert labels and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", label) for label in labels)
        hours = {int(label[:2]) for label in labels}
        utc_hours = {time.gmtime(t).tm_hour for t in (now // 10**9 - 90, now // 10**9 + 5)}
        assert hours <= utc_hours, (labels, utc_hours)
    finally:
        context.close()


def test_disabled_controller_row_says_disabled_and_why(
    scripted: ScriptedDashboard, page: Page
) -> None:
    """A controller the manager did not start is a row saying so (and why), not an all-zero
    row that reads as an idle controller; a running one beside it keeps its figures."""
    now = time.time_ns()
    snapshot = _controller_snapshot(now)
    snapshot["controllers"]["r1"]["echo"] = {
        "reconciles": 0,
        "errors": 0,
        "slowest": [],
        "failing": [],
        "disabled": True,
        "disabled_reason": "--controllers",
    }
    _open(page, scripted, hello([{"name": "r1", "snapshot": snapshot}]))
    echo = page.locator('#controllers-table tbody tr[data-controller="r1/echo"]')
    expect(echo).to_have_count(1, timeout=WAIT_MS)
    expect(echo).to_have_class(re.compile(r"\bdisabled\b"))
    assert [t.strip() for t in echo.locator("td").all_inner_texts()] == [
        "r1",
        "echo",
        "disabled (--controllers)",
    ]
    running = page.locator('#controllers-table tbody tr[data-controller="r1/deployment"] td')
    expect(running.nth(2)).not_to_have_text(re.compile("disabled"))
    assert running.count() > 3
