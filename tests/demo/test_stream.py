"""The demo's event lines: one per event, repeats of the per-retry kinds hidden."""

from __future__ import annotations

from pycm.demo.stream import EventFormatter
from pycm.trace.kinds import AcquireResult, LeaseAcquireAttempted, LeaseAcquired, LeaseRenewed

TS = 1_800_000_000 * 1_000_000_000


def _attempt(holder: str) -> LeaseAcquireAttempted:
    event = LeaseAcquireAttempted(
        lease="kube-system/pycm",
        identity="replica-b",
        result=AcquireResult.HELD_BY_OTHER,
        holder=holder,
    )
    object.__setattr__(event, "ts", TS)
    return event


def test_formatter_line_has_time_replica_kind_and_attributes() -> None:
    line = EventFormatter(width=9).format(
        "replica-a", LeaseAcquired(lease="kube-system/pycm", identity="replica-a", waited_ms=21.04)
    )
    assert line is not None
    _, replica, kind, *attrs = line.split()
    assert (replica, kind, attrs) == (
        "replica-a",
        "lease.acquired",
        ["identity=replica-a", "waited_ms=21.04"],
    )


def test_formatter_hides_repeated_attempts_until_the_holder_changes() -> None:
    formatter = EventFormatter()
    lines = [formatter.format("replica-b", _attempt(h)) for h in ("a", "a", "a", "c", "c")]
    assert [line is not None for line in lines] == [True, False, False, True, False]


def test_formatter_shows_renewals_again_after_another_event() -> None:
    formatter = EventFormatter()
    renew = LeaseRenewed(identity="replica-a", latency_ms=3.0)
    slower = LeaseRenewed(identity="replica-a", latency_ms=9.0)
    assert formatter.format("replica-a", renew) is not None
    assert formatter.format("replica-a", slower) is None, "latency alone is not news"
    formatter.format("replica-a", LeaseAcquired(identity="replica-a"))
    assert formatter.format("replica-a", renew) is not None
