"""``pycm lease watch``'s pure parts: the tracker, the flap detector, the line, the command."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pycm.kube.errors import TransportError
from pycm.leaderelection.record import format_micro_time
from pycm.leaderelection.watch import (
    FlapDetector,
    LeaseTracker,
    format_change,
    parse_lease_ref,
    watch_lease,
)
from pycm.trace.bus import Bus
from pycm.trace.kinds import LeaderObserved

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000 * 1_000_000_000  # a wall clock, Unix ns


def lease(holder: str, transitions: int, renew_ns: int, duration: int = 15) -> dict[str, Any]:
    return {
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "leaseTransitions": transitions,
            "renewTime": format_micro_time(renew_ns),
        }
    }


def test_tracker_first_then_renewal_interval_and_skew() -> None:
    bus = Bus(instance="t")
    tracker = LeaseTracker("ns/x", bus=bus)
    first, _ = tracker.observe(lease("a", 0, T0), T0 + 5_000_000, 0.0)
    assert first is not None
    assert first.previous_holder is None and first.renew_interval_s is None
    assert first.skew_ms == pytest.approx(-5.0)
    second, _ = tracker.observe(lease("a", 0, T0 + 2_000_000_000), T0 + 2_000_000_000, 2.0)
    assert second is not None and second.renew_interval_s == pytest.approx(2.0)
    assert not second.holder_changed
    same, _ = tracker.observe(lease("a", 0, T0 + 2_000_000_000), T0 + 3_000_000_000, 3.0)
    assert same is None, "an unchanged record is not a change"
    observed = [e for e in bus.recent() if isinstance(e, LeaderObserved)]
    assert [(e.old_holder, e.new_holder) for e in observed] == [("", "a")]


def test_tracker_holder_change_emits_leader_observed_with_transitions() -> None:
    bus = Bus(instance="t")
    tracker = LeaseTracker("ns/x", bus=bus)
    tracker.observe(lease("a", 0, T0), T0, 0.0)
    change, _ = tracker.observe(lease("b", 1, T0 + 1_000_000_000), T0 + 1_000_000_000, 1.0)
    assert change is not None and change.holder_changed
    last = [e for e in bus.recent() if isinstance(e, LeaderObserved)][-1]
    assert (last.lease, last.old_holder, last.new_holder, last.transitions) == ("ns/x", "a", "b", 1)
    assert last.lease_duration_s == 15.0


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        pytest.param([0, 1, 2], [None, None, 3], id="third-in-window-exceeds-2"),
        pytest.param([0, 1, 11], [None, None, None], id="first-left-the-window"),
        pytest.param([0, 0.5, 1, 1.5], [None, None, 3, 4], id="keeps-warning-while-over"),
    ],
)
def test_flap_detector_sliding_window(times: list[float], expected: list[int | None]) -> None:
    flaps = FlapDetector(threshold=2, window=10)
    assert [flaps.add(t) for t in times] == expected


def test_tracker_counts_transitions_and_warns_on_flap() -> None:
    tracker = LeaseTracker("ns/x", FlapDetector(threshold=1, window=60), bus=Bus())
    assert tracker.observe(lease("a", 0, T0), T0, 0.0)[1] is None
    assert tracker.observe(lease("b", 1, T0 + 10**9), T0, 1.0)[1] is None
    assert tracker.observe(lease("a", 2, T0 + 2 * 10**9), T0, 2.0)[1] == 2
    # a renewal is not a transition: no warning even though the window is over the threshold
    assert tracker.observe(lease("a", 2, T0 + 3 * 10**9), T0, 3.0)[1] is None


def test_format_change_names_every_field() -> None:
    tracker = LeaseTracker("ns/x", bus=Bus())
    tracker.observe(lease("a", 0, T0), T0, 0.0)
    change, _ = tracker.observe(lease("b", 1, T0 + 2_500_000_000, 4), T0 + 2_490_000_000, 1.0)
    assert change is not None
    line = format_change(change)
    assert line.split(" ", 1)[1] == (
        "holder=b transitions=1 duration=4s renew-interval=2.50s skew=+10ms (leader changed from a)"
    )


@pytest.mark.parametrize("text", ["noslash", "/name", "ns/", "a/b/c"])
def test_parse_lease_ref_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        parse_lease_ref(text)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["noslash"], "want NAMESPACE/NAME", id="no-slash"),
        pytest.param(["a/b", "--kubeconfig", "/nonexistent/kc"], "kubeconfig", id="no-file"),
    ],
)
def test_lease_watch_bad_input_one_error_line_exit_2(args: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pycm", "lease", "watch", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


class _StuckWatchClient:
    """A client whose list says the Lease is missing and whose watch waits for ever; closing a
    cancelled watch raises the client's own error (as a stream torn down mid-read can)."""

    async def list(self, resource: object, **kwargs: object) -> dict[str, object]:
        return {"metadata": {"resourceVersion": "1"}, "items": []}

    def watch(self, resource: object, **kwargs: object) -> object:
        client_error = TransportError("stream closed while reading")

        class _Stream:
            async def __aenter__(self) -> _Stream:
                return self

            async def __aexit__(self, *exc: object) -> None:
                raise client_error

            def __aiter__(self) -> _Stream:
                return self

            async def __anext__(self) -> object:
                await asyncio.Event().wait()
                raise StopAsyncIteration

        return _Stream()


@pytest.mark.asyncio
async def test_watch_lease_cancelled_while_closing_a_stream_stops_instead_of_retrying() -> None:
    lines: list[str] = []
    task = asyncio.create_task(
        watch_lease(_StuckWatchClient(), "kube-system", "pycm", lines.append)  # type: ignore[arg-type]
    )
    for _ in range(10):
        await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    assert task in done and task.cancelled(), lines
