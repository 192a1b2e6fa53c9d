"""The object panel's data (web/objects.py): resolving what a viewer typed or clicked, one
history and one chain across sources (a chain that crosses replicas), the lanes and times the
page draws, and ``GET /api/objects``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from pycm.trace import kinds as k
from pycm.trace.objref import ObjectRef, RefError
from pycm.trace.state import State
from pycm.trace.state.object_steps import step_dict
from tests.trace.state.script import T0, Feed, S
from tests.trace.state.test_objects import DEPLOY, RS, scale_story
from web.hub import Hub
from web.live import live_routes
from web.mount import _state_behind
from web.objects import OUTSIDE, object_view, resolve


def _story() -> tuple[dict[str, State], dict[str, str]]:
    f = Feed()
    spans = scale_story(f)
    return {"r1": f.state}, spans


def _service_named_web(state: State) -> None:
    f = Feed(state)
    f(
        k.ApiRequestCompleted(
            verb="create", resource="services", namespace="default", name="web", code=201
        ),
        at=2.0,
        instance="b",
    )


@pytest.mark.parametrize(
    ("text", "controller", "want", "others"),
    [
        pytest.param("deployments/default/web", "", DEPLOY, [], id="full"),
        pytest.param("deploy/default/web", "", DEPLOY, [], id="short-name"),
        pytest.param("default/web", "", DEPLOY, ["services/default/web"], id="key-deploy-first"),
        pytest.param(
            "default/web", "nope", DEPLOY, ["services/default/web"], id="key-unknown-controller"
        ),
        pytest.param("default/web-6dc5", "replicaset", RS, [], id="key-of-a-controller"),
        pytest.param("default/nothing", "", None, [], id="key-nothing-touched"),
        pytest.param("  default/web-6dc5/ ", "", RS, [], id="spaces-and-slash"),
    ],
)
def test_resolve_table(
    text: str, controller: str, want: ObjectRef | None, others: list[str]
) -> None:
    states, _ = _story()
    _service_named_web(states["r1"])
    ref, rest = resolve(states, text, controller)
    assert ref == want
    assert [r.path for r in rest] == others


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "want resource/namespace/name", id="empty"),
        pytest.param("a/b/c/d", "want resource/namespace/name", id="four-parts"),
        pytest.param("Default/Web", "'Default' is not a valid namespace", id="bad-key"),
        pytest.param("gizmos/default/web", "unknown resource 'gizmos'", id="unknown-resource"),
        pytest.param("deployments/default/", "want deployments/namespace/name", id="no-name"),
        pytest.param("deployments//web", "want deployments/namespace/name", id="no-namespace"),
        pytest.param("x" * 700, "700 characters", id="too-long"),
    ],
)
def test_resolve_bad_input_is_a_one_line_ref_error(text: str, message: str) -> None:
    states, _ = _story()
    with pytest.raises(RefError) as caught:
        resolve(states, text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_object_view_chain_has_lanes_and_times_root_writer_outside() -> None:
    states, spans = _story()
    view = object_view(states, RS)
    chain = view["chain"]
    assert [(c["what"], c["lane"]) for c in chain] == [
        ("reconcile", "replicaset"),
        ("write", "deployment"),
        ("writer", OUTSIDE),
    ]
    assert chain[2]["writer"] == "kubectl-scale"
    assert chain[2]["paths"] == "spec.replicas"
    d_begin = step_dict(states["r1"].objects.spans[spans["deployment"]])["ts"]
    assert chain[1]["at"] == d_begin == T0 + S
    # The writer's update reached the deployment queue 1.5 ms before its reconcile began.
    assert chain[2]["at"] == T0 + S - 1_500_000
    assert chain[0]["at"] == T0 + int(1.01 * S)
    assert view["path"] == "replicasets/default/web-6dc5"
    assert [(s["step"], s["controller"]) for s in view["steps"]] == [
        ("write", "deployment"),
        ("watch", "replicaset"),
        ("reconcile", "replicaset"),
        ("event", "replicaset"),
    ]


def test_object_view_chain_crosses_sources_after_a_failover() -> None:
    """The old leader's deployment reconcile wrote the ReplicaSet; the new leader reconciled
    it: only the old leader's source indexed the cause."""
    old, new = Feed(), Feed()
    d_span = "00000000000000d1"
    old(
        k.ReconcileStarted(
            controller="deployment",
            key="default/web",
            resource="deployments",
            trigger_kind="Deployment",
            trigger_object="default/web",
            trigger_event="update",
            trigger_writer="kubectl-scale",
            trigger_paths="spec.replicas",
            trigger_merged=1,
        ),
        at=1.0,
        instance="old",
        span_id=d_span,
        trace_id="d" * 32,
    )
    new(
        k.ReconcileStarted(
            controller="replicaset",
            key="default/web-6dc5",
            resource="replicasets",
            trigger_kind="ReplicaSet",
            trigger_object="default/web-6dc5",
            trigger_event="add",
            trigger_rv="13",
            trigger_span_id=d_span,
            trigger_trace_id="d" * 32,
            trigger_controller="deployment",
            trigger_key="default/web",
            trigger_verb="create",
            trigger_merged=1,
        ),
        at=5.0,
        instance="new",
        span_id="00000000000000e1",
        trace_id="e" * 32,
    )
    view = object_view({"old": old.state, "new": new.state}, RS)
    assert [c["what"] for c in view["chain"]] == ["reconcile", "write", "writer"]
    assert [c["instance"] for c in view["chain"][:2]] == ["new", "old"]


