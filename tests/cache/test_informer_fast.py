"""The informer's per-event fast paths keep client-go's semantics: index updates that skip
unchanged inputs, one key per event, batched notifications, batched delivery."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from pycm.cache import processor
from pycm.cache.fifo import DeltaType
from pycm.cache.indexer import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    controller_uid_index_func,
    namespace_index_func,
    reads_metadata_field,
)
from pycm.cache.listwatch import FakeListWatch, ListPage, WatchStream
from pycm.cache.processor import ADD, DELETE, UPDATE, HandlerFuncs, Notification, Registration
from pycm.cache.reflector import Reflector
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.store import DeletedFinalStateUnknown, meta_namespace_key
from pycm.trace.bus import Bus
from pycm.trace.kinds import WatchClosed, WatchCloseReason
from pycm.util.clock import FakeClock
from tests.cache.helpers import pod, status, until


class CountingIndex:
    """An index function by a label's value, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obj: Any) -> list[str]:
        self.calls += 1
        value = ((obj.get("metadata") or {}).get("labels") or {}).get("tier")
        return [value] if value else []


def _rebuilt(idx: Indexer) -> dict[str, dict[str, set[str]]]:
    """The indexes an indexer would have if built from scratch from its current objects."""
    fresh = Indexer(idx.indexers)
    fresh.replace(idx.list())
    return {name: fresh._indices[name] for name in idx.indexers}


# -- the indexer ------------------------------------------------------------------------------


def test_indexer_declared_field_unchanged_update_skips_the_index_function() -> None:
    by_tier = CountingIndex()
    reads_metadata_field(by_tier, "labels")
    idx = Indexer({"tier": by_tier})
    idx.add(pod("a", "1", labels={"tier": "web"}))
    by_tier.calls = 0
    # A new dict with equal labels (as a fresh decode gives): nothing to re-index.
    idx.update(pod("a", "2", labels={"tier": "web"}))
    assert by_tier.calls == 0
    assert idx.index_keys("tier", "web") == ["default/a"]


def test_indexer_declared_field_changed_update_moves_the_key() -> None:
    by_tier = CountingIndex()
    reads_metadata_field(by_tier, "labels")
    idx = Indexer({"tier": by_tier})
    idx.add(pod("a", "1", labels={"tier": "web"}))
    idx.update(pod("a", "2", labels={"tier": "db"}))
    assert idx.index_keys("tier", "web") == []
    assert idx.index_keys("tier", "db") == ["default/a"]
    assert idx.list_index_func_values("tier") == ["db"]


def test_indexer_undeclared_function_is_still_called_on_every_update() -> None:
    by_tier = CountingIndex()  # not declared: it could read anything
    idx = Indexer({"tier": by_tier})
    idx.add(pod("a", "1", labels={"tier": "web"}))
    by_tier.calls = 0
    idx.update(pod("a", "2", labels={"tier": "db"}))
    assert by_tier.calls == 2
    assert idx.index_keys("tier", "db") == ["default/a"]


def test_indexer_builtin_controller_index_same_owner_unchanged_new_owner_moves() -> None:
    idx = Indexer()
    idx.add(pod("a", "1", owner_uid="rs-1"))
    idx.add(pod("b", "1", owner_uid="rs-1"))
    before = {n: {v: set(k) for v, k in idx._indices[n].items()} for n in idx.indexers}
    idx.update(pod("a", "2", owner_uid="rs-1"))
    assert idx._indices == before
    idx.update(pod("a", "3", owner_uid="rs-2"))
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-1") == ["default/b"]
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-2") == ["default/a"]
    idx.update(pod("a", "4"))  # the owner reference removed
    assert idx.index_keys(CONTROLLER_UID_INDEX, "rs-2") == []
    assert idx.list_index_func_values(CONTROLLER_UID_INDEX) == ["rs-1"]


