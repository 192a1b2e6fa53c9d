from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from pycm.cache.listwatch import FakeListWatch, ListPage, StatusError, WatchStream
from pycm.cache.mutation import CacheMutationError
from pycm.cache.shared_informer import SharedIndexInformer, wait_for_cache_sync
from pycm.cache.store import DeletedFinalStateUnknown, meta_namespace_key
from pycm.trace.bus import Bus
from pycm.trace.kinds import (
    HandlerLagged,
    InformerProgress,
    InformerStarted,
    InformerSynced,
    StartupBegan,
)
from pycm.util.clock import FakeClock
from tests.cache.helpers import pod, settle, status, until


class Recorder:
    """A handler recording calls and keeping its own view of the objects (key → obj)."""

    def __init__(self, spin_s: float = 0.0) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.view: dict[str, Any] = {}
        self.spin_s = spin_s

    def _spin(self) -> None:
        if self.spin_s:  # CPU-bound slowness (no sleeping): a slow handler
            end = time.perf_counter() + self.spin_s
            while time.perf_counter() < end:
                pass

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._spin()
        self.calls.append(("add", obj["metadata"]["name"], is_in_initial_list))
        self.view[meta_namespace_key(obj)] = obj

    def on_update(self, old: Any, new: Any) -> None:
        self._spin()
        self.calls.append(
            (
                "update",
                new["metadata"]["name"],
                old["metadata"]["resourceVersion"],
                new["metadata"]["resourceVersion"],
            )
        )
        self.view[meta_namespace_key(new)] = new

    def on_delete(self, obj: Any) -> None:
        self._spin()
        if isinstance(obj, DeletedFinalStateUnknown):
            self.calls.append(("delete-tombstone", obj.key))
        else:
            self.calls.append(("delete", obj["metadata"]["name"]))
        self.view.pop(meta_namespace_key(obj), None)


class Rig:
    def __init__(self, lw: FakeListWatch, **kwargs: Any) -> None:
        self.clock = FakeClock()
        self.bus = Bus(clock=self.clock)
        self.sub = self.bus.subscribe(maxsize=100_000)
        self.lw = lw
        # No progress reports unless a test asks: their timer would be the fake clock's next
        # deadline where a test waits for a backoff's or a resync's.
        kwargs.setdefault("progress_interval", 0.0)
        self.informer = SharedIndexInformer(
            lw, "pods", clock=self.clock, bus=self.bus, rng=random.Random(1), **kwargs
        )
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.informer.run(), name="test-informer")

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await self.task

    def events(self, cls: type) -> list[Any]:
        return [e for e in self.sub.drain() if isinstance(e, cls)]


@pytest_asyncio.fixture
async def rigs() -> AsyncIterator[list[Rig]]:
    made: list[Rig] = []
    yield made
    for rig in made:
        await rig.stop()


def _rig(rigs: list[Rig], lw: FakeListWatch, **kwargs: Any) -> Rig:
    rig = Rig(lw, **kwargs)
    rigs.append(rig)
    return rig


@pytest.mark.asyncio
async def test_informer_initial_list_adds_marked_initial_then_watch_adds_not(
    rigs: list[Rig],
) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a"), pod("b")], "5")).add_watch(live)
    rig = _rig(rigs, lw)
    h = Recorder()
    reg = rig.informer.add_event_handler(h)
    assert not reg.has_synced()
    rig.start()
    await until(reg.has_synced, "handler synced")
    assert h.calls == [("add", "a", True), ("add", "b", True)]
    live.push(("ADDED", pod("c", "6")))
    await until(lambda: len(h.calls) == 3, "the watch add")
    assert h.calls[2] == ("add", "c", False)
    events = rig.sub.drain()
    assert [(e.resource, e.objects) for e in events if isinstance(e, InformerSynced)] == [
        ("pods", 2)
    ]
    assert [e.resource for e in events if isinstance(e, InformerStarted)] == ["pods"]
    assert rig.informer.lister.get("default", "c") is not None