def test_object_view_of_an_object_nothing_touched_has_no_steps() -> None:
    states, _ = _story()
    view = object_view(states, ObjectRef("pods", "default", "ghost"))
    assert (view["steps"], view["chain"], view["path"]) == ([], [], "pods/default/ghost")


def test_state_behind_a_bound_snapshot_is_the_managers_state() -> None:
    state = State()
    assert _state_behind(state.snapshot) is state
    assert _state_behind(dict) is None
    assert _state_behind(None) is None


async def _get(hub: Hub, query: dict[str, str]) -> httpx.Response:
    app = Starlette(routes=live_routes(hub))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.get("/api/objects", params=query)


def _hub_with_story() -> Hub:
    hub = Hub("fanin")
    f = Feed()
    scale_story(f)
    hub.add_source("r1").state = f.state
    return hub


@pytest.mark.parametrize(
    ("query", "status", "check"),
    [
        pytest.param(
            {"ref": "default/web-6dc5", "controller": "replicaset"},
            200,
            lambda b: b["path"] == "replicasets/default/web-6dc5" and len(b["chain"]) == 3,
            id="key",
        ),
        pytest.param(
            {"ref": "pods/default/ghost"},
            200,
            lambda b: b["steps"] == [] and b["candidates"] == [],
            id="untouched",
        ),
        pytest.param(
            {"ref": "default/ghost"},
            200,
            lambda b: b["steps"] == [] and b["path"] == "default/ghost",
            id="untouched-key",
        ),
        pytest.param(
            {"ref": "no such thing!"},
            400,
            lambda b: "is not a valid" in b["error"] or "want" in b["error"],
            id="bad",
        ),
        pytest.param({}, 400, lambda b: "want resource/namespace/name" in b["error"], id="none"),
    ],
)
@pytest.mark.asyncio
async def test_objects_route_answers(query: dict[str, str], status: int, check: Any) -> None:
    response = await _get(_hub_with_story(), query)
    assert response.status_code == status
    assert check(response.json()), response.json()


@pytest.mark.asyncio
async def test_objects_route_names_a_source_without_histories() -> None:
    hub = Hub("live")
    hub.add_source("me", snapshot=dict)
    body = (await _get(hub, {"ref": "deployments/default/web"})).json()
    assert body["sources"] == [{"source": "me", "error": "this source keeps no object histories"}]