def test_indexer_builtin_functions_are_declared_and_equal_to_a_rebuild() -> None:
    """Random updates, deletes and adds leave the indexes equal to a rebuild from scratch."""
    rng = random.Random(20)
    idx = Indexer()
    assert idx._plan == [
        (NAMESPACE_INDEX, namespace_index_func, "namespace"),
        (CONTROLLER_UID_INDEX, controller_uid_index_func, "ownerReferences"),
    ]
    for step in range(400):
        name = f"p{rng.randrange(12)}"
        ns = rng.choice(["ns1", "ns2"])
        if rng.random() < 0.15:
            idx.delete(pod(name, ns=ns))
            continue
        owner = rng.choice([None, "rs-1", "rs-2", "rs-3"])
        obj = pod(name, str(step), ns=ns, owner_uid=owner)
        if rng.random() < 0.3 and obj["metadata"].get("ownerReferences"):
            obj["metadata"]["ownerReferences"][0]["controller"] = False
        idx.update(obj)
        assert {n: idx._indices[n] for n in idx.indexers} == _rebuilt(idx), step


def test_indexer_put_returns_the_replaced_object() -> None:
    idx = Indexer()
    first, second = pod("a", "1"), pod("a", "2")
    assert idx.put("default/a", first) is None
    assert idx.put("default/a", second) is first
    assert idx.get_by_key("default/a") is second


# -- the informer's processing ----------------------------------------------------------------


class Calls:
    def __init__(self, fail_on: set[str] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_on = fail_on or set()

    def _note(self, what: str, obj: Any) -> None:
        key = meta_namespace_key(obj)
        self.calls.append((what, key))
        if key in self.fail_on:
            raise ValueError(f"handler bug on {key}")

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._note("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._note(
            f"update {old['metadata']['resourceVersion']}>{new['metadata']['resourceVersion']}", new
        )

    def on_delete(self, obj: Any) -> None:
        self._note("delete", obj)


def _informer() -> SharedIndexInformer:
    return SharedIndexInformer(FakeListWatch(), "pods", clock=FakeClock(), bus=Bus())


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(pod("a", ns="ns1"), id="namespaced"),
        pytest.param(pod("node-1", ns=None), id="cluster-scoped"),
        pytest.param(pod("b", ns=""), id="empty-namespace"),
    ],
)
def test_process_key_is_meta_namespace_key(obj: dict[str, Any]) -> None:
    inf = _informer()
    inf._process([(DeltaType.ADDED, obj)], 0)
    assert inf.indexer.list_keys() == [meta_namespace_key(obj)]
    inf._process([(DeltaType.DELETED, DeletedFinalStateUnknown(meta_namespace_key(obj), obj))], 0)
    assert inf.indexer.list_keys() == []


def test_process_batch_keeps_order_across_keys_and_resync_only_goes_to_due_handlers() -> None:
    inf = _informer()
    due, other = Calls(), Calls()
    reg_due = inf.add_event_handler(due, name="due")
    reg_other = inf.add_event_handler(other, name="other")
    a1, b1 = pod("a", "1"), pod("b", "1")
    inf._process([(DeltaType.REPLACED, a1), (DeltaType.REPLACED, b1)], 2)
    inf._syncing = [reg_due]
    batch = [
        (DeltaType.UPDATED, pod("a", "2")),
        (DeltaType.SYNC, b1),  # resync: only the due handler
        (DeltaType.ADDED, pod("c", "3")),
        (DeltaType.DELETED, pod("a", "4")),
        (DeltaType.REPLACED, pod("b", "1")),  # same RV after a relist: a resync again
        (DeltaType.UPDATED, pod("b", "5")),
    ]
    inf._process(batch, 0)
    for reg in (reg_due, reg_other):
        reg._deliver_for(60.0)
    common = [("add", "default/a"), ("add", "default/b"), ("update 1>2", "default/a")]
    assert due.calls == [
        *common,
        ("update 1>1", "default/b"),
        ("add", "default/c"),
        ("delete", "default/a"),
        ("update 1>1", "default/b"),
        ("update 1>5", "default/b"),
    ]
    assert other.calls == [
        *common,
        ("add", "default/c"),
        ("delete", "default/a"),
        ("update 1>5", "default/b"),
    ]
    assert inf.indexer.list_keys() == ["default/b", "default/c"]


