"""GET /debug/pycm/objects/<resource>/<namespace>/<name> and the stream's objects=: one
object's history and chain; 400 for a malformed reference, 404 for an unknown resource;
behind the same authentication and authorization as /debug/pycm/state."""

from __future__ import annotations

import httpx
import orjson
import pytest
from starlette.applications import Starlette

from pycm.server.debug import debug_routes
from pycm.server.debug_objects import objects_route
from pycm.trace.bus import Bus
from pycm.trace.kinds import ApiRequestCompleted
from pycm.trace.state import State
from tests.server.conftest import ClientFor, Serve, bearer
from tests.server.test_debug_routes import _parse
from tests.trace.state.script import Feed
from tests.trace.state.test_objects import scale_story


def _state() -> State:
    f = Feed()
    scale_story(f)
    f(
        ApiRequestCompleted(verb="update", resource="nodes", name="n1", code=200),
        at=2,
        span_id=f.span(),
    )
    return f.state


def _client(state: State | None) -> httpx.AsyncClient:
    bus = Bus()
    bus.emit(ApiRequestCompleted(verb="get"))  # one event: a stream with limit=1 ends after it
    routes = [
        *debug_routes(
            bus,
            state.snapshot if state is not None else None,
            history=state.objects.history if state is not None else None,
        ),
        objects_route(lambda: state, instance="a"),
    ]
    app = Starlette(routes=routes)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.mark.asyncio
async def test_objects_route_returns_history_and_chain() -> None:
    async with _client(_state()) as client:
        response = await client.get("/debug/pycm/objects/replicasets/default/web-6dc5")
        short = await client.get("/debug/pycm/objects/rs/default/web-6dc5")
    assert response.status_code == 200
    body = response.json()
    assert (body["resource"], body["namespace"], body["name"]) == (
        "replicasets",
        "default",
        "web-6dc5",
    )
    assert [s["step"] for s in body["steps"]] == ["write", "watch", "reconcile", "event"]
    assert [c["what"] for c in body["chain"]] == ["reconcile", "write", "writer"]
    assert body["sources"] == [{"source": "a", "error": ""}]
    assert short.json() == body


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        pytest.param("deployments/default/nothing", 200, None, id="unseen-object"),
        pytest.param("nodes/n1", 200, None, id="cluster-scoped"),
        pytest.param("deployments/default", 400, "namespaced", id="namespaced-without-ns"),
        pytest.param("deployments/Default/web", 400, "not a valid namespace", id="bad-namespace"),
        pytest.param("a/b/c/d", 400, "want resource/namespace/name", id="too-many-parts"),
        pytest.param("gizmos/default/web", 404, "unknown resource", id="unknown-resource"),
        pytest.param("deployments/default/web?steps=3", 400, "query", id="query-parameter"),
    ],
)
@pytest.mark.asyncio
async def test_objects_route_bad_input_is_400_unknown_resource_404(
    path: str, status: int, error: str | None
) -> None:
    async with _client(_state()) as client:
        response = await client.get(f"/debug/pycm/objects/{path}")
    assert response.status_code == status
    if error is not None:
        assert error in response.json()["error"]
        assert "\n" not in response.json()["error"]
    elif status == 200:
        assert response.json()["chain"] is not None


@pytest.mark.asyncio
async def test_objects_route_without_a_reducer_is_404() -> None:
    async with _client(None) as client:
        response = await client.get("/debug/pycm/objects/deployments/default/web")
    assert response.status_code == 404


@pytest.mark.asyncio
async def test_objects_route_with_histories_off_is_404_saying_so() -> None:
    async with _client(State(histories=False)) as client:
        r = await client.get("/debug/pycm/objects/deployments/default/web")
    assert r.status_code == 404
    assert "--object-histories=false" in r.json()["error"]


@pytest.mark.asyncio
async def test_stream_objects_parameter_carries_their_histories_in_snapshots() -> None:
    async with _client(_state()) as client:
        plain = await client.get(
            "/debug/pycm/events", params={"limit": "1", "since": "0"}, timeout=5
        )
        asked = await client.get(
            "/debug/pycm/events",
            params={
                "objects": "deployments/default/web,pods/default/none",
                "limit": "1",
                "since": "0",
            },
            timeout=5,
        )
        bad = await client.get("/debug/pycm/events", params={"objects": "x/y/z/w"})
    assert plain.status_code == asked.status_code == 200
    snap = orjson.loads(_parse(asked.text)[0][2])
    assert list(snap["objects"]) == ["deployments/default/web"]
    assert [s["step"] for s in snap["objects"]["deployments/default/web"]["steps"]] == [
        "watch",
        "reconcile",
    ]
    assert orjson.loads(_parse(plain.text)[0][2])["objects"] == {}
    assert bad.status_code == 400


@pytest.mark.asyncio
async def test_objects_route_behind_authentication_and_authorization(
    serve: Serve, client_for: ClientFor
) -> None:
    state = _state()
    served = await serve(routes=[objects_route(lambda: state)], allowed=("alice",))
    client = client_for(served.server.cert_file)
    url = f"{served.url}/debug/pycm/objects/deployments/default/web"
    anonymous = await client.get(url)
    allowed = await client.get(url, headers=bearer("alice-token"))
    assert anonymous.status_code == 403
    assert allowed.status_code == 200
    assert [(c.verb, c.path) for c in served.authorizer.calls][-1] == (
        "get",
        "/debug/pycm/objects/deployments/default/web",
    )
