"""The event-stream routes: SSE framing, since/kinds/limit, snapshots, lag notices."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette

from pycm.server.debug import debug_routes
from pycm.trace.bus import Bus
from pycm.trace.codec import decode
from pycm.trace.kinds import ItemAdded, LeaseRenewed, SubscriberLagged


def _parse(text: str) -> list[tuple[str, str, str]]:
    """(event, id, data) of each SSE message."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if ":" in line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.lstrip(" ")
        if "data" in fields:
            out.append((fields.get("event", ""), fields.get("id", ""), fields["data"]))
    return out


def _client(bus: Bus, snapshot: Any = None) -> httpx.AsyncClient:
    app = Starlette(routes=debug_routes(bus, snapshot))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.mark.asyncio
async def test_events_resume_after_since_and_end_at_limit() -> None:
    bus = Bus(instance="a")
    for i in range(5):
        bus.emit(ItemAdded(queue="q", key=f"k{i}"))
    async with _client(bus) as client:
        response = await client.get("/debug/pycm/events", params={"since": "2", "limit": "3"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = _parse(response.text)
    assert [(e, i) for e, i, _ in messages] == [("trace", "3"), ("trace", "4"), ("trace", "5")]
    assert [decode(d).key for _, _, d in messages] == ["k2", "k3", "k4"]  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_last_event_id_header_resumes_like_since() -> None:
    bus = Bus()
    for i in range(3):
        bus.emit(ItemAdded(queue="q", key=f"k{i}"))
    async with _client(bus) as client:
        response = await client.get(
            "/debug/pycm/events", params={"limit": "1"}, headers={"Last-Event-ID": "2"}
        )
    assert [i for _, i, _ in _parse(response.text)] == ["3"]


@pytest.mark.asyncio
async def test_kinds_filter_keeps_prefix_matches_and_lag_notices() -> None:
    bus = Bus(ring_size=4)
    for i in range(6):
        bus.emit(ItemAdded(queue="q", key=f"k{i}"))
    bus.emit(LeaseRenewed(lease="kube-system/pycm"))
    async with _client(bus) as client:
        response = await client.get(
            "/debug/pycm/events", params={"since": "0", "kinds": "lease.*", "limit": "2"}
        )
    events = [decode(d) for _, _, d in _parse(response.text)]
    assert isinstance(events[0], SubscriberLagged)
    assert events[0].lost == 3  # the ring kept only the last 4 of 7
    assert isinstance(events[1], LeaseRenewed)


@pytest.mark.asyncio
async def test_snapshot_comes_first_and_state_returns_it() -> None:
    bus = Bus()
    bus.emit(ItemAdded(queue="q", key="k"))
    async with _client(bus, lambda: {"events_applied": 1}) as client:
        response = await client.get("/debug/pycm/events", params={"since": "0", "limit": "1"})
        state = await client.get("/debug/pycm/state")
    messages = _parse(response.text)
    assert messages[0][0] == "snapshot"
    assert orjson.loads(messages[0][2]) == {"events_applied": 1}
    assert messages[1][0] == "trace"
    assert state.json() == {"events_applied": 1}


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"since": "x"}, id="since-not-int"),
        pytest.param({"limit": "0"}, id="limit-zero"),
        pytest.param({"since": "-1"}, id="since-negative"),
    ],
)
@pytest.mark.asyncio
async def test_bad_parameters_are_400(params: dict[str, str]) -> None:
    async with _client(Bus()) as client:
        response = await client.get("/debug/pycm/events", params=params)
    assert response.status_code == 400


@pytest.mark.asyncio
async def test_state_without_a_reducer_is_404() -> None:
    async with _client(Bus()) as client:
        response = await client.get("/debug/pycm/state")
    assert response.status_code == 404


@pytest.mark.asyncio
async def test_close_all_ends_open_streams() -> None:
    import asyncio

    from pycm.server.debug import OpenStreams

    bus = Bus()
    streams = OpenStreams()
    app = Starlette(routes=debug_routes(bus, streams=streams))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as client:
        request = asyncio.create_task(client.get("/debug/pycm/events"), name="stream")
        for _ in range(50):
            await asyncio.sleep(0.01)
            if len(streams):
                break
        assert len(streams) == 1
        bus.emit(ItemAdded(queue="q", key="k"))
        streams.close_all()
        response = await asyncio.wait_for(request, 5)
    assert [e for e, _, _ in _parse(response.text)] == ["trace"]
    assert len(streams) == 0
