"""/healthz, /livez, /readyz: kube's formats exactly, exclusion, per-check paths, mutability,
and HealthCheckChanged on changes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from pycm.server import HealthRegistry, build_routes
from pycm.trace.bus import Bus
from pycm.trace.kinds import HealthCheckChanged
from tests.server.conftest import ClientFor, Serve


class Switch:
    """A check whose result the test sets: None is healthy, a string is the failure reason."""

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason
        self.calls = 0

    async def __call__(self) -> str | None:
        self.calls += 1
        return self.reason


async def _raises() -> str | None:
    raise ConnectionError("lease store at 10.0.0.7 unreachable")


@pytest.fixture
def health(bus: Bus) -> HealthRegistry:
    return HealthRegistry(bus=bus)


@pytest_asyncio.fixture
async def http(health: HealthRegistry) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=build_routes(health=health, metrics_registry=None))
    async with httpx.AsyncClient(transport=transport, base_url="http://pycm") as client:
        yield client


@pytest.mark.asyncio
@pytest.mark.parametrize("endpoint", ["healthz", "livez", "readyz"])
@pytest.mark.parametrize(
    ("query", "body"),
    [
        pytest.param("", "ok", id="plain"),
        pytest.param("?verbose", "[+]ping ok\n{endpoint} check passed\n", id="verbose"),
        pytest.param("?verbose=1", "[+]ping ok\n{endpoint} check passed\n", id="verbose-value"),
    ],
)
async def test_healthz_no_checks_has_ping(
    http: httpx.AsyncClient, endpoint: str, query: str, body: str
) -> None:
    response = await http.get(f"/{endpoint}{query}")
    assert (response.status_code, response.text) == (200, body.format(endpoint=endpoint))
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert (await http.get(f"/{endpoint}/ping")).text == "ok"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "status", "body"),
    [
        pytest.param("", 200, "ok", id="plain"),
        pytest.param(
            "?verbose",
            200,
            "[+]leaderElection ok\n[+]deployment ok\nhealthz check passed\n",
            id="verbose-in-registration-order",
        ),
        pytest.param(
            "?verbose&exclude=deployment",
            200,
            "[+]leaderElection ok\n[+]deployment excluded: ok\nhealthz check passed\n",
            id="exclude-one",
        ),
        pytest.param(
            "?verbose&exclude=deployment&exclude=leaderElection",
            200,
            "[+]leaderElection excluded: ok\n[+]deployment excluded: ok\nhealthz check passed\n",
            id="exclude-repeated",
        ),
        pytest.param(
            "?verbose&exclude=nope&exclude=alsonope",
            200,
            "[+]leaderElection ok\n[+]deployment ok\n"
            'warn: some health checks cannot be excluded: no matches for "alsonope", "nope"\n'
            "healthz check passed\n",
            id="exclude-unknown-warns",
        ),
    ],
)
async def test_healthz_passing_checks_format(
    http: httpx.AsyncClient, health: HealthRegistry, query: str, status: int, body: str
) -> None:
    health.add("leaderElection", Switch())
    health.add("deployment", Switch())
    response = await http.get(f"/healthz{query}")
    assert (response.status_code, response.text) == (status, body)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "status", "body"),
    [
        pytest.param(
            "",
            500,
            "[+]leaderElection ok\n[-]deployment failed: reason withheld\nhealthz check failed\n",
            id="failure-always-verbose",
        ),
        pytest.param(
            "?verbose",
            500,
            "[+]leaderElection ok\n[-]deployment failed: reason withheld\nhealthz check failed\n",
            id="failure-verbose",
        ),
        pytest.param("?exclude=deployment", 200, "ok", id="failing-check-excluded"),
    ],
)
async def test_healthz_failing_check_format(
    http: httpx.AsyncClient, health: HealthRegistry, query: str, status: int, body: str
) -> None:
    health.add("leaderElection", Switch())
    health.add("deployment", Switch("informers not synced after 30s"))
    response = await http.get(f"/healthz{query}")
    assert (response.status_code, response.text) == (status, body)
    assert "informers" not in response.text


@pytest.mark.asyncio
async def test_healthz_raising_check_fails_with_reason_logged_not_sent(
    http: httpx.AsyncClient, health: HealthRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    health.add("store", _raises)
    with caplog.at_level(logging.INFO, logger="pycm.server.healthz"):
        root = await http.get("/healthz")
        one = await http.get("/healthz/store")
    assert (root.status_code, root.text) == (
        500,
        "[-]store failed: reason withheld\nhealthz check failed\n",
    )
    assert (one.status_code, one.text) == (500, "internal server error: reason withheld\n")
    assert "10.0.0.7" not in root.text + one.text
    assert any("10.0.0.7 unreachable" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        pytest.param("/healthz/good", 200, "ok", id="passing"),
        pytest.param("/healthz/bad", 500, "internal server error: reason withheld\n", id="failing"),
        pytest.param("/healthz/ping", 404, "404 page not found\n", id="no-ping-once-checks-exist"),
        pytest.param("/healthz/unknown", 404, "404 page not found\n", id="unknown"),
        pytest.param("/livez/good", 200, "ok", id="on-livez"),
        pytest.param("/readyz/good", 404, "404 page not found\n", id="not-on-readyz"),
    ],
)
async def test_healthz_per_check_paths(
    http: httpx.AsyncClient, health: HealthRegistry, path: str, status: int, body: str
) -> None:
    health.add("good", Switch(), readyz=False)
    health.add("bad", Switch("down"))
    response = await http.get(path)
    assert (response.status_code, response.text) == (status, body)


@pytest.mark.asyncio
async def test_healthz_livez_readyz_membership_is_per_check(
    http: httpx.AsyncClient, health: HealthRegistry
) -> None:
    health.add("leaderElection", Switch("lease lost"), readyz=False)
    health.add("informers", Switch("not synced"), livez=False)
    texts = {e: (await http.get(f"/{e}")).text for e in ("healthz", "livez", "readyz")}
    assert texts == {
        "healthz": "[-]leaderElection failed: reason withheld\n"
        "[-]informers failed: reason withheld\nhealthz check failed\n",
        "livez": "[-]leaderElection failed: reason withheld\nlivez check failed\n",
        "readyz": "[-]informers failed: reason withheld\nreadyz check failed\n",
    }


@pytest.mark.asyncio
async def test_healthz_checks_added_while_serving_are_seen_at_once(
    http: httpx.AsyncClient, health: HealthRegistry
) -> None:
    assert (await http.get("/healthz?verbose")).text == "[+]ping ok\nhealthz check passed\n"
    health.add("deployment-controller", Switch())
    assert (await http.get("/healthz?verbose")).text == (
        "[+]deployment-controller ok\nhealthz check passed\n"
    )
    health.add("replicaset-controller", Switch("stuck"))
    assert (await http.get("/healthz")).status_code == 500


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("a/b", id="slash"),
        pytest.param(" padded", id="whitespace"),
        pytest.param("dup", id="duplicate"),
    ],
)
def test_health_registry_add_invalid_name_rejected(health: HealthRegistry, name: str) -> None:
    health.add("dup", Switch())
    with pytest.raises(ValueError):
        health.add(name, Switch())


@pytest.mark.asyncio
async def test_health_check_changed_emitted_on_first_result_and_changes_only(
    http: httpx.AsyncClient, health: HealthRegistry, bus: Bus
) -> None:
    switch = Switch()
    health.add("leaderElection", switch)
    for reason in (None, None, "lease expired", "lease expired", None):
        switch.reason = reason
        await http.get("/healthz")
    changes = [
        (e.check, e.healthy, e.reason) for e in bus._ring if isinstance(e, HealthCheckChanged)
    ]
    assert changes == [
        ("leaderElection", True, ""),
        ("leaderElection", False, "lease expired"),
        ("leaderElection", True, ""),
    ]
    assert switch.calls == 5


@pytest.mark.asyncio
async def test_healthz_excluded_check_is_not_run(
    http: httpx.AsyncClient, health: HealthRegistry
) -> None:
    switch = Switch()
    health.add("slow", switch)
    await http.get("/healthz?exclude=slow")
    assert switch.calls == 0


@pytest.mark.asyncio
async def test_healthz_over_the_secure_server_needs_no_credentials(
    serve: Serve, client_for: ClientFor
) -> None:
    served = await serve()
    served.health.add("leaderElection", Switch("lease lost"))
    response = await client_for(served.server.cert_file).get(f"{served.url}/healthz")
    assert (response.status_code, response.text) == (
        500,
        "[-]leaderElection failed: reason withheld\nhealthz check failed\n",
    )
