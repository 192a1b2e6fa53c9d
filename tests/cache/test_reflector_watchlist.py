"""The reflector's streaming list (WatchList) and its bounded fallback, against the fake
list-watch (scripted streams, a fake clock)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pycm.cache.fifo import RealFIFO
from pycm.cache.indexer import Indexer
from pycm.cache.listwatch import INITIAL_EVENTS_END, FakeListWatch, ListPage, WatchStream
from pycm.kube import errors as kube_errors
from pycm.trace.kinds import (
    InformerListBegan,
    InformerListFinished,
    InformerWatchListFellBack,
    WatchOpened,
)
from tests.cache import test_reflector
from tests.cache.helpers import advance_to_next, bookmark, pod, status, until
from tests.cache.test_reflector import Rig

make_rig = test_reflector.make_rig  # the same fixture


def end_bookmark(rv: str) -> dict[str, Any]:
    mark = bookmark(rv)
    mark["metadata"]["annotations"] = {INITIAL_EVENTS_END: "true"}
    return mark


def of_kind(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def _streamed(*events: Any, hang: bool = True) -> WatchStream:
    return WatchStream(list(events), hang=hang)


@pytest.mark.asyncio
async def test_reflector_watch_list_streams_initial_events_then_keeps_watching(
    make_rig: Any,
) -> None:
    lw = FakeListWatch().add_watch(
        _streamed(
            ("ADDED", pod("a", "5")),
            ("ADDED", pod("b", "6")),
            ("MODIFIED", pod("a", "7")),
            ("BOOKMARK", end_bookmark("9")),
            ("ADDED", pod("c", "10")),  # a live event after the bookmark, same batch
        )
    )
    rig: Rig = make_rig(lw, watch_list=True)
    await until(lambda: len(rig.store.ops) == 2, "the replace and the live add")
    assert rig.store.ops == [("replace", ["a", "b"], "9"), ("add", "c", "10")]
    assert lw.list_calls == []  # no list at all
    [call] = lw.watch_calls
    assert (call.watch_list, call.resource_version, call.allow_watch_bookmarks) == (True, "", True)
    assert 300 <= call.timeout_seconds < 600
    assert rig.reflector.last_sync_resource_version == "10"
    events = rig.sub.drain()
    [begin] = of_kind(events, InformerListBegan)
    [end] = of_kind(events, InformerListFinished)
    assert begin.watch_list is True
    assert (end.items, end.pages, end.resource_version) == (2, 0, "9")
    [opened] = of_kind(events, WatchOpened)
    assert opened.resource_version == "9"
    assert of_kind(events, InformerWatchListFellBack) == []


@pytest.mark.asyncio
async def test_reflector_watch_list_refused_falls_back_to_list_for_good_said_once(
    make_rig: Any, caplog: pytest.LogCaptureFixture
) -> None:
    refused = kube_errors.error_from_status(
        status(
            422,
            "Invalid",
            'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is "
            "enabled",
        )
        | {"code": 422}
    )
    lw = (
        FakeListWatch()
        .add_watch(refused)
        .add_list(ListPage([pod("a")], "10"))
        .add_watch(WatchStream([], hang=False))  # the watch ends: a relist
        .add_list(ListPage([pod("a")], "11"))
        .add_watch(WatchStream(hang=True))
    )
    caplog.set_level(logging.WARNING, logger="pycm.cache.reflector")
    rig: Rig = make_rig(lw, watch_list=True)
    await until(lambda: len(rig.store.ops) == 1, "the fallback list")
    assert rig.store.ops == [("replace", ["a"], "10")]
    # The short, empty watch makes the next round relist (after a backoff): no second stream.
    await until(lambda: rig.clock.sleepers >= 1, "the backoff")
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.list_calls) == 2, "the second round's list")
    assert [c.watch_list for c in lw.watch_calls] == [True, False, False]
    assert rig.reflector.watch_list_supported is False
    [fell] = of_kind(rig.sub.drain(), InformerWatchListFellBack)
    assert fell.permanent is True and "WatchList feature gate" in fell.reason
    warnings = [r for r in caplog.records if "streaming list" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.asyncio
async def test_reflector_watch_list_unannotated_bookmark_means_server_ignores_it(
    make_rig: Any,
) -> None:
    lw = (
        FakeListWatch()
        .add_watch(_streamed(("ADDED", pod("a", "5")), ("BOOKMARK", bookmark("8"))))
        .add_list(ListPage([pod("a"), pod("b")], "12"))
        .add_watch(WatchStream(hang=True))
    )
    rig: Rig = make_rig(lw, watch_list=True)
    await until(lambda: len(lw.watch_calls) == 2, "the plain watch after the list")
    assert rig.store.ops == [("replace", ["a", "b"], "12")]
    assert lw.list_calls[0].resource_version == "0"
    [fell] = of_kind(rig.sub.drain(), InformerWatchListFellBack)
    assert fell.permanent is True
    assert "initial-events-end" in fell.reason


@pytest.mark.asyncio
async def test_reflector_watch_list_quiet_without_bookmark_lists_within_the_bound(
    make_rig: Any,
) -> None:
    """A server that streams the ADDED events and never the bookmark (kubernetes#135895):
    listed after watch_list_quiet seconds of silence, not at the watch's 5-10 min timeout."""
    lw = (
        FakeListWatch()
        .add_watch(_streamed(("ADDED", pod("a", "5"))))  # then silence, stream open
        .add_list(ListPage([pod("a")], "6"))
        .add_watch(WatchStream(hang=True))
    )
    rig: Rig = make_rig(lw, watch_list=True, watch_list_quiet=2.0)
    await until(lambda: rig.clock.sleepers >= 1, "the quiet timer")
    start = rig.clock.monotonic()
    rig.clock.advance(1.9)
    await until(lambda: True, "a turn")
    assert lw.list_calls == []  # not yet: 1.9 s of silence
    rig.clock.advance(0.2)
    await until(lambda: len(rig.store.ops) == 1, "the fallback list")
    assert rig.clock.monotonic() - start == pytest.approx(2.1)
    assert rig.store.ops == [("replace", ["a"], "6")]
    await until(lambda: len(lw.watch_calls) == 2 and lw.open_watches, "the plain watch")
    assert len(lw.open_watches) == 1  # the quiet stream was closed
    assert lw.watch_calls[1].watch_list is False
    [fell] = of_kind(rig.sub.drain(), InformerWatchListFellBack)
    assert fell.permanent is False  # retried next round, as client-go
    assert rig.reflector.watch_list_supported is True


@pytest.mark.asyncio
async def test_reflector_watch_list_expired_restreams_from_empty_version(make_rig: Any) -> None:
    expired = kube_errors.error_from_status(status(410, "Expired", "too old") | {"code": 410})
    lw = (
        FakeListWatch()
        .add_watch(expired)
        .add_watch(_streamed(("ADDED", pod("a", "20")), ("BOOKMARK", end_bookmark("21"))))
    )
    rig: Rig = make_rig(lw, watch_list=True)
    rig.reflector.last_sync_resource_version = "3"
    await until(lambda: len(rig.store.ops) == 1, "the replace")
    assert [(c.watch_list, c.resource_version) for c in lw.watch_calls] == [
        (True, "3"),
        (True, ""),
    ]
    assert of_kind(rig.sub.drain(), InformerWatchListFellBack) == []


@pytest.mark.asyncio
async def test_fifo_resource_version_follows_what_the_consumer_popped() -> None:
    indexer = Indexer()
    fifo = RealFIFO(indexer)
    fifo.note_resource_version("4")
    assert fifo.resource_version == "4"  # nothing queued: the consumer is there already
    fifo.add(pod("a", "5"))
    fifo.note_resource_version("5")
    fifo.add(pod("b", "6"))
    fifo.note_resource_version("7")  # a bookmark after b
    assert fifo.resource_version == "4"
    await fifo.pop_batch(1)
    assert fifo.resource_version == "5"
    await fifo.pop_batch(10)
    assert fifo.resource_version == "7"
