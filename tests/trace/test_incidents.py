"""The incident fold: which events become timeline marks, and its bounds."""

from __future__ import annotations

import dataclasses

import pytest

from pycm.trace import kinds as k
from pycm.trace.events import Event, Outcome
from pycm.trace.incidents import MAX_INCIDENTS, Incidents

S = 1_000_000_000
T0 = 1_790_000_000 * S


def _at(event: Event, seconds: float, instance: str = "r1") -> Event:
    return dataclasses.replace(event, ts=T0 + int(seconds * S), instance=instance)


@pytest.mark.parametrize(
    ("event", "type_", "text"),
    [
        pytest.param(
            k.LeaseAcquired(lease="kube-system/pycm", identity="r1"),
            "lease",
            "r1 acquired kube-system/pycm",
            id="acquired",
        ),
        pytest.param(
            k.LeaseLost(lease="kube-system/pycm", identity="r1", reason="renew deadline"),
            "lease",
            "r1 lost kube-system/pycm (renew deadline)",
            id="lost",
        ),
        pytest.param(
            k.LeaderObserved(lease="kube-system/pycm", old_holder="r1", new_holder="r2"),
            "lease",
            "kube-system/pycm: holder r1 → r2",
            id="holder-change",
        ),
        pytest.param(
            k.InformerRelisted(resource="pods", reason="expired"),
            "relist",
            "pods: relist (expired)",
            id="relist",
        ),
        pytest.param(
            k.WatchClosed(resource="pods", reason=k.WatchCloseReason.EXPIRED),
            "expired",
            "pods: watch expired (410)",
            id="expired",
        ),
        pytest.param(
            k.WatchClosed(resource="pods", reason=k.WatchCloseReason.ERROR, error="secret"),
            "watch_dropped",
            "pods: watch dropped (error)",
            id="dropped-error",
        ),
        pytest.param(
            k.WatchClosed(resource="pods", reason=k.WatchCloseReason.TOO_SHORT),
            "watch_dropped",
            "pods: watch dropped (too_short)",
            id="dropped-short",
        ),
        pytest.param(
            k.ReconcileFinished(
                controller="deployment", key="ns/a", dur_ns=2 * S, trace_id="ab" * 16
            ),
            "slow_reconcile",
            "deployment ns/a took 2000ms",
            id="slow",
        ),
        pytest.param(
            k.WorkerStuck(
                controller="deployment", key="ns/hung", worker=3, processing_s=61.2, threshold_s=60
            ),
            "stuck_worker",
            "deployment: worker 3 stuck on ns/hung for 61s (threshold 60s)",
            id="stuck-worker",
        ),
        pytest.param(
            k.WorkerUnstuck(controller="deployment", key="ns/hung", worker=3, processing_s=75.0),
            "stuck_worker",
            "deployment: worker 3 let ns/hung go after 75s",
            id="unstuck-worker",
        ),
        pytest.param(
            k.ShardMemberJoined(ring="pycm", member="pycm-2", view="pycm-2", share=1.0),
            "shard_move",
            "pycm-2 joined ring pycm",
            id="shard-joined",
        ),
        pytest.param(
            k.ShardMemberLeft(ring="pycm", member="pycm-2", on_ring_s=30),
            "shard_move",
            "pycm-2 left ring pycm",
            id="shard-left",
        ),
        pytest.param(
            k.ShardViewChanged(ring="pycm", member="pycm-0", left="pycm-2,pycm-3", members=2),
            "shard_move",
            "pycm-0 sees pycm-2, pycm-3 gone from ring pycm (2 live)",
            id="shard-seen-gone",
        ),
        pytest.param(
            k.ShardDrainStarted(ring="pycm", member="pycm-0", keys=2, share_dropped=0.25),
            "shard_drain",
            "pycm-0 drains 25.0% of ring pycm: waits for 2 key(s)",
            id="shard-drain-started",
        ),
        pytest.param(
            k.ShardDrainFinished(
                ring="pycm", member="pycm-0", keys=2, share_dropped=0.25, duration_ms=1234.4
            ),
            "shard_drain",
            "pycm-0 gave up 25.0% of ring pycm after 1234ms (2 key(s) drained)",
            id="shard-drained",
        ),
        pytest.param(
            k.ShardMemberFenced(
                ring="pycm", member="pycm-1", renew_age_s=10.5, renew_deadline_s=10
            ),
            "shard_fenced",
            "pycm-1 fenced in ring pycm: no renew within 10s",
            id="shard-fenced",
        ),
        pytest.param(
            k.ShardMemberUnfenced(ring="pycm", member="pycm-1", fenced_s=4.25),
            "shard_fenced",
            "pycm-1 renewed in ring pycm after 4.2s",
            id="shard-unfenced",
        ),
    ],
)
def test_incidents_marked_event_makes_one_incident(event: Event, type_: str, text: str) -> None:
    fold = Incidents()
    incident = fold.apply(_at(event, 1))
    assert incident is not None
    assert (incident.type, incident.text, incident.instance) == (type_, text, "r1")
    assert incident.ts == T0 + S
    assert incident.trace_id == event.trace_id
    assert fold.to_list() == [incident.to_dict()]


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(k.WatchClosed(resource="pods"), id="watch-timeout"),
        pytest.param(
            k.WatchClosed(resource="pods", reason=k.WatchCloseReason.STOPPED), id="watch-stopped"
        ),
        pytest.param(k.ReconcileFinished(controller="d", key="a", dur_ns=S // 2), id="fast"),
        pytest.param(k.LeaseRenewed(lease="kube-system/pycm"), id="renew"),
        pytest.param(k.ApiRequestCompleted(code=200), id="api-ok"),
        pytest.param(k.ItemAdded(queue="d", key="a"), id="queue-add"),
        pytest.param(
            k.ShardViewChanged(ring="pycm", member="pycm-0", joined="pycm-3"), id="shard-view"
        ),
        pytest.param(k.ShardRelisted(ring="pycm", member="pycm-0"), id="shard-relist"),
    ],
)
def test_incidents_ordinary_event_makes_none(event: Event) -> None:
    fold = Incidents()
    assert fold.apply(_at(event, 1)) is None
    assert fold.to_list() == []