@pytest.mark.asyncio
async def test_informer_known_key_gets_update_unknown_gets_add(rigs: list[Rig]) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a", "1")], "1")).add_watch(live)
    rig = _rig(rigs, lw)
    h = Recorder()
    rig.informer.add_event_handler(h)
    rig.start()
    await until(lambda: len(h.calls) == 1, "initial add")
    live.push(("MODIFIED", pod("a", "2")))
    live.push(("MODIFIED", pod("z", "3")))  # never seen: an add
    live.push(("ADDED", pod("a", "4")))  # already known: an update
    await until(lambda: len(h.calls) == 4, "three more calls")
    assert h.calls[1:] == [
        ("update", "a", "1", "2"),
        ("add", "z", False),
        ("update", "a", "2", "4"),
    ]


@pytest.mark.asyncio
async def test_informer_relist_after_expiry_deletes_vanished_with_tombstone(
    rigs: list[Rig],
) -> None:
    first = WatchStream([("ERROR", status(410, "Expired"))])
    lw = FakeListWatch(default_watch_hang=True)
    lw.add_list(ListPage([pod("a", "1"), pod("b", "1")], "1"))
    lw.add_list(ListPage([pod("a", "1"), pod("c", "9")], "9")).add_watch(first)
    rig = _rig(rigs, lw)
    h = Recorder()
    rig.informer.add_event_handler(h)
    rig.start()
    await until(lambda: rig.clock.next_deadline() is not None, "the backoff")
    rig.clock.advance(60)
    await until(lambda: len(h.calls) == 4, "the relist's notifications")
    # a is unchanged (same RV: a resync notification, and no handler's resync is due)
    assert h.calls[2:] == [("add", "c", False), ("delete-tombstone", "default/b")]
    assert sorted(rig.informer.indexer.list_keys()) == ["default/a", "default/c"]


@pytest.mark.asyncio
async def test_informer_resync_only_handlers_whose_period_is_due(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([pod("a", "1")], "1"))
    rig = _rig(rigs, lw)
    fast, slow, never = Recorder(), Recorder(), Recorder()
    rig.informer.add_event_handler(fast, resync=10.0)
    rig.informer.add_event_handler(slow, resync=30.0)
    rig.informer.add_event_handler(never, resync=0.0)
    rig.start()
    await until(lambda: len(never.calls) == 1, "initial adds")
    for _ in range(3):
        rig.clock.advance(10.0)
        await settle()
    resync = ("update", "a", "1", "1")
    assert fast.calls[1:] == [resync, resync, resync]
    assert slow.calls[1:] == [resync]
    assert never.calls[1:] == []


@pytest.mark.asyncio
async def test_informer_handler_added_after_start_gets_synthetic_adds(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([pod("a"), pod("b")], "1"))
    rig = _rig(rigs, lw)
    rig.start()
    await until(rig.informer.has_synced, "informer synced")
    late = Recorder()
    reg = rig.informer.add_event_handler(late)
    assert not reg.has_synced()
    await until(reg.has_synced, "late handler synced")
    assert sorted(late.calls) == [("add", "a", True), ("add", "b", True)]
    assert await wait_for_cache_sync(reg.has_synced, clock=rig.clock, timeout_s=0)


@pytest.mark.asyncio
async def test_informer_slow_handler_does_not_delay_a_fast_one(rigs: list[Rig]) -> None:
    n = 60
    lw = FakeListWatch(default_watch_hang=True)
    lw.add_list(ListPage([pod(f"p{i}") for i in range(n)], "1"))
    rig = _rig(rigs, lw)
    slow = Recorder(spin_s=0.001)
    fast = Recorder()
    slow_seen_when_fast_done: list[int] = []
    original = fast.on_add

    def fast_add(obj: Any, initial: bool) -> None:
        original(obj, initial)
        if len(fast.calls) == n:
            slow_seen_when_fast_done.append(len(slow.calls))

    fast.on_add = fast_add  # type: ignore[method-assign]
    rig.informer.add_event_handler(slow, name="slow")
    reg_fast = rig.informer.add_event_handler(fast, name="fast")
    rig.start()
    await until(reg_fast.has_synced, "fast handler synced")
    assert slow_seen_when_fast_done and slow_seen_when_fast_done[0] < n // 2
    await until(lambda: len(slow.calls) == n, "slow handler done", turns=10_000)


