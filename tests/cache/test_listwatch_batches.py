"""ClientListWatch's decoded watch hands the reflector a read's events as one list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from pycm.cache.listwatch import ClientListWatch
from pycm.cache.reflector import _pair_batches
from pycm.cache.sharing_decoder import SharingDecoder
from pycm.kube import resources as kube_resources


def _line(type_: str, i: int) -> bytes:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{i}", "namespace": "default", "resourceVersion": str(10 + i)},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    return orjson.dumps({"type": type_, "object": pod})


class _LineStream:
    def __init__(self, batches: list[list[bytes]]) -> None:
        self.batches = batches

    async def line_batches(self) -> AsyncIterator[list[bytes]]:
        for lines in self.batches:
            yield lines


class _WatchClient:
    def __init__(self, batches: list[list[bytes]]) -> None:
        self.batches = batches

    async def list(self, resource: Any, **kwargs: Any) -> Any:
        raise AssertionError("not listed here")

    async def list_raw(self, resource: Any, **kwargs: Any) -> bytes:
        raise AssertionError("not listed here")

    @asynccontextmanager
    async def watch(self, resource: Any, **kwargs: Any) -> AsyncIterator[_LineStream]:
        yield _LineStream(self.batches)


BATCHES = [[_line("ADDED", 0), _line("MODIFIED", 1)], [_line("DELETED", 2)]]


def _lw() -> ClientListWatch:
    return ClientListWatch(_WatchClient(BATCHES), kube_resources.PODS, decoder=SharingDecoder())


def _expected() -> list[list[tuple[str, Any]]]:
    return [
        [(t, orjson.loads(line)["object"]) for t, line in zip(types, lines, strict=True)]
        for types, lines in zip([["ADDED", "MODIFIED"], ["DELETED"]], BATCHES, strict=True)
    ]


@pytest.mark.asyncio
async def test_decoded_watch_offers_each_reads_events_as_one_batch() -> None:
    async with _lw().watch(
        resource_version="1", timeout_seconds=5, allow_watch_bookmarks=True
    ) as stream:
        batches = _pair_batches(stream)
        assert batches is not None  # the reflector takes it by the list
        got = [list(pairs) async for pairs in batches]
    assert got == _expected()


@pytest.mark.asyncio
async def test_decoded_watch_still_iterates_pair_by_pair() -> None:
    async with _lw().watch(
        resource_version="1", timeout_seconds=5, allow_watch_bookmarks=True
    ) as stream:
        got = [pair async for pair in stream]
    assert got == [pair for batch in _expected() for pair in batch]


def _with_writers(type_: str, i: int) -> bytes:
    event = orjson.loads(_line(type_, i))
    event["object"]["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    return orjson.dumps(event)


@pytest.mark.asyncio
async def test_streaming_list_initial_objects_come_as_listed_ones_without_managed_fields() -> None:
    end = orjson.dumps(
        {
            "type": "BOOKMARK",
            "object": {
                "kind": "Pod",
                "metadata": {
                    "resourceVersion": "20",
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        }
    )
    batches = [
        [_with_writers("ADDED", 0)],
        [_with_writers("ADDED", 1), end, _with_writers("MODIFIED", 2)],
    ]
    lw = ClientListWatch(_WatchClient(batches), kube_resources.PODS, decoder=SharingDecoder())
    async with lw.watch_list(resource_version="", timeout_seconds=5) as stream:
        got = [pair async for pair in stream]
    assert [t for t, _ in got] == ["ADDED", "ADDED", "BOOKMARK", "MODIFIED"]
    # Before the bookmark: as a list's items (no writers); after it: a watch's (writers kept
    # for the informer to note, as bytes).
    assert ["managedFields" in o["metadata"] for _, o in got] == [False, False, False, True]
    assert got[0][1]["metadata"]["name"] == "p0"
