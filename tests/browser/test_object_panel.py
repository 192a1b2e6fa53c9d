"""The object panel ("why did it run?") over a real ``pycm dashboard --replay --jaeger-url`` of a
recording written here: kubectl-scale updates a Deployment; its reconcile creates a ReplicaSet;
that one's reconcile is triggered by the create. One process and one logged-in page for the
module (a login code is one-time); the tests run in file order on that page. The last test
draws a made-up picture instead (the queue drill-down's keys, no Jaeger)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from pycm.trace import kinds as k
from pycm.trace.codec import encode
from pycm.trace.events import Event
from tests.browser.conftest import CHROMIUM, Console, ScriptedDashboard, hello
from tests.web.streams import T0, S

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
JAEGER = "http://jaeger.test:16686"
WAIT_MS = 15_000
D_SPAN, R_SPAN = "00000000000000d1", "00000000000000e1"
D_TRACE, R_TRACE = "1" * 16 + "d" * 16, "1" * 16 + "e" * 16
RS_PATH = "replicasets/default/web-6dc5"


def _recording() -> list[Event]:
    ms = S // 1000
    return [
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            namespace="default",
            name="web",
            resource="deployments",
            queue_wait_ms=2.0,
            trigger_kind="Deployment",
            trigger_object="default/web",
            trigger_event="update",
            trigger_rv="12",
            trigger_paths="spec.replicas",
            trigger_writer="kubectl-scale",
            trigger_operation="Update",
            trigger_merged=1,
            seq=1,
            ts=T0 + S,
            span_id=D_SPAN,
            trace_id=D_TRACE,
            instance="r1",
        ),
        k.ApiRequestCompleted(
            verb="create",
            method="POST",
            resource="replicasets",
            namespace="default",
            name="web-6dc5",
            code=201,
            resource_version="13",
            seq=2,
            ts=T0 + S + 3 * ms,
            span_id="00000000000000a1",
            parent_id=D_SPAN,
            trace_id=D_TRACE,
            dur_ns=ms,
            instance="r1",
        ),
        k.ReconcileFinished(
            controller="deployment",
            key="default/web",
            action="created_replicaset",
            api_calls=1,
            seq=3,
            ts=T0 + S + 5 * ms,
            span_id=D_SPAN,
            trace_id=D_TRACE,
            dur_ns=5 * ms,
            instance="r1",
        ),
        k.ReconcileStarted(
            controller="replicaset",
            key="default/web-6dc5",
            resource="replicasets",
            queue_wait_ms=1.0,
            trigger_kind="ReplicaSet",
            trigger_object="default/web-6dc5",
            trigger_event="add",
            trigger_rv="13",
            trigger_trace_id=D_TRACE,
            trigger_span_id=D_SPAN,
            trigger_controller="deployment",
            trigger_key="default/web",
            trigger_verb="create",
            trigger_merged=1,
            seq=4,
            ts=T0 + S + 10 * ms,
            span_id=R_SPAN,
            trace_id=R_TRACE,
            instance="r1",
        ),
        k.EventRecorded(
            type="Normal",
            reason="SuccessfulCreate",
            object_kind="ReplicaSet",
            namespace="default",
            name="web-6dc5",
            seq=5,
            ts=T0 + S + 12 * ms,
            parent_id=R_SPAN,
            trace_id=R_TRACE,
            instance="r1",
        ),
        k.ReconcileFinished(
            controller="replicaset",
            key="default/web-6dc5",
            action="created_pods",
            seq=6,
            ts=T0 + S + 14 * ms,
            span_id=R_SPAN,
            trace_id=R_TRACE,
            dur_ns=4 * ms,
            instance="r1",
        ),
    ]


@pytest.fixture(scope="module")
def login_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    recording = tmp_path_factory.mktemp("why") / "trace.jsonl"
    recording.write_bytes(b"".join(encode(e) + b"\n" for e in _recording()))
    argv = [sys.executable, "-m", "pycm", "dashboard", "--replay", str(recording)]
    argv += ["--listen", "127.0.0.1:0", "--speed", "1e6", "--jaeger-url", JAEGER]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("pycm dashboard: serving "), line
        yield line.split("serving ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def session(browser: Browser, login_url: str) -> Iterator[tuple[Page, Console]]:
    """One page, logged in once, at the replay's end (every event played), and its console."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is not installed")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    console = Console(page)
    page.goto(login_url)
    expect(page.locator("#mode")).to_have_text("replay", timeout=WAIT_MS)
    expect(page.locator("#log-list li")).to_have_count(6, timeout=WAIT_MS)
    yield page, console
    assert console.errors == []
    context.close()


@pytest.fixture
def why(session: tuple[Page, Console]) -> Page:
    return session[0]


def _search(page: Page, text: str) -> None:
    box = page.locator("#object-search")
    box.fill(text)
    box.press("Enter")


def _lanes(page: Page) -> list[str | None]:
    lanes = page.locator("#object-chain .chain-lane")
    return [lanes.nth(i).get_attribute("data-lane") for i in range(lanes.count())]