@pytest.mark.asyncio
async def test_informer_handler_overflow_drops_oldest_reports_lag_and_converges(
    rigs: list[Rig],
) -> None:
    live = WatchStream(hang=True)
    initial = [pod(f"p{i}", "1") for i in range(8)]
    lw = FakeListWatch().add_list(ListPage(initial, "1")).add_watch(live)
    rig = _rig(rigs, lw, buffer_size=4)
    h = Recorder()
    reg = rig.informer.add_event_handler(h)
    rig.start()
    await until(reg.has_synced, "synced despite drops")
    # A burst the handler cannot keep up with: updates, deletes and adds, all in one turn.
    for i in range(8):
        live.push(("MODIFIED", pod(f"p{i}", "2")))
    for i in range(0, 8, 2):
        live.push(("DELETED", pod(f"p{i}", "3")))
    live.push(("ADDED", pod("new", "4")))
    await until(lambda: rig.informer.last_sync_resource_version == "4", "burst applied")
    await until(lambda: reg.pending == 0 and not reg._dropped, "handler caught up")
    assert h.view.keys() == {meta_namespace_key(o) for o in rig.informer.indexer.list()}
    for key, obj in h.view.items():
        assert obj is rig.informer.indexer.get_by_key(key)
    lagged = rig.events(HandlerLagged)
    assert lagged and all(e.lost > 0 for e in lagged)
    assert sum(e.lost for e in lagged) == reg.lost_total > 0


@pytest.mark.asyncio
async def test_informer_default_transform_drops_managed_fields(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True)
    lw.add_list(ListPage([pod("a", managed_fields=True)], "1"))
    rig = _rig(rigs, lw)
    rig.start()
    await until(rig.informer.has_synced, "synced")
    cached = rig.informer.lister.get("default", "a")
    assert cached is not None and "managedFields" not in cached["metadata"]


@pytest.mark.asyncio
async def test_informer_custom_transform_applied_before_storing(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([pod("a")], "1"))

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": obj["metadata"], "kind": "Trimmed"}

    rig = _rig(rigs, lw, transform=transform)
    h = Recorder()
    rig.informer.add_event_handler(h)
    rig.start()
    await until(rig.informer.has_synced, "synced")
    cached = rig.informer.lister.get("default", "a")
    assert cached == {"metadata": pod("a")["metadata"], "kind": "Trimmed"}


@pytest.mark.asyncio
async def test_informer_mutation_detector_catches_a_handler_mutating_the_cache(
    rigs: list[Rig],
) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a", "1")], "1")).add_watch(live)
    rig = _rig(rigs, lw, mutation_detector=True)

    class Mutator(Recorder):
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            obj["metadata"].setdefault("labels", {})["touched"] = "yes"  # the bug

    rig.informer.add_event_handler(Mutator())
    rig.start()
    await until(lambda: rig.informer.registrations[0].delivered == 1, "the add delivered")
    with pytest.raises(CacheMutationError, match="default/a"):
        rig.informer.lister.get("default", "a")
    live.push(("MODIFIED", pod("a", "2")))  # the update compares the old object: crash
    assert rig.task is not None
    with pytest.raises(ExceptionGroup) as info:
        await rig.task
    assert info.group_contains(CacheMutationError)


@pytest.mark.asyncio
async def test_informer_mutation_detector_quiet_when_nobody_mutates(rigs: list[Rig]) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a", "1")], "1")).add_watch(live)
    rig = _rig(rigs, lw, mutation_detector=True)
    rig.informer.add_event_handler(Recorder())
    rig.start()
    live.push(("MODIFIED", pod("a", "2")))
    live.push(("DELETED", pod("a", "3")))
    await until(lambda: rig.informer.last_sync_resource_version == "3", "events applied")
    await settle()
    assert rig.informer.detector is not None
    rig.informer.detector.check_all()
    assert len(rig.informer.detector) == 0


@pytest.mark.asyncio
async def test_informer_run_twice_raises(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([], "1"))
    rig = _rig(rigs, lw)
    rig.start()
    await settle()
    with pytest.raises(RuntimeError, match="already started"):
        await rig.informer.run()


@pytest.mark.asyncio
async def test_informer_handler_exception_logged_delivery_continues(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([pod("a"), pod("b")], "1"))
    rig = _rig(rigs, lw)

    class Flaky(Recorder):
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            super().on_add(obj, is_in_initial_list)
            if obj["metadata"]["name"] == "a":
                raise ValueError("handler bug")

    h = Flaky()
    reg = rig.informer.add_event_handler(h)
    rig.start()
    await until(reg.has_synced, "synced")
    assert [c[1] for c in h.calls] == ["a", "b"]
    assert reg.errors == 1


