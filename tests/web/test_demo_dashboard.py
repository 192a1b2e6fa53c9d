"""``pycm demo --no-tui`` prints a login URL for its dashboard: the three replicas side by side,
the leader's name in their states; Ctrl-C stops it all."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_LINE = re.compile(
    r"^pycm demo: dashboard (http://127\.0\.0\.1:\d+/dashboard/login\?code=\S+)$"
)

LEASE_ACQUIRED = re.compile(r" replica-[abc] lease\.acquired ")

pytestmark = pytest.mark.e2e


def _holders(doc: dict[str, Any]) -> set[str]:
    return {
        lease.get("holder", "")
        for source in doc["sources"]
        for lease in source["snapshot"].get("leases", {}).values()
    } - {""}


def _read_lines(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip("\n"))


def _wait_for_line(lines: list[str], pattern: re.Pattern[str], deadline: float) -> re.Match[str]:
    seen = 0
    while time.monotonic() < deadline:
        for line in lines[seen:]:
            if match := pattern.search(line):
                return match
        seen = len(lines)
        time.sleep(0.05)
    raise AssertionError(f"no line matching {pattern.pattern!r}; the last lines: {lines[-20:]}")


def test_demo_prints_a_dashboard_login_url_showing_its_three_replicas(tmp_path: Path) -> None:
    stderr_path = tmp_path / "demo.stderr"
    with (
        stderr_path.open("w") as stderr,
        subprocess.Popen(
            [sys.executable, "-m", "pycm", "demo", "--no-tui"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        ) as proc,
    ):
        assert proc.stdout is not None
        # Its whole output is read all along (a full pipe would stall the demo's event loop).
        lines: list[str] = []
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 90
            url = _wait_for_line(lines, DASHBOARD_LINE, deadline)[1]
            base = url.split("/dashboard/", 1)[0]
            with httpx.Client(timeout=10) as http:
                login = http.get(url)
                assert login.status_code == 303
                cookie = {"Cookie": login.headers["set-cookie"].split(";", 1)[0]}
                assert http.get(url).status_code == 401  # the code works once
                doc: dict[str, Any] = {}
                while time.monotonic() < deadline:
                    doc = http.get(f"{base}/dashboard/api/state", headers=cookie).json()
                    connected = [s["status"]["state"] == "connected" for s in doc["sources"]]
                    if all(connected) and _holders(doc):
                        break
                    time.sleep(0.5)
                assert [s["name"] for s in doc["sources"]] == [
                    "replica-a",
                    "replica-b",
                    "replica-c",
                ]
                assert all(s["status"]["state"] == "connected" for s in doc["sources"]), doc
                assert _holders(doc) <= {"replica-a", "replica-b", "replica-c"}
                assert len(_holders(doc)) == 1, _holders(doc)
            # The demo's verdict counts the leaders its own streams saw acquire: the dashboard
            # (its own connections) can show the holder a moment before that, so Ctrl-C waits
            # for the demo to print the acquisition, or an exit 1 would be the test's race.
            _wait_for_line(lines, LEASE_ACQUIRED, deadline)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
            reader.join(timeout=10)
            assert code == 0, (lines[-20:], stderr_path.read_text()[-4000:])
            assert any(line.startswith("pycm demo: ok: leader(s) elected:") for line in lines)
        finally:
            if proc.poll() is None:
                proc.kill()