def test_object_search_opens_the_chain_across_controllers_from_kubectl_scale(why: Page) -> None:
    panel = why.locator("#object-panel")
    expect(panel).to_be_hidden()
    _search(why, RS_PATH)
    expect(panel).to_be_visible(timeout=WAIT_MS)
    expect(why.locator("#object-h")).to_have_text(RS_PATH)
    assert why.evaluate("location.hash") == f"#object={RS_PATH}"
    # One lane per controller, the outside writer's on top: the root cause first.
    assert _lanes(why) == ["outside", "deployment", "replicaset"]
    marks = why.locator("#object-chain .chain-mark")
    expect(marks).to_have_count(3)
    whats = [marks.nth(i).get_attribute("data-what") for i in range(3)]
    assert whats == ["writer", "write", "reconcile"]
    assert [marks.nth(i).get_attribute("data-lane") for i in range(3)] == _lanes(why)
    root = marks.nth(0).get_attribute("title") or ""
    assert "writer: kubectl-scale" in root and "paths: spec.replicas" in root, root
    write = marks.nth(1).get_attribute("title") or ""
    assert "verb: create" in write and "rv: 13" in write and "key: default/web" in write, write
    # Left to right in time; two arrows, cause to effect.
    xs = [marks.nth(i).evaluate("m => m.getBoundingClientRect().left") for i in range(3)]
    assert xs == sorted(xs) and xs[0] < xs[2], xs
    expect(why.locator("#object-chain .chain-arrow")).to_have_count(2)
    # Each reconcile links to its trace in Jaeger.
    assert marks.nth(2).get_attribute("href") == f"{JAEGER}/trace/{R_TRACE}"
    assert marks.nth(1).get_attribute("href") == f"{JAEGER}/trace/{D_TRACE}"
    causes = why.locator("#object-causes li")
    expect(causes).to_have_count(3)
    assert "kubectl-scale" in causes.nth(2).inner_text()
    links = why.locator("#object-causes a.trace-id")
    assert [links.nth(i).get_attribute("href") for i in range(links.count())] == [
        f"{JAEGER}/trace/{R_TRACE}",
        f"{JAEGER}/trace/{D_TRACE}",
    ]
    # The recent history, newest first: the event, the reconcile, the watch event, the write.
    rows = why.locator("#object-history tbody tr")
    steps = [rows.nth(i).get_attribute("data-step") for i in range(rows.count())]
    assert steps == ["event", "reconcile", "watch", "write"]
    reconcile = rows.nth(1).locator("td").all_inner_texts()
    assert reconcile[2:7] == [
        "reconcile",
        "replicaset",
        "default/web-6dc5",
        "success created_pods",
        "13",
    ]
    assert "4.0 ms" in reconcile[7]
    expect(rows.nth(1).locator("a.trace-id")).to_have_attribute("href", f"{JAEGER}/trace/{R_TRACE}")
    expect(why.locator("#object-empty")).to_be_hidden()


def test_object_escape_closes_the_panel_and_the_hash(why: Page) -> None:
    expect(why.locator("#object-panel")).to_be_visible()
    why.locator("body").press("Escape")
    expect(why.locator("#object-panel")).to_be_hidden()
    assert why.evaluate("location.hash") == ""


def test_object_bare_key_resolves_deployments_first(why: Page) -> None:
    _search(why, "default/web")
    expect(why.locator("#object-h")).to_have_text("deployments/default/web", timeout=WAIT_MS)
    assert _lanes(why) == ["outside", "deployment"]
    why.keyboard.press("Escape")
    expect(why.locator("#object-panel")).to_be_hidden()


def test_object_click_on_a_key_in_the_event_log_opens_it(why: Page) -> None:
    key = why.locator('#log-list [data-object="default/web-6dc5"]').first
    key.click()
    expect(why.locator("#object-panel")).to_be_visible(timeout=WAIT_MS)
    expect(why.locator("#object-h")).to_have_text(RS_PATH)
    why.keyboard.press("Escape")
    expect(why.locator("#object-panel")).to_be_hidden()


def test_object_click_on_a_slowest_key_opens_it(why: Page) -> None:
    key = why.locator('#keys-table [data-object="default/web"]').first
    expect(key).to_be_visible(timeout=WAIT_MS)
    assert key.get_attribute("data-controller") == "deployment"
    key.click()
    expect(why.locator("#object-h")).to_have_text("deployments/default/web", timeout=WAIT_MS)
    why.keyboard.press("Escape")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("Default/Web", "'Default' is not a valid namespace", id="bad-key"),
        pytest.param("gizmos/default/web", "unknown resource 'gizmos'", id="unknown-resource"),
        pytest.param("a/b/c/d", "want resource/namespace/name", id="four-parts"),
        pytest.param("   ", "type an object", id="blank"),
    ],
)
def test_object_bad_input_says_so_inline(
    session: tuple[Page, Console], text: str, message: str
) -> None:
    why, console = session
    # The browser logs every 4xx answer of a fetch; the page itself logs nothing.
    console.expected.append("the server responded with a status of 400")
    _search(why, text)
    error = why.locator("#object-search-error")
    expect(error).to_be_visible(timeout=WAIT_MS)
    expect(error).to_contain_text(message)
    expect(why.locator("#object-panel")).to_be_hidden()
    why.locator("#object-search").fill("")  # typing again clears the message
    expect(error).to_be_hidden()