@pytest.mark.asyncio
async def test_informer_empty_initial_list_still_syncs_and_reports(rigs: list[Rig]) -> None:
    lw = FakeListWatch(default_watch_hang=True).add_list(ListPage([], "1"))
    rig = _rig(rigs, lw)
    reg = rig.informer.add_event_handler(Recorder())
    rig.start()
    await asyncio.wait_for(rig.informer.wait_synced(), timeout=5)
    assert reg.has_synced()
    assert [e.objects for e in rig.events(InformerSynced)] == [0]


@pytest.mark.asyncio
async def test_informer_removed_handler_gets_nothing_more(rigs: list[Rig]) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a")], "1")).add_watch(live)
    rig = _rig(rigs, lw)
    kept, removed = Recorder(), Recorder()
    rig.informer.add_event_handler(kept)
    reg = rig.informer.add_event_handler(removed)
    rig.start()
    await until(reg.has_synced, "synced")
    rig.informer.remove_event_handler(reg)
    live.push(("ADDED", pod("b", "2")))
    await until(lambda: len(kept.calls) == 2, "kept handler got the add")
    await settle()
    assert removed.calls == [("add", "a", True)]
    assert rig.informer.registrations == [rig.informer.registrations[0]]


def _progress(rig: Rig) -> list[tuple[int, int, int, str]]:
    return [
        (e.objects, e.watch_events, e.pending, e.resource_version)
        for e in rig.events(InformerProgress)
    ]


async def _tick(rig: Rig, seconds: float = 2.0) -> None:
    rig.clock.advance(seconds)
    await settle()


@pytest.mark.asyncio
async def test_informer_reports_its_cache_and_open_watch_while_they_change(
    rigs: list[Rig],
) -> None:
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a"), pod("b")], "5")).add_watch(live)
    rig = _rig(rigs, lw, progress_interval=2.0)
    reg = rig.informer.add_event_handler(Recorder())
    rig.start()
    await until(reg.has_synced, "handler synced")
    await _tick(rig)
    assert _progress(rig) == []  # the synced event reported these 2 objects
    live.push(("ADDED", pod("c", "6")))
    live.push(("MODIFIED", pod("a", "7")))
    await until(lambda: len(rig.informer.indexer) == 3, "the watch's add")
    await _tick(rig)
    assert _progress(rig) == [(3, 2, 0, "7")]
    await _tick(rig)
    assert _progress(rig) == []  # nothing changed: an idle informer stays quiet
    live.push(("DELETED", pod("b", "8")))
    await until(lambda: len(rig.informer.indexer) == 2, "the watch's delete")
    await _tick(rig)
    assert _progress(rig) == [(2, 3, 0, "8")]


@pytest.mark.asyncio
async def test_informer_reports_no_progress_before_it_synced(rigs: list[Rig]) -> None:
    # The list fails, then waits out a backoff: the informer never syncs here.
    lw = FakeListWatch().add_list(StatusError(500, "InternalError", "boom"))
    rig = _rig(rigs, lw, progress_interval=2.0)
    rig.start()
    await until(lambda: bool(rig.lw.list_calls), "the list")
    for _ in range(3):
        await _tick(rig)
    assert not rig.informer.has_synced()
    assert _progress(rig) == []


@pytest.mark.asyncio
async def test_informer_progress_belongs_to_no_step(rigs: list[Rig]) -> None:
    """An informer started inside a step (start-up) reports outside it: a report is nobody's
    child in a trace."""
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod("a")], "5")).add_watch(live)
    rig = _rig(rigs, lw, progress_interval=2.0)
    reg = rig.informer.add_event_handler(Recorder())
    with rig.bus.step(StartupBegan()):
        rig.start()
    await until(reg.has_synced, "handler synced")
    live.push(("ADDED", pod("b", "6")))
    await until(lambda: len(rig.informer.indexer) == 2, "the watch's add")
    await _tick(rig)
    (report,) = [e for e in rig.sub.drain() if isinstance(e, InformerProgress)]
    assert (report.objects, report.parent_id) == (2, "")
