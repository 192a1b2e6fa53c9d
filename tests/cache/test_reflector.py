from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import pytest_asyncio

from pycm.cache.listwatch import FakeListWatch, ListPage, StatusError, WatchStream
from pycm.cache.reflector import Reflector
from pycm.kube import errors as kube_errors
from pycm.trace.bus import Bus, Subscription
from pycm.trace.kinds import (
    InformerBackedOff,
    InformerListFinished,
    InformerRelisted,
    WatchClosed,
    WatchCloseReason,
    WatchOpened,
)
from pycm.util.backoff import ExponentialBackoffManager
from pycm.util.clock import FakeClock
from tests.cache.helpers import advance_to_next, bookmark, of_kind, pod, settle, status, until


class RecordingStore:
    """A ReflectorStore that records each call as (op, name-or-count, rv)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, Any, str]] = []

    def add(self, obj: dict[str, Any]) -> None:
        self.ops.append(("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def update(self, obj: dict[str, Any]) -> None:
        self.ops.append(("update", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def delete(self, obj: dict[str, Any]) -> None:
        self.ops.append(("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def replace(self, items: Iterable[dict[str, Any]], resource_version: str) -> None:
        names = sorted(o["metadata"]["name"] for o in items)
        self.ops.append(("replace", names, resource_version))

    def resync(self) -> None:
        self.ops.append(("resync", None, ""))


class Rig:
    def __init__(self, lw: FakeListWatch, **kwargs: Any) -> None:
        self.clock = FakeClock()
        self.bus = Bus(clock=self.clock)
        self.sub: Subscription = self.bus.subscribe(maxsize=100_000)
        self.store = RecordingStore()
        self.lw = lw
        self.reflector = Reflector(
            lw,
            self.store,
            resource="pods",
            clock=self.clock,
            bus=self.bus,
            rng=random.Random(7),
            **kwargs,
        )
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.reflector.run(), name="test-reflector")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await self.task


@pytest_asyncio.fixture
async def make_rig() -> AsyncIterator[Any]:
    rigs: list[Rig] = []

    def make(lw: FakeListWatch, **kwargs: Any) -> Rig:
        rig = Rig(lw, **kwargs)
        rigs.append(rig)
        rig.start()
        return rig

    yield make
    for rig in rigs:
        await rig.stop()


def _hang() -> WatchStream:
    return WatchStream(hang=True)


@pytest.mark.asyncio
async def test_reflector_list_paged_follows_continue_then_watches_from_list_rv(
    make_rig: Any,
) -> None:
    lw = (
        FakeListWatch()
        .add_list(
            ListPage([pod("a"), pod("b")], "10", "c1", size_bytes=100),
            ListPage([pod("c")], "10", "c2", size_bytes=50),
            ListPage([pod("d")], "10", None, size_bytes=25),
        )
        .add_watch(_hang())
    )
    rig = make_rig(lw)
    await until(lambda: len(lw.watch_calls) == 1, "a watch")
    assert [(c.resource_version, c.limit, c.continue_) for c in lw.list_calls] == [
        ("0", 500, None),
        ("", 500, "c1"),
        ("", 500, "c2"),
    ]
    assert rig.store.ops == [("replace", ["a", "b", "c", "d"], "10")]
    call = lw.watch_calls[0]
    assert call.resource_version == "10"
    assert call.allow_watch_bookmarks is True
    assert 300 <= call.timeout_seconds < 600
    [end] = of_kind(rig.sub, InformerListFinished)
    assert (end.items, end.bytes, end.pages, end.resource_version) == (4, 175, 3, "10")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(StatusError(410, "Expired", "too old"), "expired", id="410-expired"),
        pytest.param(StatusError(410, "Gone"), "expired", id="410-gone"),
        pytest.param(
            StatusError(504, "Timeout", "Too large resource version: 12, current: 10"),
            "too large resource version",
            id="too-large-rv",
        ),
        pytest.param(
            kube_errors.Expired("too old resource version", code=410, reason="Expired"),
            "expired",
            id="kube-expired",
        ),
        pytest.param(
            kube_errors.Timeout(
                "Too large resource version",
                code=504,
                reason="Timeout",
                details={"causes": [{"reason": "ResourceVersionTooLarge"}]},
            ),
            "too large resource version",
            id="kube-too-large-rv",
        ),
    ],
)
async def test_reflector_list_expired_relists_at_once_with_empty_rv(
    make_rig: Any, error: Exception, reason: str
) -> None:
    lw = FakeListWatch().add_list(error, ListPage([pod("a")], "20")).add_watch(_hang())
    rig = make_rig(lw)
    await until(lambda: len(lw.watch_calls) == 1, "a watch")
    assert [c.resource_version for c in lw.list_calls] == ["0", ""]
    events = rig.sub.drain()
    assert [e.reason for e in events if isinstance(e, InformerRelisted)] == [reason]
    assert not [e for e in events if isinstance(e, InformerBackedOff)]
    assert rig.store.ops == [("replace", ["a"], "20")]


@pytest.mark.asyncio
async def test_reflector_watch_events_go_to_store_and_bookmark_only_advances_rv(
    make_rig: Any,
) -> None:
    stream = WatchStream(
        [
            ("ADDED", pod("b", "11")),
            ("MODIFIED", pod("a", "12")),
            ("BOOKMARK", bookmark("15")),
            ("DELETED", pod("b", "16")),
            ("BOOKMARK", bookmark("20")),
        ]
    )
    lw = FakeListWatch().add_list(ListPage([pod("a")], "10")).add_watch(stream, _hang())
    rig = make_rig(lw)
    await until(lambda: len(lw.watch_calls) == 2, "a second watch")
    assert rig.store.ops[1:] == [("add", "b", "11"), ("update", "a", "12"), ("delete", "b", "16")]
    # The stream ended normally: re-watched from the bookmark's RV, without listing again.
    assert lw.watch_calls[1].resource_version == "20"
    assert len(lw.list_calls) == 1
    closed = of_kind(rig.sub, WatchClosed)
    assert [(c.reason, c.events) for c in closed] == [(WatchCloseReason.SERVER_CLOSED, 5)]


@pytest.mark.asyncio
async def test_reflector_watch_error_event_410_relists_from_last_rv_after_backoff(
    make_rig: Any,
) -> None:
    stream = WatchStream([("ADDED", pod("b", "11")), ("ERROR", status(410, "Expired"))])
    lw = FakeListWatch().add_list(ListPage([pod("a")], "10"), ListPage([pod("a")], "30"))
    lw.add_watch(stream, _hang())
    rig = make_rig(lw)
    await until(lambda: rig.clock.sleepers == 1, "the backoff")
    assert len(lw.list_calls) == 1
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.watch_calls) == 2, "a watch after relisting")
    assert [c.resource_version for c in lw.list_calls] == ["0", "11"]
    events = rig.sub.drain()
    assert [e.reason for e in events if isinstance(e, WatchClosed)] == [WatchCloseReason.EXPIRED]
    assert [e.reason for e in events if isinstance(e, InformerRelisted)] == ["expired"]
    assert len([e for e in events if isinstance(e, InformerBackedOff)]) == 1


@pytest.mark.asyncio
async def test_reflector_watch_error_event_500_is_an_api_error_and_relists(make_rig: Any) -> None:
    stream = WatchStream([("ERROR", status(500, "InternalError", "boom"))])
    lw = FakeListWatch().add_list(ListPage([], "10"), ListPage([], "12")).add_watch(stream, _hang())
    rig = make_rig(lw)
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.watch_calls) == 2, "a watch after relisting")
    [closed] = of_kind(rig.sub, WatchClosed)
    assert closed.reason is WatchCloseReason.ERROR
    assert "StatusError" in closed.error and "boom" in closed.error
    assert len(lw.list_calls) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "watches",
    [
        pytest.param([StatusError(429, "TooManyRequests")], id="429-on-open"),
        pytest.param([ConnectionRefusedError(111, "Connection refused")], id="refused-on-open"),
        pytest.param(
            [WatchStream([("ERROR", status(429, "TooManyRequests"))])], id="429-error-event"
        ),
        pytest.param(
            [kube_errors.TooManyRequests("slow down", code=429, reason="TooManyRequests")],
            id="kube-429-on-open",
        ),
        pytest.param(
            [kube_errors.TransportError("ConnectError: [Errno 111] Connection refused")],
            id="kube-connect-error-on-open",
        ),
    ],
)
async def test_reflector_watch_429_or_refused_backs_off_and_rewatches_without_relist(
    make_rig: Any, watches: list[Any]
) -> None:
    lw = FakeListWatch().add_list(ListPage([pod("a")], "10")).add_watch(*watches, _hang())
    rig = make_rig(lw)
    await until(lambda: rig.clock.sleepers == 1, "the backoff")
    assert len(lw.watch_calls) == 1
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.watch_calls) == 2, "the re-watch")
    assert len(lw.list_calls) == 1
    assert lw.watch_calls[1].resource_version == "10"
    assert not of_kind(rig.sub, InformerRelisted)


@pytest.mark.asyncio
async def test_reflector_very_short_watch_is_an_error_and_relists(make_rig: Any) -> None:
    lw = FakeListWatch().add_list(ListPage([], "10"), ListPage([], "11"))
    lw.add_watch(WatchStream([]), _hang())
    rig = make_rig(lw)
    await until(lambda: rig.clock.sleepers == 1, "the backoff")
    events = rig.sub.drain()
    assert [e.reason for e in events if isinstance(e, WatchClosed)] == [WatchCloseReason.TOO_SHORT]
    assert [e.reason for e in events if isinstance(e, InformerRelisted)] == ["very short watch"]
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.list_calls) == 2, "the relist")


@pytest.mark.asyncio
async def test_reflector_backoff_delays_double_to_cap_and_reset_after_healthy_period(
    make_rig: Any,
) -> None:
    lw = FakeListWatch()
    failures = 9
    lw.add_list(*[StatusError(500, "InternalError") for _ in range(failures)])
    lw.add_list(ListPage([], "10"), ListPage([], "20"))
    long_watch = WatchStream(hang=True)
    lw.add_watch(long_watch, _hang())
    rig = make_rig(lw)
    # Before the task first runs: the reflector's policy without jitter, for exact delays.
    rig.reflector.backoff = ExponentialBackoffManager(clock=rig.clock, jitter=0.0)
    delays = [await advance_to_next(rig.clock) for _ in range(failures)]
    assert [round(d, 3) for d in delays] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]
    await until(lambda: len(lw.open_watches) == 1, "the watch")
    rig.clock.advance(180.0)  # healthy for 3 minutes, then the watch fails
    long_watch.push(StatusError(500, "InternalError"))
    step = await advance_to_next(rig.clock)
    assert round(step, 3) == 0.8  # reset: the previous backoff was more than 2 minutes ago
    await until(lambda: len(lw.list_calls) == failures + 2, "the relist")


@pytest.mark.asyncio
async def test_reflector_backoff_with_default_jitter_stays_within_one_extra_delay(
    make_rig: Any,
) -> None:
    lw = FakeListWatch().add_list(*[StatusError(500, "InternalError") for _ in range(4)])
    lw.add_list(ListPage([], "1")).add_watch(_hang())
    rig = make_rig(lw)
    delays = [await advance_to_next(rig.clock) for _ in range(4)]
    for delay, base in zip(delays, [0.8, 1.6, 3.2, 6.4], strict=True):
        assert base <= delay < 2 * base


@pytest.mark.asyncio
async def test_reflector_resync_calls_store_resync_only_when_due(make_rig: Any) -> None:
    due = [False]
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([], "1"))
    # A watch lasting past several resync periods: the resync timer is independent of it.
    rig = make_rig(lw, resync_period=30.0, should_resync=lambda: due[0])
    await until(lambda: len(lw.watch_calls) == 1, "the watch")
    rig.clock.advance(30.0)
    await settle()
    assert [op for op, _, _ in rig.store.ops] == ["replace"]
    due[0] = True
    rig.clock.advance(30.0)
    await settle()
    assert [op for op, _, _ in rig.store.ops] == ["replace", "resync"]


@pytest.mark.asyncio
async def test_reflector_cancel_during_watch_reports_stopped_and_propagates(
    make_rig: Any,
) -> None:
    lw = FakeListWatch().add_list(ListPage([], "1")).add_watch(_hang())
    rig = make_rig(lw)
    await until(lambda: len(lw.open_watches) == 1, "the open watch")
    await rig.stop()
    rig.task = None
    closed = of_kind(rig.sub, WatchClosed)
    assert [c.reason for c in closed] == [WatchCloseReason.STOPPED]
    assert lw.open_watches == []


@pytest.mark.asyncio
async def test_reflector_watch_opened_event_carries_rv_and_timeout(make_rig: Any) -> None:
    lw = FakeListWatch().add_list(ListPage([], "42")).add_watch(_hang())
    rig = make_rig(lw)
    await until(lambda: len(lw.open_watches) == 1, "the watch")
    await settle()
    [opened] = of_kind(rig.sub, WatchOpened)
    assert opened.resource_version == "42"
    assert opened.timeout_s == float(lw.watch_calls[0].timeout_seconds)


@pytest.mark.asyncio
async def test_reflector_kube_api_error_mid_watch_relists(make_rig: Any) -> None:
    error = kube_errors.ServerError("etcd is sad", code=500, reason="InternalError")
    stream = WatchStream([("ADDED", pod("a", "11"))], raise_after=error)
    lw = FakeListWatch().add_list(ListPage([], "10"), ListPage([], "12")).add_watch(stream, _hang())
    rig = make_rig(lw)
    await advance_to_next(rig.clock)
    await until(lambda: len(lw.list_calls) == 2, "the relist")
    [closed] = of_kind(rig.sub, WatchClosed)
    assert (closed.reason, closed.events) == (WatchCloseReason.ERROR, 1)
    assert lw.list_calls[1].resource_version == "11"


@pytest.mark.asyncio
async def test_reflector_broken_stream_after_events_rewatches_without_relist(
    make_rig: Any,
) -> None:
    broken = kube_errors.TransportError("watch stream broken: ReadError: reset")
    stream = WatchStream([("ADDED", pod("a", "11"))], raise_after=broken)
    lw = FakeListWatch().add_list(ListPage([], "10")).add_watch(stream, _hang())
    rig = make_rig(lw)
    await until(lambda: len(lw.watch_calls) == 2, "the re-watch")
    assert lw.watch_calls[1].resource_version == "11"
    assert len(lw.list_calls) == 1
    [closed] = of_kind(rig.sub, WatchClosed)
    assert closed.reason is WatchCloseReason.SERVER_CLOSED
    assert "broken" in closed.error


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("pause", "expected"),
    [
        # The first list's hook runs before the collector is back (a freeze there is never
        # preceded by a collection over the new cache); a relist's after it (its garbage is
        # collected, not frozen).
        pytest.param(True, [False, True], id="paused"),
        pytest.param(False, [True, True], id="not-paused"),
    ],
)
async def test_reflector_after_list_runs_inside_gc_pause_on_first_list_only(
    pause: bool, expected: list[bool]
) -> None:
    enabled: list[bool] = []
    lw = FakeListWatch().add_list(ListPage([pod("a", "1")], "1"), ListPage([pod("a", "2")], "2"))
    rig = Rig(lw, pause_gc_during_list=pause, after_list=lambda: enabled.append(gc.isenabled()))
    assert gc.isenabled()
    await rig.reflector.list()
    await rig.reflector.list()
    assert enabled == expected
    assert gc.isenabled()
    assert [op for op, _, _ in rig.store.ops] == ["replace", "replace"]
