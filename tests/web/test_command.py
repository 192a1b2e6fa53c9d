"""``pycm dashboard``: bad input exits 2 with one line; a recording is served with its controls;
the process prints its login URL and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from pycm.cli import main
from pycm.trace import kinds as k
from pycm.trace.codec import encode
from pycm.trace.events import Event
from pycm.trace.replay import ReplayPlayer, load_recording
from tests.web.streams import T0, S, added, parse_frames
from web.hub import DashboardConfig, Hub
from web.plan import DashboardPlan
from web.server import serve

ROOT = Path(__file__).resolve().parents[2]
_URL = re.compile(
    r"^pycm dashboard: serving (http://127\.0\.0\.1:\d+)/dashboard/login\?code=(\S+)$"
)


def _recording(path: Path, events: list[Event]) -> Path:
    path.write_bytes(b"".join(encode(e) + b"\n" for e in events))
    return path


def _two_replicas() -> list[Event]:
    out: list[Event] = []
    for seq in range(1, 4):
        out.append(added(seq, "r1", ts=T0 + seq * S))
        out.append(added(seq, "r2", ts=T0 + seq * S + 1))
    out.append(
        k.LeaseAcquired(
            lease="kube-system/pycm", identity="r2", seq=4, ts=T0 + 4 * S, instance="r2"
        )
    )
    return out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param([], "give --server URL (repeatable) or --replay FILE", id="nothing"),
        pytest.param(
            ["--replay", "/no/such/file"], "--replay /no/such/file: no such file", id="no-file"
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:1"],
            # The viewers' one message (pycm.trace.credentials), which names every way in.
            "no credentials for the managers: give --token, --token-file FILE, --kubeconfig FILE",
            id="no-creds",
        ),
        pytest.param(
            ["--server", "ftp://x", "--token-file", "TOKEN"],
            "--server 'ftp://x': want https://host:port",
            id="bad-url",
        ),
        pytest.param(
            [
                "--server",
                "https://127.0.0.1:1",
                "--server",
                "https://127.0.0.1:1/",
                "--token-file",
                "TOKEN",
            ],
            "given twice",
            id="twice",
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:1", "--token-file", "EMPTY"],
            "token file EMPTY is empty",
            id="empty-token",
        ),
        pytest.param(
            # Was --token-file with --kubeconfig: every viewer now lets its flags override the
            # kubeconfig, as kubectl does; the two tokens are what exclude each other.
            ["--server", "https://127.0.0.1:1", "--token", "x", "--token-file", "TOKEN"],
            "--token and --token-file are mutually exclusive",
            id="token-and-token-file",
        ),
        pytest.param(
            [
                "--server",
                "https://127.0.0.1:1",
                "--token-file",
                "TOKEN",
                "--client-certificate",
                "TOKEN",
            ],
            "--client-certificate and --client-key go together",
            id="cert-without-key",
        ),
        pytest.param(
            [
                "--server",
                "https://127.0.0.1:1",
                "--token-file",
                "TOKEN",
                "--certificate-authority",
                "TOKEN",
            ],
            "--certificate-authority TOKEN:",
            id="ca-not-pem",
        ),
        pytest.param(
            ["--replay", "REC", "--listen", "10.0.0.1:8080"],
            "loopback addresses only",
            id="not-loopback",
        ),
        pytest.param(["--replay", "REC", "--listen", "8080"], "want HOST:PORT", id="bad-listen"),
        pytest.param(["--replay", "REC", "--speed", "0"], "--speed must be > 0", id="speed"),
        pytest.param(
            ["--replay", "REC", "--jaeger-url", "jaeger:16686"], "--jaeger-url", id="jaeger"
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:1", "--kubeconfig", "TOKEN"],
            "kubeconfig TOKEN: ",
            id="bad-kubeconfig",
        ),
        pytest.param(
            ["--replay", "TOKEN"],
            "--replay TOKEN: not a recording: none of its 1 line(s) is an event (line 1: ",
            id="replay-not-a-recording",
        ),
        pytest.param(["--replay", "."], "--replay .: not a file", id="replay-a-directory"),
        pytest.param(
            ["--server", "https://[::1", "--token-file", "TOKEN"],
            "--server 'https://[::1': want https://host:port (Invalid IPv6 URL)",
            id="server-unparsable",
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:1 x", "--token-file", "TOKEN"],
            "--server 'https://127.0.0.1:1 x': want https://host:port",
            id="server-with-a-space",
        ),
        pytest.param(
            ["--replay", "REC", "--jaeger-url", "http://[::1"],
            "--jaeger-url 'http://[::1': want http(s)://host:port (Invalid IPv6 URL)",
            id="jaeger-unparsable",
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:99999", "--token-file", "TOKEN"],
            "--server 'https://127.0.0.1:99999': want https://host:port (Port out of range",
            id="server-port-out-of-range",
        ),
        pytest.param(
            ["--server", "https://127.0.0.1:1", "--token-file", "."],
            "--token-file .: not a file",
            id="token-file-a-directory",
        ),
    ],
)
def test_dashboard_bad_input_exits_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "TOKEN").write_text("secret-token\n")
    (tmp_path / "EMPTY").write_text("\n")
    _recording(tmp_path / "REC", _two_replicas())
    os.chdir(tmp_path)
    assert main(["dashboard", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pycm dashboard: ") and message in err, err
    assert "secret-token" not in err and "Traceback" not in err


def test_dashboard_replay_of_a_damaged_recording_says_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _recording(tmp_path / "REC", _two_replicas())
    with recording.open("ab") as f:
        f.write(b"garbage\n")
    served: list[int] = []

    async def serve_nothing(plan: DashboardPlan, events: list[Event], **_: Any) -> int:
        served.append(len(events))  # (serving itself is the tests' above)
        return 0

    monkeypatch.setattr("web.server.serve", serve_nothing)
    assert main(["dashboard", "--replay", str(recording)]) == 0
    assert served == [len(_two_replicas())]
    assert capsys.readouterr().err == (
        f"pycm dashboard: --replay {recording}: skipped 1 line(s) that are not events\n"
    )


async def _login(client: httpx.AsyncClient, base: str, code: str) -> dict[str, str]:
    """Exchange the code for the session cookie (sent by hand: it is Secure, this is http)."""
    response = await client.get(f"{base}/dashboard/login", params={"code": code})
    assert response.status_code == 303, response.text
    cookie = response.headers["set-cookie"].split(";", 1)[0]
    return {"Cookie": cookie, "Origin": base}


def _plan(path: Path, **kw: Any) -> DashboardPlan:
    return DashboardPlan(
        "replay",
        "127.0.0.1",
        0,
        DashboardConfig(jaeger_url="http://127.0.0.1:16686"),
        replay=str(path),
        **kw,
    )


@pytest.mark.asyncio
async def test_dashboard_replay_serves_each_instance_as_a_source_with_controls(
    tmp_path: Path,
) -> None:
    recording = _recording(tmp_path / "trace.jsonl", _two_replicas())
    events, bad = load_recording(str(recording))
    assert bad == 0
    lines: list[str] = []
    stop = asyncio.Event()
    server = asyncio.create_task(
        serve(_plan(recording, speed=1e6), events=events, stop=stop, out=lines.append)
    )
    try:
        for _ in range(500):
            if lines or server.done():
                break
            await asyncio.sleep(0.01)
        match = _URL.match(lines[0])
        assert match, lines
        base, code = match.groups()
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.get(base + "/dashboard/api/state")).status_code == 401
            redirect = await client.get(base + "/")
            assert (redirect.status_code, redirect.headers["location"]) == (307, "/dashboard/")
            headers = await _login(client, base, code)
            again = await client.get(f"{base}/dashboard/login", params={"code": code})
            assert again.status_code == 401  # one use only

            async def state() -> dict[str, Any]:
                r = await client.get(base + "/dashboard/api/state", headers=headers)
                assert r.status_code == 200
                return dict(r.json())

            doc = await state()
            for _ in range(200):
                if doc["replay"]["position_ts"] == T0 + 4 * S:
                    break
                await asyncio.sleep(0.02)
                doc = await state()
            assert (
                doc["mode"] == "replay" and doc["config"]["jaeger_url"] == "http://127.0.0.1:16686"
            )
            assert [s["name"] for s in doc["sources"]] == ["r1", "r2"]
            r2 = doc["sources"][1]
            assert r2["snapshot"]["queues"]["r2"]["deployment"]["adds"] == 3
            assert [i["type"] for i in r2["incidents"]] == ["lease"]
            assert doc["replay"]["end_ts"] == T0 + 4 * S

            post = await client.post(
                base + "/dashboard/api/replay", json={"action": "pause"}, headers=headers
            )
            assert post.status_code == 204
            post = await client.post(
                base + "/dashboard/api/replay",
                json={"action": "seek", "value": -2.0},
                headers=headers,
            )
            assert post.status_code == 204
            doc = await state()
            assert doc["replay"]["playing"] is False and doc["replay"]["position_ts"] == T0 + 2 * S
            # Back to T0+2s: r1's event at 2s is in, r2's (a nanosecond later) is not yet.
            assert doc["sources"][0]["snapshot"]["queues"]["r1"]["deployment"]["adds"] == 2
            assert doc["sources"][1]["snapshot"]["queues"]["r2"]["deployment"]["adds"] == 1
            bad_body = await client.post(
                base + "/dashboard/api/replay", json={"action": "rewind"}, headers=headers
            )
            assert bad_body.status_code == 400
            bad_speed = await client.post(
                base + "/dashboard/api/replay",
                json={"action": "speed", "value": -1},
                headers=headers,
            )
            assert bad_speed.status_code == 400

            async with client.stream(
                "GET", base + "/dashboard/api/stream", headers=headers
            ) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                data = b""
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if data.count(b"\n\n") >= 3:
                        break
            frames = parse_frames(data)
            assert [name for name, _, _ in frames[:3]] == ["hello", "events", "events"]
            assert frames[1][1] == "r1:2" and [e["seq"] for e in frames[1][2]["events"]] == [1, 2]
    finally:
        stop.set()
        assert await asyncio.wait_for(server, 15) == 0


@pytest.mark.asyncio
async def test_dashboard_api_replay_is_404_when_not_replaying() -> None:
    from starlette.applications import Starlette

    from tests.web.streams import serving
    from web.hub import Hub
    from web.live import live_routes

    app = Starlette(routes=live_routes(Hub("fanin")))
    async with serving(app) as base, httpx.AsyncClient() as client:
        r = await client.post(base + "/api/replay", json={"action": "play"})
        assert r.status_code == 404


def test_dashboard_process_prints_its_login_url_and_stops_on_sigterm(tmp_path: Path) -> None:
    recording = _recording(tmp_path / "trace.jsonl", _two_replicas())
    argv = ["dashboard", "--replay", str(recording), "--listen", "127.0.0.1:0"]
    with (
        (tmp_path / "stderr").open("w") as err,
        subprocess.Popen(
            [sys.executable, "-m", "pycm", *argv],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        ) as proc,
    ):
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            match = _URL.match(line)
            assert match, (line, (tmp_path / "stderr").read_text())
            response = httpx.get(match[1] + "/dashboard/login", timeout=10)
            assert response.status_code == 200 and "token" in response.text
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.returncode == 0, (tmp_path / "stderr").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize(
    ("recorded", "timings"),
    [
        # The recorded managers' electors put their timings in the trace.
        pytest.param(True, (3.0, 4.0), id="as-recorded"),
        # A recording made before lease.election_configured: nothing in the state (the page
        # falls back to kube's defaults, which hello carries, and marks them).
        pytest.param(False, (0.0, 0.0), id="older-recording"),
    ],
)
def test_dashboard_replay_gauge_timings_are_the_recorded_managers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded: bool, timings: tuple[float, float]
) -> None:
    # The recorded manager ran with a 3 s renew deadline and a 4 s lease (the demo's); its
    # flags.parsed lists them too, with a comma inside a value, which nothing re-parses now.
    changed = "controllers=a,b,leader-elect-lease-duration=4s,leader-elect-renew-deadline=3s"
    flags_parsed = k.FlagsParsed(command="run", changed=changed, seq=1, ts=T0)
    configured = k.LeaderElectionConfigured(
        lease="kube-system/pycm",
        identity="r2",
        lease_duration_s=4.0,
        renew_deadline_s=3.0,
        retry_period_s=1.0,
        seq=2,
        ts=T0 + 1,
        instance="r2",
    )
    events = [flags_parsed, *([configured] if recorded else []), *_two_replicas()]
    recording = _recording(tmp_path / "REC", events)
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    async def serve_nothing(plan: DashboardPlan, events: list[Event], **_: Any) -> int:
        hub = Hub("replay", plan.config)
        player = ReplayPlayer(hub, events, speed=1.0)
        player.seek(3600)
        seen.append((hub.state()["config"], dict(hub.sources["r2"].snapshot()["leases"])))
        return 0

    monkeypatch.setattr("web.server.serve", serve_nothing)
    assert main(["dashboard", "--replay", str(recording)]) == 0
    [(config, leases)] = seen
    lease = leases["kube-system/pycm"]
    assert (lease["renew_deadline_s"], lease["lease_duration_s"]) == timings
    assert config["kube_defaults"] == {
        "lease_duration_s": 15.0,
        "renew_deadline_s": 10.0,
        "retry_period_s": 2.0,
    }
    assert "renew_deadline_s" not in config  # no page-wide timing: each lease has its own


def test_dashboard_has_no_timing_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # The lease timings come from the trace (lease.election_configured), not from flags.
    with pytest.raises(SystemExit) as exit_info:
        main(["dashboard", "--replay", "REC", "--renew-deadline", "20s"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --renew-deadline 20s" in capsys.readouterr().err