def test_process_marks_only_the_initial_prefix_as_initial() -> None:
    inf = _informer()
    seen: list[tuple[str, bool]] = []
    reg = inf.add_event_handler(
        HandlerFuncs(on_add=lambda o, i: seen.append((o["metadata"]["name"], i)))
    )
    inf._process([(DeltaType.REPLACED, pod(n)) for n in "abc"], 2)
    assert reg._initial_left == 2
    reg._deliver_for(60.0)
    assert seen == [("a", True), ("b", True), ("c", False)]
    assert reg._initial_left == 0


@pytest.mark.asyncio
async def test_informer_handler_raising_mid_batch_loses_no_later_event() -> None:
    names = [f"p{i}" for i in range(40)]
    live = WatchStream(hang=True)
    lw = FakeListWatch().add_list(ListPage([pod(n) for n in names], "1")).add_watch(live)
    inf = SharedIndexInformer(lw, "pods", clock=FakeClock(), bus=Bus())
    failing = {"default/p3", "default/p17", "default/p39"}
    h = Calls(fail_on=failing)
    reg = inf.add_event_handler(h)

    task = asyncio.create_task(inf.run())
    try:
        await until(reg.has_synced, "synced despite failing initial adds")
        for n in names:
            live.push(("MODIFIED", pod(n, "2")))
        await until(lambda: len(h.calls) == 80, "every update delivered")
        assert h.calls == [("add", f"default/{n}") for n in names] + [
            ("update 1>2", f"default/{n}") for n in names
        ]
        assert reg.errors == 6
        assert reg.delivered == 80
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


# -- the processor ----------------------------------------------------------------------------


def _note(i: int, kind: int = UPDATE, initial: bool = False) -> Notification:
    obj = pod(f"p{i % 5}", str(i))
    return (kind, obj, obj, initial) if kind == UPDATE else (kind, obj, None, initial)


def _registration(inf: SharedIndexInformer, name: str) -> Registration:
    """A registration on ``inf``, handed what the informer hands its own."""
    return Registration(
        Calls(),
        name=name,
        resource=inf.resource,
        bus=inf.bus,
        informer_synced=inf.has_synced,
        cached=inf.indexer.get_by_key,
        after_delivery=lambda: None,
        now=inf.clock.monotonic(),
        resync_period=0,
        buffer_size=7,
    )


def test_push_many_equals_pushing_one_by_one_with_overflow() -> None:
    inf = _informer()
    one = _registration(inf, "one")
    many = _registration(inf, "many")
    rng = random.Random(3)
    for round_ in range(6):
        notes = [
            _note(round_ * 10 + j, rng.choice([ADD, UPDATE, DELETE]), rng.random() < 0.3)
            for j in range(rng.randrange(1, 12))
        ]
        for n in notes:
            one.push(n)
        many.push_many(notes, sum(1 for n in notes if n[3]))
        assert list(many._buffer) == list(one._buffer)
        assert many._dropped == one._dropped
        assert (many._initial_left, many._lost, many.lost_total) == (
            one._initial_left,
            one._lost,
            one.lost_total,
        )


def test_deliver_for_handler_funcs_missing_callbacks_still_counted() -> None:
    inf = _informer()
    updates: list[str] = []
    reg = inf.add_event_handler(
        HandlerFuncs(on_update=lambda o, n: updates.append(n["metadata"]["name"]))
    )
    reg.push_many([_note(1, ADD, True), _note(2), _note(3, DELETE)], 1)
    reg._deliver_for(60.0)
    assert updates == ["p2"]
    assert (reg.delivered, reg._initial_left, reg.pending) == (3, 0, 0)


# -- the reflector ----------------------------------------------------------------------------


class _Store:
    def __init__(self) -> None:
        self.ops: list[str] = []

    def add(self, obj: Any) -> None:
        self.ops.append("add")

    def update(self, obj: Any) -> None:
        self.ops.append("update")

    def delete(self, obj: Any) -> None:
        self.ops.append("delete")

    def replace(self, items: Any, resource_version: str) -> None:
        self.ops.append("replace")

    def resync(self) -> None:
        pass


