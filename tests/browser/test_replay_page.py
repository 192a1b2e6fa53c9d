"""The page over a real ``pycm dashboard --replay`` process: what it shows must be the recording
as of the replay position."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from pycm.trace.codec import encode
from tests.browser.conftest import poll
from tests.web.streams import T0, S, added

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WAIT_MS = 15_000
EVENTS = 100  # one a second of event time


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``replay(speed, events=EVENTS)``: the login URL of ``pycm dashboard --replay`` of a
    recording of an event a second (of 100 s by default: at full speed it is at the end at
    once)."""
    procs: list[subprocess.Popen[str]] = []

    def start(speed: float, events: int = EVENTS) -> str:
        recording = tmp_path / f"trace-{len(procs)}.jsonl"
        recorded = [added(seq, "r1", ts=T0 + seq * S) for seq in range(1, events + 1)]
        recording.write_bytes(b"".join(encode(e) + b"\n" for e in recorded))
        argv = [sys.executable, "-m", "pycm", "dashboard", "--replay", str(recording)]
        proc = subprocess.Popen(
            [*argv, "--listen", "127.0.0.1:0", "--speed", str(speed)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("pycm dashboard: serving "), line
        return line.split("serving ", 1)[1].strip()

    try:
        yield start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(20)
            assert proc.stdout is not None
            proc.stdout.close()


def _logged(page: Page) -> list[int]:
    return list(
        page.evaluate("window.pycmDashboard.model.recent(2000, () => true).map(e => e.ev.seq)")
    )


def test_replay_seek_back_leaves_no_later_event_in_the_log(
    replay: Callable[..., str], page: Page
) -> None:
    page.goto(replay(1e6))
    expect(page.locator("#mode")).to_have_text("replay", timeout=WAIT_MS)
    poll(lambda: _logged(page)[-1:] == [EVENTS], 15, "the replay to reach its end")
    for action, value in (("pause", 0), ("seek", -50)):  # (playing on, it would be at the end)
        status = page.evaluate(
            """([action, value]) => fetch("api/replay", {
                 method: "POST", headers: {"Content-Type": "application/json"},
                 body: JSON.stringify({action, value})}).then(r => r.status)""",
            [action, value],
        )
        assert status == 204, action
    # Back at the 50th second: the log is the recording up to there, as if played to it.
    poll(
        # (ns past 2**53: the page's numbers are exact to the second, not the nanosecond)
        lambda: (
            page.evaluate("Math.round(window.pycmDashboard.model.replay.position_ts / 1e9)")
            == (T0 + 50 * S) // S
        ),
        15,
        "the replay position to go back",
        lambda: str(page.evaluate("JSON.stringify(window.pycmDashboard.model.replay)")),
    )
    poll(lambda: _logged(page)[-1:] == [EVENTS - 50], 15, "the log to end at the position")
    assert _logged(page) == list(range(1, EVENTS - 50 + 1))
    expect(page.locator("#log-list li")).to_have_count(EVENTS - 50)
    expect(page.locator("#frame-info")).to_have_text("")  # nothing was a repeat


@pytest.mark.parametrize(
    ("speed", "shown"),
    [pytest.param(4, "4×", id="a-listed-speed"), pytest.param(50, "50×", id="another-speed")],
)
def test_replay_speed_menu_shows_the_speed_playing(
    replay: Callable[..., str], page: Page, speed: float, shown: str
) -> None:
    page.goto(replay(speed))
    expect(page.locator("#replay-position")).to_contain_text(f" · {speed}×", timeout=WAIT_MS)
    menu = page.locator("#replay-speed")
    expect(menu).to_have_value(str(speed))
    assert menu.evaluate("m => m.selectedOptions[0].textContent") == shown
    # Another choice from the menu is sent, and the menu follows what the server plays.
    menu.select_option("2")
    expect(page.locator("#replay-position")).to_contain_text(" · 2×", timeout=WAIT_MS)
    expect(menu).to_have_value("2")


def test_replay_of_an_empty_recording_says_so(replay: Callable[..., str], page: Page) -> None:
    """It showed a clock at 00:00:00 and "100%", as if a recording had played to its end."""
    page.goto(replay(1, events=0))
    expect(page.locator("#mode")).to_have_text("replay", timeout=WAIT_MS)
    expect(page.locator("#replay-position")).to_have_text(
        "no events in this recording", timeout=WAIT_MS
    )
    expect(page.locator("#replay-play")).to_be_disabled()
