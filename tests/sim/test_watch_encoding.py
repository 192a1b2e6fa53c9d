"""A watch serves the encoding the store made at commit, byte for byte what encoding each event
again would write, one HTTP/1.1 chunk per event; the history counts the bytes it now holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlparse

import orjson
import pytest
import pytest_asyncio

from pycm.sim.negotiation import negotiate
from pycm.sim.seed import seed_cluster
from pycm.sim.server import Emulator, run_emulator
from pycm.sim.store import Store
from pycm.sim.streaming import encoded_line, event_line, send_watch
from pycm.sim.tables import partial_metadata, table
from pycm.sim.watch import ADDED, BOOKMARK, DELETED, ERROR, MODIFIED, StoreEvent
from pycm.util.clock import FakeClock

CMS = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
MERGE = "application/merge-patch+json"


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    # A fake clock: a Table's age column is the same when served and when recomputed here.
    async with run_emulator(
        tls=False, kubelet=False, nodes=1, watch_window=50, clock=FakeClock()
    ) as emulator:
        yield emulator


async def _chunks(emu: Emulator, query: str, count: int, accept: str = "") -> list[bytes]:
    """The first ``count`` HTTP/1.1 chunks of a watch, read off the socket unparsed."""
    url = urlparse(emu.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        extra = f"Accept: {accept}\r\n" if accept else ""
        writer.write(
            f"GET {CMS}?watch=1&{query} HTTP/1.1\r\nHost: sim\r\n{extra}"
            f"Authorization: Bearer {emu.admin_token}\r\n\r\n".encode()
        )
        chunks = []
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            assert b"transfer-encoding: chunked" in head.lower()
            while len(chunks) < count:
                size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
                assert size > 0, "the stream ended early"
                chunks.append(await reader.readexactly(size))
                assert await reader.readexactly(2) == b"\r\n"
        return chunks
    finally:
        writer.close()


def _store() -> Store:
    store = Store(clock=FakeClock(), watch_window=100)
    seed_cluster(store, 1)
    return store


def _history(store: Store, since: int) -> list[StoreEvent]:
    return list(store._history.since(since))


def _changes(store: Store) -> int:
    """Two ConfigMaps created, one modified, one deleted; returns the rv before them."""
    cms = store.resource("configmaps")
    since = store.resource_version
    store.create(
        cms, {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "é"}}, "default"
    )
    store.create(cms, {"metadata": {"name": "b"}, "data": {"n": "1"}}, "default")
    store.patch(cms, "default", "a", MERGE, {"data": {"k": "two"}})
    store.delete(cms, "default", "b")
    return since


@pytest.mark.asyncio
async def test_typed_watch_chunks_are_the_events_encoded_again(emu: Emulator) -> None:
    since = _changes(emu.store)
    events = _history(emu.store, since)
    assert [e.type for e in events] == [ADDED, ADDED, MODIFIED, DELETED]
    expected = [orjson.dumps({"type": e.type, "object": e.obj}) + b"\n" for e in events]
    assert await _chunks(emu, f"resourceVersion={since}", 4) == expected


@pytest.mark.asyncio
async def test_live_events_after_the_replay_are_the_same_bytes(emu: Emulator) -> None:
    since = emu.store.resource_version
    reading = asyncio.create_task(_chunks(emu, f"resourceVersion={since}", 4))
    while emu.store.watcher_count == 0:
        await asyncio.sleep(0.01)
    _changes(emu.store)
    expected = [
        orjson.dumps({"type": e.type, "object": e.obj}) + b"\n" for e in _history(emu.store, since)
    ]
    assert await reading == expected


@pytest.mark.asyncio
async def test_initial_state_watch_serves_the_stored_encodings(emu: Emulator) -> None:
    _changes(emu.store)
    a = emu.store.peek(emu.store.resource("configmaps"), "default", "a")
    assert await _chunks(emu, "resourceVersion=0", 1) == [
        orjson.dumps({"type": "ADDED", "object": a}) + b"\n"
    ]


@pytest.mark.asyncio
async def test_metadata_watch_chunks_are_partial_metadata_encoded(emu: Emulator) -> None:
    since = _changes(emu.store)
    api_version = negotiate(META).api_version
    expected = [
        orjson.dumps({"type": e.type, "object": partial_metadata(e.obj, api_version)}) + b"\n"
        for e in _history(emu.store, since)
    ]
    got = await _chunks(emu, f"resourceVersion={since}", 4, META)
    assert got == expected
    assert b'"data"' not in b"".join(got)


@pytest.mark.asyncio
async def test_table_watch_chunks_are_table_rows_encoded(emu: Emulator) -> None:
    since = _changes(emu.store)
    res = emu.store.resource("configmaps")
    out = negotiate(TABLE)
    now = emu.store.clock.wall_ns() / 1e9
    expected = []
    for e in _history(emu.store, since):
        rv_meta = {"resourceVersion": e.obj["metadata"]["resourceVersion"]}
        rows = table(res.strategy.printer, [e.obj], now, "Metadata", rv_meta, out.api_version)
        expected.append(orjson.dumps({"type": e.type, "object": rows}) + b"\n")
    assert await _chunks(emu, f"resourceVersion={since}", 4, TABLE) == expected


@pytest.mark.parametrize("type_", [ADDED, MODIFIED, DELETED, BOOKMARK, ERROR])
def test_encoded_line_splices_the_bytes_event_line_would_write(type_: str) -> None:
    obj: dict[str, Any] = {
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"k": "\u00e9\n"},
    }
    assert encoded_line(type_, orjson.dumps(obj)) == event_line(type_, obj)


def test_history_counts_the_encoding_each_event_holds() -> None:
    store = _store()
    since = _changes(store)
    events = _history(store, since)
    assert all(e.encoded == orjson.dumps(e.obj) for e in events)
    everything = _history(store, 0)
    # The held bytes, plus as much again standing for each object's dict.
    assert store._history.bytes == sum(2 * len(orjson.dumps(e.obj)) for e in everything)


@pytest.mark.asyncio
async def test_a_stop_between_queued_events_ends_the_stream_at_once() -> None:
    store = _store()
    res = store.resource("configmaps")
    since = _changes(store)
    watcher = store.watch(res, "default", resource_version=str(since))
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    await send_watch(send, watcher, res, store, negotiate(None), stopping=lambda: bool(sent))
    # Three more were queued: none of them is sent once stopping.
    assert [m["body"] for m in sent] == [
        orjson.dumps({"type": e.type, "object": e.obj}) + b"\n" for e in _history(store, since)
    ][:1]
    assert watcher.closed and store.watcher_count == 0


@pytest.mark.asyncio
async def test_watcher_wait_answers_at_once_when_queued_and_false_when_closed() -> None:
    store = _store()
    res = store.resource("configmaps")
    since = _changes(store)
    watcher = store.watch(res, "default", resource_version=str(since))
    assert await watcher.wait(0) is True  # queued: no wait, even with no time left
    entry = watcher.pop_entry()
    assert entry is not None and entry[2] == orjson.dumps(entry[1])
    watcher.stop()
    assert await watcher.wait(None) is False  # closed: never blocks