@pytest.mark.asyncio
async def test_reflector_rv_from_odd_events_number_kept_none_or_missing_ignored() -> None:
    odd: list[tuple[str, Any]] = [
        ("MODIFIED", {"kind": "Pod", "metadata": {"name": "a", "resourceVersion": 12}}),
        ("BOOKMARK", {"kind": "Pod", "metadata": None}),
        ("ADDED", {"kind": "Pod", "metadata": {"name": "b"}}),
        ("BOOKMARK", {"kind": "Pod"}),
    ]
    lw = FakeListWatch().add_list(ListPage([], "10")).add_watch(WatchStream(odd, hang=True))
    store = _Store()
    reflector = Reflector(lw, store, resource="pods", clock=FakeClock(), bus=Bus())

    task = asyncio.create_task(reflector.run())
    try:
        await until(lambda: len(store.ops) == 3, "the events applied")
        assert store.ops == ["replace", "update", "add"]
        assert reflector.last_sync_resource_version == "12"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


class _BatchStream:
    """A watch stream that offers its events by the list (``pair_batches``)."""

    def __init__(self, batches: list[list[tuple[str, Any]]]) -> None:
        self.batches = batches
        self.pairs_taken = False

    def __aiter__(self) -> Any:
        self.pairs_taken = True  # the reflector must not fall back to pairs
        raise AssertionError("iterated pair by pair")

    async def pair_batches(self) -> AsyncIterator[list[tuple[str, Any]]]:
        for batch in self.batches:
            await asyncio.sleep(0)
            yield batch


class _BatchListWatch:
    def __init__(self, streams: list[_BatchStream]) -> None:
        self.streams = streams
        self.watch_rvs: list[str] = []

    async def list(self, *, resource_version: str, limit: int | None, continue_: str | None) -> Any:
        return ListPage([], "10")

    @asynccontextmanager
    async def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> AsyncIterator[Any]:
        self.watch_rvs.append(resource_version)
        if not self.streams:
            await asyncio.Event().wait()
        yield self.streams.pop(0)


@pytest.mark.asyncio
async def test_reflector_batched_stream_applies_in_order_and_error_mid_batch_stops() -> None:
    first = _BatchStream(
        [
            [("ADDED", pod("a", "11")), ("MODIFIED", pod("a", "12"))],
            [("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "15"}})],
            [
                ("DELETED", pod("a", "16")),
                ("ERROR", status(500, "InternalError")),
                ("ADDED", pod("z", "17")),
            ],
        ]
    )
    lw = _BatchListWatch([first])
    store = _Store()
    bus = Bus()
    sub = bus.subscribe(maxsize=1000)
    reflector = Reflector(lw, store, resource="pods", clock=FakeClock(), bus=bus)
    task = asyncio.create_task(reflector.list_and_watch())
    try:
        reason = await asyncio.wait_for(task, timeout=5)
    finally:
        task.cancel()
    assert reason.startswith("watch:")
    assert store.ops == ["replace", "add", "update", "delete"]  # nothing after the ERROR
    assert reflector.last_sync_resource_version == "16"
    assert not first.pairs_taken
    closed = [e for e in sub.drain() if isinstance(e, WatchClosed)]
    assert [(c.reason, c.events) for c in closed] == [(WatchCloseReason.ERROR, 5)]


class _FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def test_deliver_for_slow_handler_yields_after_about_one_quantum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _FakeTime()
    monkeypatch.setattr(processor, "_clock", fake)
    inf = _informer()

    def slow(old: Any, new: Any) -> None:
        fake.now += 0.001  # each call takes 1 ms

    reg = inf.add_event_handler(HandlerFuncs(on_update=slow))
    reg.push_many([_note(i) for i in range(50)], 0)
    reg._deliver_for(0.002)
    assert reg.delivered == 2  # one per clock reading: stopped at the 2 ms deadline
    reg._deliver_for(0.002)
    assert reg.delivered == 4


def test_deliver_for_fast_handler_reads_the_clock_once_per_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _FakeTime()
    monkeypatch.setattr(processor, "_clock", fake)
    inf = _informer()
    reg = inf.add_event_handler(HandlerFuncs(on_update=lambda o, n: None))
    reg.push_many([_note(i) for i in range(100)], 0)
    reg._deliver_for(0.002)
    assert reg.delivered == 100
    # Runs of 1, 2, 4, 8, then 16 at most: 10 runs, 11 readings (not one per notification).
    assert fake.reads == 11
