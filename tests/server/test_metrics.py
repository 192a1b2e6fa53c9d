"""/metrics: the injected registry in the 0.0.4 text format; extra routes after built-ins."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry, Counter, Gauge
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from pycm.server import HealthRegistry, build_routes
from pycm.trace.bus import Bus
from tests.server.conftest import ClientFor, Serve, bearer


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest_asyncio.fixture
async def http(registry: CollectorRegistry) -> AsyncIterator[httpx.AsyncClient]:
    extra = [
        Route("/debug/pycm/state", lambda request: PlainTextResponse("state")),
        Route("/metrics", lambda request: PlainTextResponse("shadowed")),
    ]
    app = build_routes(health=HealthRegistry(bus=Bus()), metrics_registry=registry, routes=extra)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://pycm"
    ) as client:
        yield client


@pytest.mark.asyncio
async def test_metrics_exposes_the_injected_registry_in_text_0_0_4(
    http: httpx.AsyncClient, registry: CollectorRegistry
) -> None:
    gauge = Gauge("leader_election_master_status", "Leader?", ["name"], registry=registry)
    gauge.labels(name="kube-controller-manager").set(1)
    Counter("workqueue_adds", "Adds", ["name"], registry=registry).labels(name="deployment").inc(3)
    response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    lines = response.text.splitlines()
    assert 'leader_election_master_status{name="kube-controller-manager"} 1.0' in lines
    assert 'workqueue_adds_total{name="deployment"} 3.0' in lines
    assert not any(line.startswith("python_gc") for line in lines)  # not the global registry
    # No prometheus_client *_created series (KCM serves none; each counter child had one).
    assert not any("_created" in line for line in lines)


@pytest.mark.asyncio
async def test_routes_extension_point_serves_added_routes_after_built_ins(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.get("/debug/pycm/state")).text == "state"
    assert (await http.get("/metrics")).text != "shadowed"


@pytest.mark.asyncio
async def test_routes_without_registry_or_configz_have_no_such_paths() -> None:
    app = build_routes(health=HealthRegistry(bus=Bus()), metrics_registry=None)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://pycm"
    ) as client:
        statuses = [(await client.get(p)).status_code for p in ("/metrics", "/configz", "/healthz")]
    assert statuses == [404, 404, 200]


@pytest.mark.asyncio
async def test_metrics_over_the_secure_server_for_an_allowed_user(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve()
    Counter("pycm_test_requests", "x", registry=served.registry).inc()
    response = await client_for(served.server.cert_file).get(
        f"{served.url}/metrics", headers=bearer("alice-token")
    )
    assert "pycm_test_requests_total 1.0" in response.text.splitlines()
