"""Informer handlers: list/watch lifecycle."""

from __future__ import annotations

from pycm.trace import kinds as k
from tests.trace.state.script import (
    Feed,
    errors_of,
)


def _pods(f: Feed) -> dict:  # type: ignore[type-arg]
    return f.state.snapshot()["informers"]["a"]["pods"]  # type: ignore[return-value]


def test_informer_relist_and_watch_close_reasons() -> None:
    f = Feed()
    f(k.InformerStarted(resource="pods", resync_s=30.0), at=0)
    span = f.span()
    f(k.InformerListBegan(resource="pods"), at=0, span_id=span)
    f(
        k.InformerListFinished(
            resource="pods", items=40, bytes=9000, pages=1, resource_version="10"
        ),
        at=0.2,
        span_id=span,
        dur_ns=200_000_000,
    )
    f(k.InformerSynced(resource="pods", objects=40, duration_ms=250.0), at=0.25)
    f(k.WatchOpened(resource="pods", resource_version="10"), at=0.3)
    f(
        k.WatchClosed(
            resource="pods", reason=k.WatchCloseReason.TIMEOUT, events=7, resource_version="17"
        ),
        at=300,
    )
    f(k.WatchOpened(resource="pods", resource_version="17"), at=300)
    f(k.WatchClosed(resource="pods", reason=k.WatchCloseReason.EXPIRED, events=2), at=400)
    f(k.InformerRelisted(resource="pods", reason="expired"), at=400)
    f(k.InformerBackedOff(resource="pods", delay_ms=800.0, reason="error"), at=400)
    f(k.WatchClosed(resource="pods", reason=k.WatchCloseReason.ERROR, error="EOF"), at=401)
    snap = f.state.snapshot()
    inf = snap["informers"]["a"]["pods"]
    assert inf["watch_closes"] == {"timeout": 1, "expired": 1, "error": 1}
    assert (inf["watch_opens"], inf["watch_events"], inf["resource_version"]) == (2, 9, "17")
    assert (inf["relists"], inf["relist_reasons"]) == (1, {"expired": 1})
    assert (inf["backoffs"], inf["last_backoff_ms"]) == (1, 800.0)
    assert (inf["synced"], inf["objects"], inf["lists"], inf["list_bytes"]) == (True, 40, 1, 9000)
    assert inf["last_error"] == "EOF"
    assert errors_of(snap) == [("a", "informer.watch_closed", "watch pods closed: EOF")]


def test_progress_reports_keep_the_cache_size_and_watch_events_live() -> None:
    f = Feed()
    f(k.InformerSynced(resource="pods", objects=40, duration_ms=250.0), at=0)
    f(k.WatchOpened(resource="pods", resource_version="10"), at=1)
    f(k.InformerProgress(resource="pods", objects=45, watch_events=10, pending=2), at=3)
    inf = _pods(f)
    assert (inf["objects"], inf["pending"], inf["watch_events"]) == (45, 2, 10)
    f(
        k.InformerProgress(resource="pods", objects=47, watch_events=25, resource_version="35"),
        at=5,
    )
    inf = _pods(f)
    assert (inf["objects"], inf["pending"], inf["watch_events"]) == (47, 0, 25)
    assert inf["resource_version"] == "35"
    assert inf["watch_events_per_s"] == 2.5  # 25 events in the 10 s window
    # The close carries the watch's total: only the 5 events not yet reported are new.
    f(k.WatchClosed(resource="pods", events=30, resource_version="40"), at=6)
    assert _pods(f)["watch_events"] == 30
    f(k.WatchOpened(resource="pods", resource_version="40"), at=7)
    f(k.InformerProgress(resource="pods", objects=47, watch_events=4), at=9)
    assert _pods(f)["watch_events"] == 34
    # A report of a later watch whose close and open were lost: its count starts again.
    f(k.InformerProgress(resource="pods", objects=48, watch_events=2), at=11)
    assert _pods(f)["watch_events"] == 36
    # The rate is of event time: a quiet informer's falls to 0 as other events come.
    f(k.WatchOpened(resource="deployments"), at=30)
    inf = _pods(f)
    assert (inf["watch_events_per_s"], inf["watch_events"], inf["objects"]) == (0.0, 36, 48)


def test_a_lost_progress_report_loses_no_watch_event() -> None:
    f = Feed()
    f(k.WatchOpened(resource="pods"), at=0)
    f(k.InformerProgress(resource="pods", objects=1, watch_events=3), at=2)
    # (the report of 7 at 4 s is lost)
    f(k.InformerProgress(resource="pods", objects=1, watch_events=12), at=6)
    assert _pods(f)["watch_events"] == 12
    f(k.WatchClosed(resource="pods", events=12), at=7)
    assert _pods(f)["watch_events"] == 12
