"""The watch stream's chunks: a queued backlog is joined into few chunks, capped, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
from kubernetes import client, watch

from pycm.sim.negotiation import JSON, METADATA, Output
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.sim.streaming import JOIN_BYTES, watch_stream
from pycm.util.clock import FakeClock

BIG = "x" * 40_000  # a 40 KB value: a few of these exceed one joined chunk


@pytest.fixture
def store() -> Store:
    s = Store(clock=FakeClock(), watch_window=1000, watch_queue_size=1000)
    seed_cluster(s, 1)
    return s


def _backlog(store: Store, count: int, value: str = "v") -> tuple[str, list[str]]:
    """``count`` configmaps created after the returned resourceVersion, and their names."""
    cms = store.resource("configmaps")
    since = str(store.resource_version)
    names = [f"c{i:03d}" for i in range(count)]
    for name in names:
        store.create(cms, {"metadata": {"name": name}, "data": {"k": value}}, "default")
    return since, names


def _stream(store: Store, since: str, out: Output | None = None) -> AsyncIterator[bytes]:
    cms = store.resource("configmaps")
    watcher = store.watch(cms, "default", resource_version=since)
    return watch_stream(watcher, cms, store, out or Output(JSON), timeout_seconds=5)


def _names(chunk: bytes) -> list[str]:
    lines = chunk.split(b"\n")
    assert lines[-1] == b"", "a chunk ends with a whole line"
    return [orjson.loads(line)["object"]["metadata"]["name"] for line in lines[:-1]]


@pytest.mark.asyncio
async def test_watch_stream_joins_the_queued_backlog_into_one_chunk(store: Store) -> None:
    since, names = _backlog(store, 10)
    stream = _stream(store, since)
    first = await anext(stream)
    assert _names(first) == names
    await stream.aclose()  # the client went away: the watcher is unregistered
    assert store.watcher_count == 0


@pytest.mark.asyncio
async def test_watch_stream_caps_a_joined_chunk_and_keeps_the_rest_queued(store: Store) -> None:
    since, names = _backlog(store, 20, BIG)
    cms = store.resource("configmaps")
    watcher = store.watch(cms, "default", resource_version=since)
    stream = watch_stream(watcher, cms, store, Output(JSON), timeout_seconds=5)
    first = await anext(stream)
    # Backpressure: one chunk is encoded per pull, the rest stays queued in the watcher.
    assert len(first) >= JOIN_BYTES and watcher.pending == 20 - len(_names(first))
    chunks = [first]
    while watcher.pending:
        chunks.append(await anext(stream))
    await stream.aclose()
    for chunk in chunks:
        last = chunk.rstrip(b"\n").rfind(b"\n") + 1
        assert last < JOIN_BYTES, "a chunk grows past the cap by at most its last line"
    assert len(chunks) > 2
    assert [n for chunk in chunks for n in _names(chunk)] == names


@pytest.mark.asyncio
async def test_watch_stream_sends_a_live_event_once_nothing_else_is_queued(store: Store) -> None:
    since, names = _backlog(store, 3)
    stream = _stream(store, since)
    assert _names(await anext(stream)) == names
    pending = anext(stream)
    store.create(store.resource("configmaps"), {"metadata": {"name": "live"}}, "default")
    assert _names(await pending) == ["live"]
    await stream.aclose()


@pytest.mark.asyncio
async def test_watch_stream_joins_metadata_only_events(store: Store) -> None:
    since, names = _backlog(store, 4)
    stream = _stream(store, since, Output(METADATA, "meta.k8s.io/v1"))
    lines = (await anext(stream)).split(b"\n")[:-1]
    await stream.aclose()
    events = [orjson.loads(line) for line in lines]
    assert [e["object"]["metadata"]["name"] for e in events] == names
    assert {e["object"]["kind"] for e in events} == {"PartialObjectMetadata"}
    assert all("data" not in e["object"] for e in events)


def test_official_client_reads_a_backlog_joined_across_chunks(
    api: client.ApiClient, namespace: str
) -> None:
    """Lines of 40 KB joined into chunks of JOIN_BYTES: they straddle chunk and read boundaries,
    and the ``kubernetes`` client still reads every event, in order."""
    core = client.CoreV1Api(api)
    listed = core.list_namespaced_config_map(namespace)
    names = [f"big-{i:02d}" for i in range(16)]
    for name in names:
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name}, "data": {"k": BIG}}
        )
    w = watch.Watch()
    seen = []
    for event in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"].metadata.name, len(event["object"].data["k"])))
        if len(seen) == len(names):
            w.stop()
    assert seen == [("ADDED", name, len(BIG)) for name in names]