def test_incidents_error_text_is_never_carried() -> None:
    fold = Incidents(burst_errors=1)
    incident = fold.apply(_at(k.ApiRequestCompleted(code=500, error="token=hunter2"), 1))
    assert incident is not None and "hunter2" not in incident.text


def _error(seconds: float, instance: str = "r1") -> Event:
    return _at(
        k.ReconcileFinished(controller="d", key="a", outcome=Outcome.ERROR, dur_ns=1000),
        seconds,
        instance,
    )


def test_incidents_errors_reaching_the_threshold_within_the_window_make_one_burst() -> None:
    fold = Incidents(burst_errors=3, burst_window_s=10)
    marks = fold.apply_all([_error(0), _error(1), _error(2), _error(3), _error(4)])
    assert [(i.type, i.ts) for i in marks] == [("error_burst", T0 + 2 * S)]
    assert marks[0].text == "3 errors within 10s (last: reconcile.end)"


def test_incidents_errors_spread_wider_than_the_window_make_no_burst() -> None:
    fold = Incidents(burst_errors=3, burst_window_s=10)
    assert fold.apply_all([_error(0), _error(6), _error(12), _error(18)]) == []


def test_incidents_burst_reopens_only_after_a_quiet_window() -> None:
    fold = Incidents(burst_errors=2, burst_window_s=5)
    first = fold.apply_all([_error(0), _error(1), _error(4), _error(8)])  # one burst, ongoing
    second = fold.apply_all([_error(20), _error(21)])  # quiet 12 s, then a new burst
    assert [i.ts for i in first] == [T0 + S]
    assert [i.ts for i in second] == [T0 + 21 * S]


def test_incidents_bursts_are_per_instance() -> None:
    fold = Incidents(burst_errors=2, burst_window_s=5)
    marks = fold.apply_all([_error(0, "r1"), _error(1, "r2"), _error(2, "r1"), _error(3, "r2")])
    assert [(i.instance, i.ts) for i in marks] == [("r1", T0 + 2 * S), ("r2", T0 + 3 * S)]


def test_incidents_slow_storm_of_one_controller_is_coalesced_with_a_count() -> None:
    fold = Incidents(slow_reconcile_ms=100)
    slow = k.ReconcileFinished(controller="d", key="a", dur_ns=S)
    marks = fold.apply_all([_at(slow, t) for t in (0, 0.2, 0.4, 0.6, 1.5)])
    assert [i.text for i in marks] == [
        "d a took 1000ms",
        "d a took 1000ms (+3 more since the last mark)",
    ]


def test_incidents_ring_keeps_the_newest_within_its_bound() -> None:
    fold = Incidents(max_incidents=3)
    for t in range(5):
        fold.apply(_at(k.InformerRelisted(resource=f"r{t}"), t))
    assert [i["text"] for i in fold.to_list()] == ["r2: relist", "r3: relist", "r4: relist"]
    assert len(Incidents().recent) == 0 and Incidents().recent.maxlen == MAX_INCIDENTS


def test_incidents_bad_thresholds_are_refused() -> None:
    with pytest.raises(ValueError):
        Incidents(burst_errors=0)
