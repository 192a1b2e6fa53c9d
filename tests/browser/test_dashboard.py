"""The dashboard in headless chromium over three real replicas (see conftest.py): log in,
watch, kill the leader, filter, reconnect — the page must keep telling the truth, with no
console errors and a CSP that holds. The tests run in file order on one set-up."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from pycm.kube import DEPLOYMENTS
from tests.browser.conftest import JAEGER, Console, Stack, poll

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
WAIT_MS = 30_000  # page-side waits: a loaded 2-core box runs three replicas and chromium


@pytest.fixture(scope="module")
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme="dark")
    yield context
    context.close()


@pytest.fixture(scope="module")
def console() -> dict[str, Console]:
    return {}


@pytest.fixture(scope="module")
def page(stack: Stack, context: BrowserContext, console: dict[str, Console]) -> Page:
    page = context.new_page()
    console["page"] = Console(page)
    return page


def _model(page: Page, expression: str) -> object:
    return page.evaluate(
        f"(() => {{ const model = window.pycmDashboard.model; return {expression}; }})()"
    )


def test_bad_token_is_refused_with_the_form_again(stack: Stack, browser: Browser) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{stack.base}/login")
    page.fill("#token", "not-a-token")
    with page.expect_response(re.compile(r"/dashboard/login$")) as answer:
        page.click("button[type=submit]")
    assert answer.value.status == 401, answer.value.text()
    expect(page.locator(".error")).to_contain_text("invalid token")
    assert context.cookies() == []
    page.goto(f"{stack.base}/")
    assert page.url == f"{stack.base}/login", "no session: the page sends you to log in"
    context.close()


def test_one_time_url_logs_in_once_and_leaves_the_address_bar(
    stack: Stack, page: Page, browser: Browser
) -> None:
    url = stack.login_url
    page.goto(url)
    assert page.url == f"{stack.base}/", "redirected away from the code"
    [cookie] = page.context.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (
        "pycm_session",
        True,
        True,
        "Strict",
    )
    assert cookie["path"] == "/dashboard"
    other = browser.new_context()
    again = other.new_page()
    answer = again.goto(url)
    assert answer is not None and answer.status == 401, "the code works once"
    expect(again.locator(".error")).to_contain_text("already used")
    other.close()


def test_three_replicas_and_the_leaders_name(stack: Stack, page: Page) -> None:
    expect(page.locator("#replica-cards .card")).to_have_count(3, timeout=WAIT_MS)
    leader = stack.cluster.leases.holder
    expect(page.locator("#leader-name")).to_have_text(leader, timeout=WAIT_MS)
    expect(page.locator(f'.card[data-identity="{leader}"]')).to_have_attribute(
        "data-role", "leader"
    )
    for name in ("replica-a", "replica-b", "replica-c"):
        expect(page.locator(f'.card[data-identity="{name}"] .source-state')).to_have_text(
            "connected"
        )


def test_a_chart_updates(page: Page) -> None:
    chart = page.locator("#renew-chart canvas")
    expect(chart).to_have_count(1, timeout=WAIT_MS)
    points = _model(
        page,
        "[...model.sources.values()].map(s => Object.values(s.snapshot.leases || {}))"
        ".flat().reduce((n, lease) => n + (lease.renew_history || []).length, 0)",
    )
    before = chart.screenshot()
    poll(lambda: chart.screenshot() != before, 20, "the renew latency chart to redraw")
    assert isinstance(points, int) and points > 0


def test_filter_the_log(stack: Stack, page: Page) -> None:
    expect(page.locator("#log-list li").first).to_be_visible(timeout=WAIT_MS)
    page.locator("body").press("/")
    expect(page.locator("#log-filter")).to_be_focused()
    try:
        page.keyboard.type("kind:lease.renew*")
        poll(
            lambda: (
                page.locator("#log-list li").count() > 0
                and set(page.locator("#log-list li .kind").all_text_contents())
                == {"lease.renewed "}
            ),
            15,
            "only lease.renewed rows",
        )
        page.fill("#log-filter", "key:default/web")
        # Fresh events about default/web: the ones from its creation may have left the bounded
        # log by now (lease renewals of three replicas fill it).
        annotation = {"metadata": {"annotations": {"pycm.test/poke": str(time.time())}}}
        stack.run(stack.client.patch(DEPLOYMENTS, "web", annotation, namespace="default"))
        poll(
            lambda: (
                page.locator("#log-list li").count() > 0
                and all(
                    "default/web" in row for row in page.locator("#log-list li").all_text_contents()
                )
            ),
            30,
            "only rows about default/web",
        )
    finally:
        page.fill("#log-filter", "")  # the later tests read the unfiltered log


def test_help_opens_and_closes_with_the_keyboard(page: Page) -> None:
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden()


def test_pause_holds_the_log_and_follow_resumes(page: Page) -> None:
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("p")
    expect(page.locator("#log-pause")).to_have_attribute("aria-pressed", "true")
    held = page.locator("#log-list").inner_text()
    received = _model(page, "model.logNext")
    poll(lambda: _model(page, "model.logNext") != received, 20, "more events to arrive")
    assert page.locator("#log-list").inner_text() == held
    page.keyboard.press("p")
    expect(page.locator("#log-pause")).to_have_attribute("aria-pressed", "false")
    poll(lambda: page.locator("#log-list").inner_text() != held, 10, "the log to follow again")


def test_kill_the_leader_and_the_timeline_marks_the_takeover(stack: Stack, page: Page) -> None:
    old = stack.cluster.leases.holder
    killed_at = time.monotonic()
    stack.run(stack.cluster.kill(old))
    stack.run(stack.cluster.leases.wait_for(lambda h: h not in ("", old), 30, after=killed_at))
    new = stack.cluster.leases.holder
    expect(page.locator("#leader-name")).to_have_text(new, timeout=WAIT_MS)
    expect(page.locator(f'#lease-changes li.change[data-new="{new}"]')).to_contain_text(
        f"{old} → {new}", timeout=WAIT_MS
    )
    expect(page.locator(f'#lease-lanes .lane[data-replica="{new}"] .tick.takeover')).to_have_count(
        1, timeout=WAIT_MS
    )
    expect(page.locator(f'.card[data-identity="{new}"]')).to_have_attribute("data-role", "leader")
    # The incident timeline has the takeover too; hovering its mark lists it.
    page.locator("#incident-panel").scroll_into_view_if_needed()
    poll(
        lambda: _hover_shows(page, f"{new} acquired"),
        WAIT_MS / 1000,
        f"a lease mark whose hover says {new} acquired",
    )
    stack.killed = old  # type: ignore[attr-defined]


def test_reconnect_shows_no_event_twice(
    stack: Stack, page: Page, console: dict[str, Console]
) -> None:
    # The killed replica comes back (a new process: its seqs start again from 1; the dashboard
    # notices and starts that source over), and the page's own stream drops and reconnects (the
    # connection cut: EventSource retries and gets a hello and the recent events again, which
    # it already has).
    old = getattr(stack, "killed", "replica-a")
    before = _model(page, "model.logNext")
    restarted_ns = time.time_ns()
    stack.run(stack.cluster.start(old))
    stack.run(stack.cluster.wait_serving(stack.cluster.replicas[old]))
    reconnects = _model(page, "model.connects")
    # The cut stream is reported by chromium as a failed load: that one is ours.
    console["page"].expected.append("net::ERR_INCOMPLETE_CHUNKED_ENCODING")
    stack.loop.call_soon_threadsafe(stack.proxy.cut)
    poll(lambda: _model(page, "model.connects") != reconnects, 30, "the page to reconnect")
    expect(page.locator("#stream-state")).to_have_text("connected", timeout=WAIT_MS)
    poll(
        lambda: bool(_model(page, "model.duplicatesDropped")),
        30,
        "the page to drop the repeated backfill",
    )
    poll(
        lambda: bool(
            _model(
                page,
                f"model.recent(2000, e => e.ev.instance === {old!r} && e.ev.ts > {restarted_ns})"
                ".length > 0",
            )
        ),
        60,
        f"the restarted {old}'s new events in the log",
        lambda: str(
            _model(
                page,
                "JSON.stringify([...model.sources.values()]"
                ".map(s => [s.name, s.lastSeq, s.status]))",
            )
        ),
    )
    duplicates = _model(
        page,
        """(() => { const seen = new Set(); let dup = 0;
            for (const e of model.recent(2000, () => true)) {
              const k = `${e.source}|${e.ev.seq}|${e.ev.ts}`; if (seen.has(k)) dup++; seen.add(k);
            } return dup; })()""",
    )
    assert duplicates == 0
    assert _model(page, "model.logNext") > before


def test_mounted_dashboard_of_pycm_run_over_https(stack: Stack, browser: Browser) -> None:
    """The dashboard ``pycm run`` mounts on its secure port: a token at the form (TokenReview,
    then SubjectAccessReview get /debug/pycm/events) → a Secure cookie over TLS → the page of
    that one replica, live."""
    replica = stack.cluster.replicas["replica-b"]
    # The replica's self-signed serving certificate: not one the browser could trust.
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 720})
    page = context.new_page()
    console = Console(page)
    try:
        page.goto(f"{replica.url}/dashboard/")
        assert page.url == f"{replica.url}/dashboard/login", "no session: log in first"
        page.fill("#token", "not-a-token")
        page.click("button[type=submit]")
        expect(page.locator(".error")).to_contain_text("invalid token")
        page.fill("#token", stack.token)
        page.click("button[type=submit]")
        expect(page).to_have_url(f"{replica.url}/dashboard/")
        expect(page.locator('.card[data-identity="replica-b"]')).to_have_count(1, timeout=WAIT_MS)
        expect(page.locator("#mode")).to_have_text("live")
        expect(page.locator("#stream-state")).to_have_text("connected", timeout=WAIT_MS)
        expect(page.locator("#log-list li").first).to_be_visible(timeout=WAIT_MS)
        [cookie] = context.cookies()
        assert (cookie["secure"], cookie["httpOnly"], cookie["path"]) == (True, True, "/dashboard")
        assert [m for m in console.errors if "invalid token" not in m and "401" not in m] == []
    finally:
        context.close()


def test_write_the_readme_screenshot(stack: Stack, page: Page, tmp_path: Path) -> None:
    """docs/dashboard.png when PYCM_SCREENSHOT=1 (committed by hand), else a throwaway."""
    expect(page.locator("#controllers-table tbody tr").first).to_be_visible(timeout=WAIT_MS)
    # Trace ids of the slowest keys link to Jaeger (pycm dashboard --jaeger-url).
    expect(page.locator(f'#keys-table a[href^="{JAEGER}/trace/"]').first).to_be_attached(
        timeout=WAIT_MS
    )
    page.evaluate("window.scrollTo(0, 0)")
    target = (
        ROOT / "docs" / "dashboard.png" if os.environ.get("PYCM_SCREENSHOT") else tmp_path / "d.png"
    )
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 50_000


def test_no_console_errors(console: dict[str, Console]) -> None:
    assert console["page"].errors == []


def test_csp_blocks_inline_script_and_the_page_has_none(stack: Stack, browser: Browser) -> None:
    context = browser.new_context()
    page = context.new_page()
    violations = Console(page)
    page.goto(f"{stack.base}/login")
    page.fill("#token", stack.token)  # the dashboard's own token may log in too
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{stack.base}/")
    html = httpx.get(f"{stack.base}/", cookies={"pycm_session": _session(context)}).text
    assert "<script" in html and not re.search(r"<script(?![^>]*\bsrc=)", html), "no inline"
    assert " style=" not in html and "<style" not in html
    ran = page.evaluate(
        """() => { const s = document.createElement('script');
                   s.textContent = 'window.inlineRan = true'; document.body.append(s);
                   return window.inlineRan === true; }"""
    )
    assert ran is False
    assert any("Content Security Policy" in m for m in violations.errors)
    context.close()


def _hover_shows(page: Page, text: str) -> bool:
    for marker in page.locator("#incident-lanes .marker.lease").all():
        marker.hover()
        tip = page.locator("#incident-tip")
        if tip.is_visible() and text in tip.inner_text():
            return True
    return False


def _session(context: BrowserContext) -> str:
    [cookie] = [c for c in context.cookies() if c["name"] == "pycm_session"]
    return str(cookie["value"])


def test_replay_of_a_recording_plays_and_pauses(stack: Stack, browser: Browser) -> None:
    """``pycm dashboard --replay`` of a replica's --trace-file: the page's replay bar drives it."""
    import subprocess
    import sys

    recording = stack.tmp / "replica-a.jsonl"
    argv = [sys.executable, "-m", "pycm", "dashboard", "--replay", str(recording)]
    proc = subprocess.Popen(
        [*argv, "--listen", "127.0.0.1:0", "--speed", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("pycm dashboard: serving "), line
        page = context.new_page()
        console = Console(page)
        page.goto(line.split("serving ", 1)[1].strip())
        expect(page.locator("#mode")).to_have_text("replay", timeout=WAIT_MS)
        expect(page.locator("#replay-bar")).to_be_visible()
        play = page.locator("#replay-play")
        if play.get_attribute("aria-pressed") == "true":
            play.click()
            expect(play).to_have_attribute("aria-pressed", "false", timeout=WAIT_MS)
        held = page.locator("#replay-position").inner_text()
        play.click()
        expect(play).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
        poll(
            lambda: page.locator("#replay-position").inner_text() != held,
            20,
            "the replay position to move",
        )
        expect(page.locator('.card[data-identity="replica-a"]')).to_have_count(1, timeout=WAIT_MS)
        page.keyboard.press("Space")
        expect(play).to_have_attribute("aria-pressed", "false", timeout=WAIT_MS)
        assert console.errors == []
    finally:
        context.close()
        proc.terminate()
        proc.wait(20)
        assert proc.stdout is not None
        proc.stdout.close()
