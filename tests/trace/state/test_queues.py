"""Work queue handlers: depth, throughput, rates."""

from __future__ import annotations

from pycm.trace import kinds as k
from tests.trace.state.script import (
    Feed,
)


def test_queue_builds_up_and_drains_depth_adds_dones() -> None:
    f = Feed()
    for i, key in enumerate(["ns/a", "ns/b", "ns/c"]):
        f(k.ItemAdded(queue="deployment", key=key, depth=i + 1), at=i * 0.1)
    f(k.ItemAdded(queue="deployment", key="ns/a", queued=False, depth=3), at=0.35)
    expected_depths = []
    for i, key in enumerate(["ns/a", "ns/b", "ns/c"]):
        f(k.ItemTaken(queue="deployment", key=key, depth=2 - i, wait_ms=10.0 * (i + 1)), at=1 + i)
        f(k.ItemDone(queue="deployment", key=key, depth=2 - i, work_ms=2.0), at=1.5 + i)
        expected_depths.append(f.state.snapshot()["queues"]["a"]["deployment"]["depth"])
    q = f.state.snapshot()["queues"]["a"]["deployment"]
    assert expected_depths == [2, 1, 0]
    assert (q["depth"], q["max_depth"], q["adds"], q["deduped"]) == (0, 3, 4, 1)
    assert (q["gets"], q["dones"], q["retries"], q["drops"]) == (3, 3, 0, 0)
    assert q["wait"]["count"] == 3
    assert q["wait"]["max"] == 30.0
    assert q["work"]["sum"] == 6.0
    assert q["adds_per_s"] == 0.4  # 4 adds in the 10 s window ending at the newest ts


def test_queue_stale_depth_event_does_not_override_newer() -> None:
    f = Feed()
    f(k.ItemAdded(queue="q", key="x", depth=5), at=2)
    f(k.ItemTaken(queue="q", key="x", depth=9), at=1)  # out of order: older ts
    assert f.state.snapshot()["queues"]["a"]["q"]["depth"] == 5


def test_queue_adds_rate_over_last_ten_seconds() -> None:
    f = Feed()
    for i in range(30):
        f(k.ItemAdded(queue="q", key=f"k{i}"), at=i * 0.5)  # 2 adds/s for 15 s
    q = f.state.snapshot()["queues"]["a"]["q"]
    # now = 14.5 s -> seconds 5..14 inclusive hold 2 adds each
    assert q["adds_per_s"] == 2.0
