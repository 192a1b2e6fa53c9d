"""``pycm demo --no-tui`` prints a login URL for its dashboard: the three replicas side by side,
the leader's name in their states; Ctrl-C stops it all."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_LINE = re.compile(
    r"^pycm demo: dashboard (http://127\.0\.0\.1:\d+/dashboard/login\?code=\S+)$"
)

pytestmark = pytest.mark.e2e


def _holders(doc: dict[str, Any]) -> set[str]:
    return {
        lease.get("holder", "")
        for source in doc["sources"]
        for lease in source["snapshot"].get("leases", {}).values()
    } - {""}


def test_demo_prints_a_dashboard_login_url_showing_its_three_replicas() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "pycm", "demo", "--no-tui"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            url = None
            deadline = time.monotonic() + 90
            while url is None and time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, "the demo ended before printing its dashboard"
                if match := DASHBOARD_LINE.match(line.strip()):
                    url = match[1]
            assert url is not None
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
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
