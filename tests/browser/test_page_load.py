"""The page against synthetic streams (the protocol's messages, made up here):

- under load: 5k events/s for a few seconds (``hello``, then ``events`` batches 4 times a
  second). It must take every event, keep its log bounded, keep drawing frames at its own pace
  and answer at once — never render per event;
- a flapping lease: the flap alert, the failed renews marked with their reason."""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import orjson
import pytest
from playwright.sync_api import Browser, CDPSession, Page, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route

from tests.browser.conftest import Console, ThreadedServer
from web.app import build_dashboard
from web.auth import DashboardAuth
from web.hub import DashboardConfig
from web.sessions import Viewer

pytestmark = pytest.mark.browser

RATE = 5000  # events a second
SECONDS = 6
BATCHES_PER_S = 4
TOTAL = RATE * SECONDS

_RECORD_LONG_TASKS = """
window.__longTasksMs = [];
new PerformanceObserver((list) => {
  for (const task of list.getEntries()) window.__longTasksMs.push(Math.round(task.duration));
}).observe({ type: "longtask", buffered: true });
"""


def _thread_time(cdp: CDPSession) -> float:
    """The CPU seconds the page's main thread has run (CDP's Performance.getMetrics)."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return float(next(m["value"] for m in metrics if m["name"] == "ThreadTime"))


def _hello() -> bytes:
    hello = {
        "v": 1,
        "mode": "live",
        "config": DashboardConfig().to_dict(),
        "sources": [
            {
                "name": "r1",
                "status": {"state": "connected", "reason": ""},
                "snapshot": {"v": 1, "now_ts": time.time_ns(), "instances": {}},
                "series": [],
                "incidents": [],
            }
        ],
        "replay": None,
    }
    return b"event: hello\ndata: " + orjson.dumps(hello) + b"\n\n"


def _batch(first: int, count: int) -> bytes:
    now = time.time_ns()
    events = [
        {
            "kind": "reconcile.end",
            "v": 1,
            "seq": seq,
            "ts": now,
            "instance": "r1",
            "controller": "deployment",
            "key": f"default/web-{seq % 100}",
            "result": "success",
            "dur_ns": 1_000_000,
            "line": "",
        }
        for seq in range(first, first + count)
    ]
    data = orjson.dumps({"source": "r1", "events": events})
    return f"event: events\nid: r1:{first + count - 1}\ndata: ".encode() + data + b"\n\n"


async def _stream(request: Request) -> Response:
    async def frames() -> AsyncIterator[bytes]:
        yield _hello()
        per_batch = RATE // BATCHES_PER_S
        seq = 1
        while seq <= TOTAL:
            yield _batch(seq, per_batch)
            seq += per_batch
            await asyncio.sleep(1 / BATCHES_PER_S)
        while True:  # idle, as a quiet manager is
            await asyncio.sleep(15)
            yield b": ping\n\n"

    return StreamingResponse(frames(), media_type="text/event-stream")


def _flapping_hello(timings: dict[str, float] | None = None) -> bytes:
    """A lease that changed holder 4 times in the last minute, with failed renews; its
    electors' ``timings`` as the state folds them (none: a recording older than
    lease.election_configured, with only the duration observed on the Lease)."""
    now = time.time_ns()
    s = 1_000_000_000
    history = [
        {"ts": now - (50 - 10 * i) * s, "old": old, "new": new, "observer": "r1"}
        for i, (old, new) in enumerate(
            [("", "r1"), ("r1", "r2"), ("r2", "r1"), ("r1", "r2"), ("r2", "r1")]
        )
    ]
    renews = [
        {"ts": now - 35 * s, "holder": "r2", "latency_ms": 900.0, "ok": False, "reason": "timeout"},
        {"ts": now - 5 * s, "holder": "r1", "latency_ms": 3.0, "ok": True, "reason": ""},
    ]
    lease = {
        "name": "kube-system/pycm",
        "holder": "r1",
        "lease_duration_s": 15.0,
        "holders": {"r1": {"last_renew_ts": now - 5 * s}},
        "history": history,
        "renew_history": renews,
    } | (timings or {})
    snapshot = {
        "v": 1,
        "now_ts": now,
        "leases": {"kube-system/pycm": lease},
        "instances": {"r1": {"role": "leader", "first_ts": now - 60 * s, "last_seq": 0}},
    }
    hello = {
        "v": 1,
        "mode": "live",
        "config": DashboardConfig().to_dict(),
        "sources": [
            {
                "name": "r1",
                "status": {"state": "connected", "reason": ""},
                "snapshot": snapshot,
                "series": [],
                "incidents": [],
            }
        ],
        "replay": None,
    }
    return b"event: hello\ndata: " + orjson.dumps(hello) + b"\n\n"


def _flapping_stream(timings: dict[str, float] | None) -> Callable[[Request], Awaitable[Response]]:
    async def stream(request: Request) -> Response:
        async def frames() -> AsyncIterator[bytes]:
            yield _flapping_hello(timings)
            while True:
                await asyncio.sleep(15)
                yield b": ping\n\n"

        return StreamingResponse(frames(), media_type="text/event-stream")

    return stream


_flapping = _flapping_stream(None)
_TIMED = {"lease_duration_s": 8.0, "renew_deadline_s": 4.0, "retry_period_s": 1.0}


class _Server(ThreadedServer):
    def __init__(self, auth: DashboardAuth) -> None:
        app = Starlette(
            routes=[
                Mount("/dashboard", app=build_dashboard([Route("/api/stream", _stream)], auth)),
                Mount("/flapping", app=build_dashboard([Route("/api/stream", _flapping)], auth)),
                Mount(
                    "/timed",
                    app=build_dashboard([Route("/api/stream", _flapping_stream(_TIMED))], auth),
                ),
            ]
        )
        super().__init__(app, "page-load-server")


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[_Server, DashboardAuth]]:
    async def nobody(token: str) -> Viewer | None:
        return None

    auth = DashboardAuth(nobody)
    with _Server(auth) as served:
        yield served, auth


def test_page_takes_5k_events_a_second_and_stays_responsive(
    server: tuple[_Server, DashboardAuth], browser: Browser
) -> None:
    served, auth = server
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    # The page's own record of every task that held its main thread over 50 ms (the Long Tasks
    # API): what the page did, unlike a round trip from here, which also times this process and
    # the DevTools pipe on a loaded machine.
    context.add_init_script(_RECORD_LONG_TASKS)
    page = context.new_page()
    console = Console(page)
    base = f"http://127.0.0.1:{served.port}/dashboard"
    page.goto(f"{base}/login?code={auth.new_login_code()}")
    assert page.url == f"{base}/"
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    thread_time_at_start = _thread_time(cdp)
    started = time.monotonic()
    frames_at_start = int(page.evaluate("Number(document.body.dataset.frames || 0)"))
    round_trips: list[float] = []
    while page.evaluate("window.pycmDashboard.model.logNext") < TOTAL:
        assert time.monotonic() - started < SECONDS * 4, "the page fell behind the stream"
        asked = time.monotonic()
        page.evaluate("1")  # a round trip through the page's main thread
        round_trips.append(time.monotonic() - asked)
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    thread_s = _thread_time(cdp) - thread_time_at_start
    frames = int(page.evaluate("Number(document.body.dataset.frames)")) - frames_at_start
    assert page.evaluate("PerformanceObserver.supportedEntryTypes.includes('longtask')")
    long_tasks_ms = page.evaluate("window.__longTasksMs")
    # Tasks of 50–150 ms on a loaded 2-core machine (batches of 1,250 events, the 4/s frames),
    # a few of 300–550 ms when the suite starves the browser; a page that rendered per event
    # would hold the thread for seconds at a time.
    assert max(long_tasks_ms, default=0) < 1000, f"main-thread tasks of {long_tasks_ms} ms"
    # How much of the run the page's main thread computed: its CPU time (CDP's ThreadTime), not
    # the long tasks' wall time, which also counts the time a starved browser waited for a core
    # (4.2 s of tasks for 1.5 s of CPU at load 11). About a fifth of the run here; rendering per
    # event would take the whole run and fall behind.
    cpu_share = thread_s / elapsed
    assert cpu_share < 0.5, f"the main thread computed for {cpu_share:.0%} of the run"
    assert statistics.median(round_trips) < 0.25, f"answers took {sorted(round_trips)} s"
    # Frames come from the ≤4/s timer, not from events: thousands of events, a few dozen frames.
    assert 1.5 * elapsed <= frames <= 4.5 * elapsed + 4, (frames, elapsed)
    assert page.locator("#log-list li").count() == 300, "the log shows a bounded window"
    assert page.evaluate("window.pycmDashboard.model.duplicatesDropped") == 0
    assert console.errors == []
    context.close()


def _logged_in(server: tuple[_Server, DashboardAuth], browser: Browser, mount: str) -> Page:
    """A page of its own context, logged in to the dashboard at ``/mount``."""
    served, auth = server
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    base = f"http://127.0.0.1:{served.port}/{mount}"
    page.goto(f"{base}/login?code={auth.new_login_code()}")
    assert page.url == f"{base}/"
    return page


def test_page_marks_a_flapping_lease_and_its_failed_renews(
    server: tuple[_Server, DashboardAuth], browser: Browser
) -> None:
    page = _logged_in(server, browser, "flapping")
    alert = page.locator("#flap-alert")
    expect(alert).to_be_visible(timeout=10_000)
    expect(alert).to_contain_text("4 holder changes")
    expect(page.locator('#lease-lanes .lane[data-replica="r2"] .fail')).to_have_attribute(
        "title", re.compile(r"renew failed: timeout")
    )
    expect(page.locator("#lease-changes li.failed")).to_contain_text("r2 renew failed: timeout")
    expect(page.locator("#lease-changes li.change")).to_have_count(5)
    expect(page.locator("#leader-name")).to_have_text("r1")
    page.context.close()


@pytest.mark.parametrize(
    ("mount", "timings", "assumed"),
    [
        pytest.param("timed", "renew deadline 4s · lease 8s", False, id="from-the-trace"),
        # An older recording: the renew deadline is kube's default, marked and explained.
        pytest.param("flapping", "renew deadline 10s* · lease 15s", True, id="kube-defaults"),
    ],
)
def test_page_lease_gauge_reads_the_electors_timings_from_the_state(
    server: tuple[_Server, DashboardAuth], browser: Browser, mount: str, timings: str, assumed: bool
) -> None:
    page = _logged_in(server, browser, mount)
    card = page.locator('article.card[data-identity="r1"]')
    expect(card.locator(".lease-timings")).to_have_text(timings, timeout=10_000)
    expect(card.locator(".lease-assumed")).to_have_count(1 if assumed else 0)
    if assumed:
        expect(card.locator(".lease-assumed")).to_contain_text("Kubernetes' default")
    page.context.close()