def test_object_nothing_touched_says_no_steps_yet(why: Page) -> None:
    _search(why, "pods/default/ghost")
    expect(why.locator("#object-panel")).to_be_visible(timeout=WAIT_MS)
    expect(why.locator("#object-empty")).to_have_text("no steps of it yet")
    expect(why.locator("#object-history tbody tr")).to_have_count(0)
    why.keyboard.press("Escape")


def test_object_hash_opens_it_and_the_panel_follows_the_replay_back(why: Page) -> None:
    why.goto(why.url.split("#", 1)[0] + f"#object={RS_PATH}")
    expect(why.locator("#object-panel")).to_be_visible(timeout=WAIT_MS)
    expect(why.locator("#object-history tbody tr")).to_have_count(4, timeout=WAIT_MS)
    # Back to the first event (the deployment's reconcile began): nothing touched the
    # ReplicaSet yet, and the open panel says so at its next frame.
    for action, value in (("pause", 0), ("seek", -3600)):
        status = why.evaluate(
            """([action, value]) => fetch("api/replay", {
                 method: "POST", headers: {"Content-Type": "application/json"},
                 body: JSON.stringify({action, value})}).then(r => r.status)""",
            [action, value],
        )
        assert status == 204, action
    expect(why.locator("#object-empty")).to_be_visible(timeout=WAIT_MS)
    expect(why.locator("#object-history tbody tr")).to_have_count(0)


def test_object_click_in_the_queue_drill_down_asks_with_its_controller_and_copies_traces(
    scripted: ScriptedDashboard, page: Page
) -> None:
    """Without --jaeger-url a reconcile's trace id is text with a copy button. (Made-up
    messages; the object answer is the page's own request, answered here.)"""
    asked: list[str] = []
    view = {
        "path": "deployments/default/flaky",
        "resource": "deployments",
        "namespace": "default",
        "name": "flaky",
        "now_ts": T0 + 2 * S,
        "dropped": 0,
        "candidates": [],
        "sources": [{"source": "r1", "error": ""}],
        "steps": [
            {
                "ts": T0 + S,
                "instance": "r1",
                "step": "reconcile",
                "controller": "deployment",
                "key": "default/flaky",
                "result": "error",
                "error": "503",
                "trace_id": D_TRACE,
                "span_id": D_SPAN,
                "dur_ns": S // 100,
                "wait_ms": 0.5,
                "merged": 1,
                "rv": "",
            },
        ],
        "chain": [
            {
                "what": "reconcile",
                "text": "deployments default/flaky reconciled by deployment",
                "ts": T0 + S,
                "at": T0 + S,
                "lane": "deployment",
                "controller": "deployment",
                "key": "default/flaky",
                "trace_id": D_TRACE,
                "span_id": D_SPAN,
            },
            {
                "what": "none",
                "text": "because its key was enqueued without a recorded cause",
                "ts": 0,
                "at": T0 + S,
                "lane": "outside",
                "controller": "",
                "trace_id": "",
            },
        ],
    }

    def answer(route: Route) -> None:
        asked.append(route.request.url.split("?", 1)[1])
        route.fulfill(status=200, content_type="application/json", body=json.dumps(view))

    page.route("**/api/objects?*", answer)
    now = time.time_ns()
    page.goto(scripted.page([hello([{"name": "r1", "snapshot": _queue_snapshot(now)}])]))
    page.locator('#controllers-table tbody tr[data-controller="r1/deployment"]').click(
        timeout=WAIT_MS
    )
    page.locator('#queue-backing-off [data-object="default/flaky"]').click()
    expect(page.locator("#object-h")).to_have_text("deployments/default/flaky", timeout=WAIT_MS)
    assert asked[0] == "ref=default%2Fflaky&controller=deployment"
    assert _lanes(page) == ["outside", "deployment"]
    assert page.locator("#object-panel a.trace-id").count() == 0
    expect(page.locator("#object-causes li").first.locator("code.trace-id")).to_have_text(D_TRACE)
    expect(page.locator("#object-history button.copy")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(page.locator("#object-panel")).to_be_hidden()


def _queue_snapshot(now: int) -> dict[str, Any]:
    backing = {"key": "default/flaky", "since_ts": now - S, "retries": 2, "due_ts": now + S}
    contents = {"backing_off_count": 1, "backing_off": [backing]}
    return {
        "v": 1,
        "now_ts": now,
        "instances": {"r1": {"role": "leader", "first_ts": now - 100 * S, "last_seq": 1}},
        "controllers": {"r1": {"deployment": {"reconciles": 1, "errors": 1}}},
        "queues": {"r1": {"deployment": {"depth": 1, "contents": contents}}},
    }
