"""Informer handlers: list/watch lifecycle."""

from __future__ import annotations

from pycm.trace import kinds as k
from tests.trace.state.script import (
    Feed,
    errors_of,
)


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
