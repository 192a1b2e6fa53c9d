from __future__ import annotations

from typing import Any

import pytest

from pycm.cache.fifo import DeltaType, RealFIFO
from pycm.cache.indexer import Indexer
from pycm.cache.store import DeletedFinalStateUnknown
from tests.cache.helpers import pod


def _summary(deltas: list[tuple[DeltaType, Any]]) -> list[tuple[str, str, str]]:
    out = []
    for kind, obj in deltas:
        if isinstance(obj, DeletedFinalStateUnknown):
            out.append((kind.value, "tombstone:" + obj.key, obj.obj["metadata"]["resourceVersion"]))
        else:
            out.append((kind.value, obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))
    return out


@pytest.mark.asyncio
async def test_fifo_replace_known_keys_missing_from_list_get_tombstones() -> None:
    idx = Indexer()
    idx.add(pod("a", "1"))
    idx.add(pod("b", "2"))
    fifo = RealFIFO(idx)
    fifo.replace([pod("a", "5"), pod("c", "6")], "6")
    batch, _ = await fifo.pop_batch()
    assert _summary(batch) == [
        ("Replaced", "a", "5"),
        ("Replaced", "c", "6"),
        ("Deleted", "tombstone:default/b", "2"),
    ]


@pytest.mark.asyncio
async def test_fifo_replace_queued_but_unapplied_add_gets_tombstone() -> None:
    idx = Indexer()
    fifo = RealFIFO(idx)
    fifo.add(pod("d", "3"))  # queued, not yet in the indexer
    fifo.add(pod("e", "4"))
    fifo.delete(pod("e", "5"))  # net: e is gone already
    fifo.replace([], "9")
    batch, _ = await fifo.pop_batch()
    assert _summary(batch)[3:] == [("Deleted", "tombstone:default/d", "3")]


@pytest.mark.asyncio
async def test_fifo_order_every_delta_in_arrival_order_no_merging() -> None:
    fifo = RealFIFO(Indexer())
    fifo.add(pod("a", "1"))
    fifo.update(pod("a", "2"))
    fifo.update(pod("a", "3"))
    fifo.delete(pod("a", "3"))
    fifo.delete(pod("a", "3"))
    batch, _ = await fifo.pop_batch()
    assert [k.value for k, _ in batch] == ["Added", "Updated", "Updated", "Deleted", "Deleted"]


@pytest.mark.asyncio
async def test_fifo_has_synced_after_initial_replace_popped() -> None:
    fifo = RealFIFO(Indexer())
    assert not fifo.has_synced()
    fifo.replace([pod("a"), pod("b"), pod("c")], "3")
    fifo.add(pod("d"))
    first, initial = await fifo.pop_batch(max_items=2)
    assert (len(first), initial, fifo.has_synced()) == (2, 2, False)
    second, initial = await fifo.pop_batch()
    assert (len(second), initial, fifo.has_synced()) == (2, 1, True)


@pytest.mark.asyncio
async def test_fifo_resync_queues_sync_for_known_keys_without_queued_deltas() -> None:
    idx = Indexer()
    idx.add(pod("a", "1"))
    idx.add(pod("b", "1"))
    fifo = RealFIFO(idx)
    fifo.update(pod("b", "2"))
    fifo.resync()
    batch, _ = await fifo.pop_batch()
    assert _summary(batch) == [("Updated", "b", "2"), ("Sync", "a", "1")]


@pytest.mark.asyncio
async def test_fifo_transform_applied_on_the_way_in_not_to_tombstones() -> None:
    idx = Indexer()
    idx.add(pod("gone", "1"))
    seen: list[str] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["name"])
        return {**obj, "transformed": True}

    fifo = RealFIFO(idx, transform=transform)
    fifo.add(pod("a"))
    fifo.replace([pod("b")], "2")
    batch, _ = await fifo.pop_batch()
    assert seen == ["a", "b"]
    # a (queued, unlisted) and gone (known, unlisted) become untransformed tombstones.
    assert [isinstance(o, dict) and o.get("transformed") for _, o in batch] == [
        True,
        True,
        False,
        False,
    ]
