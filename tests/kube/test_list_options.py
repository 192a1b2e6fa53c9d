"""ListOptions: a list's or watch's query as one value, sent exactly as the keywords are, and
never mixed with them."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from pycm.api.labels import parse as parse_selector
from pycm.kube import PODS, Client, ListOptions
from tests.kube.conftest import Recorder


def _page(items: int, token: str = "", rv: str = "7") -> httpx.Response:
    meta = {"resourceVersion": rv, **({"continue": token} if token else {})}
    names = [{"metadata": {"name": f"p{i}"}} for i in range(items)]
    return httpx.Response(200, json={"kind": "PodList", "metadata": meta, "items": names})


def _empty_stream() -> httpx.Response:
    async def body() -> AsyncIterator[bytes]:
        return
        yield b""

    return httpx.Response(200, content=body(), headers={"content-type": "application/json"})


QUERY: dict[str, Any] = {
    "label_selector": "app=web",
    "field_selector": "spec.nodeName=n1",
    "shard_selector": "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
    "limit": 50,
    "continue_": "tok",
    "resource_version": "12",
    "resource_version_match": "NotOlderThan",
}


@pytest.mark.asyncio
@pytest.mark.parametrize("raw", [pytest.param(False, id="list"), pytest.param(True, id="raw")])
async def test_list_options_send_the_same_query_as_the_keywords(
    client: Client, recorder: Recorder, raw: bool
) -> None:
    verb = client.list_raw if raw else client.list
    recorder.responses += [_page(1), _page(1)]
    await verb(PODS, namespace="ns", **QUERY)
    await verb(PODS, namespace="ns", options=ListOptions(**QUERY))
    by_keywords, by_options = recorder.requests
    assert by_options.url == by_keywords.url
    assert dict(by_options.url.params) == {
        "labelSelector": "app=web",
        "fieldSelector": "spec.nodeName=n1",
        "shardSelector": QUERY["shard_selector"],
        "limit": "50",
        "continue": "tok",
        "resourceVersion": "12",
        "resourceVersionMatch": "NotOlderThan",
    }


@pytest.mark.asyncio
async def test_list_options_label_selector_object_is_sent_as_its_string(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses.append(_page(0))
    await client.list(PODS, options=ListOptions(label_selector=parse_selector("app in (a,b)")))
    assert recorder.last.url.params["labelSelector"] == "app in (a,b)"


@pytest.mark.asyncio
async def test_watch_options_send_the_same_query_as_the_keywords(
    client: Client, recorder: Recorder
) -> None:
    watch = {
        "resource_version": "5",
        "timeout_seconds": 300,
        "send_initial_events": True,
        "resource_version_match": "NotOlderThan",
        "label_selector": "app=web",
        "shard_selector": "x",
    }
    recorder.responses += [_empty_stream(), _empty_stream()]
    async with client.watch(PODS, namespace="ns", **watch) as w:
        assert [ev async for ev in w] == []
    async with client.watch(PODS, namespace="ns", options=ListOptions(**watch)) as w:
        assert [ev async for ev in w] == []
    by_keywords, by_options = recorder.requests
    assert by_options.url == by_keywords.url
    assert by_options.url.params["allowWatchBookmarks"] == "true"
    assert by_options.url.params["sendInitialEvents"] == "true"
    assert by_options.extensions["timeout"] == by_keywords.extensions["timeout"]
    assert by_options.extensions["timeout"]["read"] == 330.0


@pytest.mark.asyncio
async def test_watch_bookmarks_off_by_keyword_or_by_options(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses += [_empty_stream(), _empty_stream()]
    async with client.watch(PODS, allow_watch_bookmarks=False) as w:
        assert [ev async for ev in w] == []
    async with client.watch(PODS, options=ListOptions(allow_watch_bookmarks=False)) as w:
        assert [ev async for ev in w] == []
    assert ["allowWatchBookmarks" in r.url.params for r in recorder.requests] == [False, False]


@pytest.mark.asyncio
async def test_list_all_with_options_pages_by_page_size_and_keeps_the_selectors(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses += [_page(2, token="t1"), _page(1, rv="9")]
    options = ListOptions(label_selector="app=web", resource_version="0", limit=7)
    result = await client.list_all(PODS, namespace="ns", page_size=2, options=options)
    assert (len(result.items), result.resource_version, result.pages) == (3, "9", 2)
    first, second = (dict(r.url.params) for r in recorder.requests)
    assert first == {"labelSelector": "app=web", "limit": "2", "resourceVersion": "0"}
    assert second == {"labelSelector": "app=web", "limit": "2", "continue": "t1"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("call", "keyword"),
    [
        pytest.param("list", {"limit": 5}, id="list"),
        pytest.param("list_raw", {"label_selector": "a=b"}, id="list_raw"),
        pytest.param("list_all", {"resource_version": "1"}, id="list_all"),
    ],
)
async def test_list_options_and_keywords_together_are_refused(
    client: Client, recorder: Recorder, call: str, keyword: dict[str, Any]
) -> None:
    with pytest.raises(TypeError, match=rf"{call}\(\) takes options or query keywords"):
        await getattr(client, call)(PODS, options=ListOptions(), **keyword)
    assert recorder.requests == []


def test_watch_options_and_keywords_together_are_refused(client: Client) -> None:
    with pytest.raises(TypeError, match=r"watch\(\) .*: allow_watch_bookmarks"):
        client.watch(PODS, options=ListOptions(), allow_watch_bookmarks=True)


def test_list_options_are_frozen_and_vary_by_replace() -> None:
    options = ListOptions(label_selector="a=b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.limit = 3  # type: ignore[misc]
    assert dataclasses.replace(options, limit=3).list_params() == {
        "labelSelector": "a=b",
        "limit": "3",
    }
