"""GET /debug/pycm/queues: the live contents of each controller's queue; filter, 400s, 404s and
the same authentication and authorization as the other debug routes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from pycm.server.debug_queues import QUEUES_PATH, queues_route
from pycm.trace.bus import Bus
from pycm.util.clock import FakeClock
from pycm.workqueue.rate_limiters import ItemExponentialFailureRateLimiter
from pycm.workqueue.rate_limiting_queue import RateLimitingQueue
from tests.server.conftest import ClientFor, Serve, bearer


def _queues() -> dict[str, Any]:
    clock, bus = FakeClock(), Bus()
    limiter = ItemExponentialFailureRateLimiter(base_delay=2.0, max_delay=60.0)
    deployment = RateLimitingQueue[str]("deployment", clock=clock, bus=bus, rate_limiter=limiter)
    deployment.add("default/web")
    deployment.add_rate_limited("default/db")  # retries 1, due in 2 s
    clock.advance(0.5)
    replicaset = RateLimitingQueue[str]("replicaset", clock=clock, bus=bus)
    return {"deployment": deployment, "replicaset": replicaset}


def _client(queues: dict[str, Any]) -> httpx.AsyncClient:
    route = queues_route(
        lambda: queues, instance="pycm-0", last_error=lambda c, k: f"{c} {k}: 500 boom"
    )
    app = Starlette(routes=[route])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.mark.asyncio
async def test_queues_lists_every_controller_with_waiting_and_backing_off_keys() -> None:
    async with _client(_queues()) as client:
        response = await client.get(QUEUES_PATH)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["instance"] == "pycm-0"
    assert sorted(body["controllers"]) == ["deployment", "replicaset"]
    d = body["controllers"]["deployment"]
    assert (d["depth"], d["waiting_count"], d["backing_off_count"], d["processing_count"]) == (
        1,
        1,
        1,
        0,
    )
    assert d["waiting"] == [{"key": "default/web", "age_s": 0.5}]
    assert d["backing_off"] == [
        {
            "key": "default/db",
            "retries": 1,
            "next_retry_in_s": 1.5,
            "next_retry_at": "2023-11-14T22:13:22.000Z",  # FakeClock's wall start + 2 s
            "last_error": "deployment default/db: 500 boom",
        }
    ]
    assert d["processing"] == []


@pytest.mark.asyncio
async def test_queues_controller_filter_and_limit() -> None:
    queues = _queues()
    queues["deployment"].add("default/api")
    async with _client(queues) as client:
        response = await client.get(QUEUES_PATH, params={"controller": "deployment", "limit": "1"})
    body = response.json()
    assert list(body["controllers"]) == ["deployment"]
    d = body["controllers"]["deployment"]
    assert d["waiting_count"] == 2
    assert [w["key"] for w in d["waiting"]] == ["default/web"]


@pytest.mark.asyncio
async def test_queues_unknown_controller_is_404_naming_the_running_ones() -> None:
    async with _client(_queues()) as client:
        response = await client.get(QUEUES_PATH, params={"controller": "nope"})
    assert response.status_code == 404
    assert response.json() == {
        "error": "no controller 'nope' runs here; running: deployment, replicaset"
    }
    async with _client({}) as client:
        response = await client.get(QUEUES_PATH, params={"controller": "deployment"})
    assert response.status_code == 404
    assert "not leading" in response.json()["error"]


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("limit=abc", id="limit-not-int"),
        pytest.param("limit=0", id="limit-zero"),
        pytest.param("limit=10001", id="limit-too-big"),
        pytest.param("controllers=deployment", id="unknown-param"),
        pytest.param("controller=deployment&controller=replicaset", id="controller-twice"),
    ],
)
@pytest.mark.asyncio
async def test_queues_bad_query_is_400(query: str) -> None:
    async with _client(_queues()) as client:
        response = await client.get(f"{QUEUES_PATH}?{query}")
    assert response.status_code == 400
    assert response.json()["error"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param(bearer("alice-token"), 200, id="allowed"),
        pytest.param(bearer("wrong-token"), 401, id="bad-token"),
        pytest.param({}, 403, id="anonymous"),
    ],
)
@pytest.mark.asyncio
async def test_queues_authenticated_and_authorized_as_the_debug_routes(
    serve: Serve, client_for: ClientFor, headers: dict[str, str], status: int
) -> None:
    served = await serve(routes=[queues_route(_queues)])
    response = await client_for(served.server.cert_file).get(
        f"{served.url}{QUEUES_PATH}", headers=headers
    )
    assert response.status_code == status
    if status == 403:
        assert response.json()["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/debug/pycm/queues".'
        )
