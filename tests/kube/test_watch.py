"""Watch streams over MockTransport: NDJSON framing, ERROR events, the request, the event."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from prometheus_client import CollectorRegistry

from pycm.kube import PODS, Client, Expired, KubeError, TransportError, WatchEvent
from pycm.kube.client import ACCEPT_METADATA
from pycm.trace.bus import Bus
from tests.kube.conftest import HOST, Recorder, api_events, status


def _line(kind: str, name: str, rv: str = "1") -> bytes:
    obj = {"metadata": {"name": name, "resourceVersion": rv}}
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def _stream(*chunks: bytes) -> httpx.Response:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return httpx.Response(200, content=body(), headers={"content-type": "application/json"})


@pytest.mark.asyncio
async def test_watch_decodes_events_split_across_chunks(client: Client, recorder: Recorder) -> None:
    data = _line("ADDED", "a") + _line("MODIFIED", "a", "2") + b"\n" + _line("BOOKMARK", "", "3")
    chunks = [data[:7], data[7:50], data[50:]]
    recorder.responses.append(_stream(*chunks))
    async with client.watch(PODS, namespace="ns", resource_version="1") as w:
        events = [ev async for ev in w]
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "1"),
        ("MODIFIED", "2"),
        ("BOOKMARK", "3"),
    ]
    assert isinstance(events[0], WatchEvent)


@pytest.mark.asyncio
async def test_watch_last_line_without_newline_is_decoded(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses.append(_stream(_line("ADDED", "a").rstrip(b"\n")))
    async with client.watch(PODS) as w:
        events = [ev async for ev in w]
    assert [e.type for e in events] == ["ADDED"]


@pytest.mark.asyncio
async def test_watch_sends_watch_params(client: Client, recorder: Recorder) -> None:
    recorder.responses.append(_stream())
    async with client.watch(
        PODS,
        namespace="ns",
        resource_version="5",
        timeout_seconds=300,
        label_selector="app=web",
        metadata_only=True,
    ) as w:
        assert [ev async for ev in w] == []
    req = recorder.last
    assert req.url.path == "/api/v1/namespaces/ns/pods"
    assert dict(req.url.params) == {
        "watch": "true",
        "labelSelector": "app=web",
        "resourceVersion": "5",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "300",
    }
    assert req.headers["accept"] == ACCEPT_METADATA
    assert req.extensions["timeout"]["read"] == 330.0


@pytest.mark.asyncio
async def test_watch_error_event_410_raises_expired(client: Client, recorder: Recorder) -> None:
    gone = {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version",
    }
    recorder.responses.append(
        _stream(_line("ADDED", "a"), orjson.dumps({"type": "ERROR", "object": gone}) + b"\n")
    )
    seen: list[str] = []
    async with client.watch(PODS) as w:
        with pytest.raises(Expired, match="too old resource version"):
            async for ev in w:
                seen.append(ev.type)
    assert seen == ["ADDED"]


@pytest.mark.asyncio
async def test_watch_open_failure_raises_mapped_error(
    client: Client, recorder: Recorder, bus: Bus
) -> None:
    recorder.responses.append(status(410, "Expired"))
    with pytest.raises(Expired):
        async with client.watch(PODS, resource_version="1"):
            pass
    (event,) = api_events(bus)
    assert (event.verb, event.code) == ("watch", 410)


@pytest.mark.asyncio
async def test_watch_emits_event_when_stream_opens(
    client: Client, recorder: Recorder, bus: Bus, registry: CollectorRegistry
) -> None:
    recorder.responses.append(_stream(_line("ADDED", "a")))
    async with client.watch(PODS, namespace="ns") as w:
        (event,) = api_events(bus)
        assert (event.verb, event.method, event.code, event.namespace) == (
            "watch",
            "GET",
            200,
            "ns",
        )
        assert event.bytes == 0
        _ = [ev async for ev in w]
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "200", "method": "GET", "host": HOST}
        )
        == 1.0
    )


@pytest.mark.asyncio
async def test_watch_garbage_line_raises(client: Client, recorder: Recorder) -> None:
    recorder.responses.append(_stream(b"not json\n"))
    async with client.watch(PODS) as w:
        with pytest.raises(KubeError, match="undecodable"):
            await anext(w)


@pytest.mark.asyncio
async def test_watch_broken_stream_raises_transport_error(
    client: Client, recorder: Recorder
) -> None:
    async def body() -> AsyncIterator[bytes]:
        yield _line("ADDED", "a")
        raise httpx.ReadError("connection reset")

    recorder.responses.append(httpx.Response(200, content=body()))
    async with client.watch(PODS) as w:
        assert (await anext(w)).type == "ADDED"
        with pytest.raises(TransportError, match="watch stream broken"):
            await anext(w)


@pytest.mark.asyncio
async def test_watch_line_batches_gives_every_complete_line_received_undecoded(
    client: Client, recorder: Recorder
) -> None:
    one, two, three = _line("ADDED", "a"), _line("MODIFIED", "a", "2"), _line("DELETED", "a", "3")
    data = one + two + b"\n" + three.rstrip(b"\n")
    # A chunk ending mid-line: that line waits for the rest; the last one has no newline.
    recorder.responses.append(_stream(data[: len(one) + 5], data[len(one) + 5 :]))
    async with client.watch(PODS) as w:
        batches = [batch async for batch in w.line_batches()]
        assert w.events == 3
    assert batches == [[one.rstrip(b"\n")], [two.rstrip(b"\n")], [three.rstrip(b"\n")]]


@pytest.mark.asyncio
async def test_watch_line_batches_broken_stream_raises_transport_error(
    client: Client, recorder: Recorder
) -> None:
    async def body() -> AsyncIterator[bytes]:
        yield _line("ADDED", "a")
        raise httpx.ReadError("reset")

    recorder.responses.append(httpx.Response(200, content=body()))
    async with client.watch(PODS) as w:
        got = []
        with pytest.raises(TransportError, match="watch stream broken"):
            async for batch in w.line_batches():
                got.append(batch)
    assert got == [[_line("ADDED", "a").rstrip(b"\n")]]
