"""The client's verbs against httpx.MockTransport: exact requests, errors, retries, limits,
trace points and metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from prometheus_client import CollectorRegistry

from pycm.api.labels import parse
from pycm.kube import (
    DEPLOYMENTS,
    LEASES,
    NODES,
    PODS,
    Client,
    Conflict,
    Expired,
    NotFound,
    PatchType,
    Timeout,
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from pycm.kube.client import ACCEPT_METADATA, ACCEPT_METADATA_LIST, MAX_RETRIES
from pycm.trace.bus import Bus
from pycm.trace.kinds import ApiRequestCompleted
from pycm.util.ratelimit import TokenBucket
from tests.kube.conftest import HOST, AutoClock, Recorder, api_events, status

MakeClient = Callable[..., Client]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


async def _get(c: Client) -> Any:
    return await c.get(PODS, "p", namespace="ns")


async def _get_node(c: Client) -> Any:
    return await c.get(NODES, "n1")


async def _get_rv(c: Client) -> Any:
    return await c.get(PODS, "p", namespace="ns", resource_version="0")


async def _list(c: Client) -> Any:
    return await c.list(
        PODS,
        namespace="ns",
        label_selector=parse("app=web,tier in (a,b)"),
        field_selector="spec.nodeName=n1",
        limit=10,
        continue_="tok",
    )


async def _list_all_ns(c: Client) -> Any:
    return await c.list(DEPLOYMENTS, resource_version="0")


async def _create(c: Client) -> Any:
    return await c.create(PODS, POD, field_manager="pycm")


async def _update(c: Client) -> Any:
    return await c.update(PODS, POD)


async def _update_status(c: Client) -> Any:
    return await c.update_status(PODS, POD)


async def _delete(c: Client) -> Any:
    return await c.delete(PODS, "p", namespace="ns")


async def _delete_collection(c: Client) -> Any:
    return await c.delete_collection(PODS, namespace="ns", label_selector="app=web")


async def _get_scale(c: Client) -> Any:
    return await c.get_scale(DEPLOYMENTS, "d", namespace="ns")


async def _update_scale(c: Client) -> Any:
    return await c.update_scale(DEPLOYMENTS, "d", {"spec": {"replicas": 3}}, namespace="ns")


async def _lease_get(c: Client) -> Any:
    return await c.get(LEASES, "kcm", namespace="kube-system")


@pytest.mark.parametrize(
    ("call", "method", "path", "query", "verb"),
    [
        pytest.param(_get, "GET", "/api/v1/namespaces/ns/pods/p", {}, "get", id="get"),
        pytest.param(_get_node, "GET", "/api/v1/nodes/n1", {}, "get", id="get-cluster-scoped"),
        pytest.param(
            _get_rv,
            "GET",
            "/api/v1/namespaces/ns/pods/p",
            {"resourceVersion": "0"},
            "get",
            id="get-rv",
        ),
        pytest.param(
            _list,
            "GET",
            "/api/v1/namespaces/ns/pods",
            {
                "labelSelector": "app=web,tier in (a,b)",
                "fieldSelector": "spec.nodeName=n1",
                "limit": "10",
                "continue": "tok",
            },
            "list",
            id="list-page",
        ),
        pytest.param(
            _list_all_ns,
            "GET",
            "/apis/apps/v1/deployments",
            {"resourceVersion": "0"},
            "list",
            id="list-all-namespaces",
        ),
        pytest.param(
            _create,
            "POST",
            "/api/v1/namespaces/ns/pods",
            {"fieldManager": "pycm"},
            "create",
            id="create",
        ),
        pytest.param(_update, "PUT", "/api/v1/namespaces/ns/pods/p", {}, "update", id="update"),
        pytest.param(
            _update_status,
            "PUT",
            "/api/v1/namespaces/ns/pods/p/status",
            {},
            "update",
            id="update-status",
        ),
        pytest.param(_delete, "DELETE", "/api/v1/namespaces/ns/pods/p", {}, "delete", id="delete"),
        pytest.param(
            _delete_collection,
            "DELETE",
            "/api/v1/namespaces/ns/pods",
            {"labelSelector": "app=web"},
            "deletecollection",
            id="delete-collection",
        ),
        pytest.param(
            _get_scale,
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            {},
            "get",
            id="get-scale",
        ),
        pytest.param(
            _update_scale,
            "PUT",
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            {},
            "update",
            id="update-scale",
        ),
        pytest.param(
            _lease_get,
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm",
            {},
            "get",
            id="lease-get",
        ),
    ],
)
@pytest.mark.asyncio
async def test_client_verb_sends_exact_request_and_emits_event(
    client: Client,
    recorder: Recorder,
    bus: Bus,
    call: Callable[[Client], Any],
    method: str,
    path: str,
    query: dict[str, str],
    verb: str,
) -> None:
    await call(client)
    req = recorder.last
    assert req.method == method
    assert req.url.path == path
    assert dict(req.url.params) == query
    assert req.headers["authorization"] == "Bearer t0k"
    assert req.headers["accept"] == "application/json"
    assert req.headers["user-agent"].startswith("pycm/")
    (event,) = api_events(bus)
    assert (event.verb, event.method, event.code, event.host) == (verb, method, 200, HOST)
    assert event.bytes == len(b'{"kind":"Pod","metadata":{"name":"x"}}')
    assert event.error == ""


@pytest.mark.asyncio
async def test_client_create_sends_json_body(client: Client, recorder: Recorder) -> None:
    await client.create(PODS, POD)
    assert recorder.last.headers["content-type"] == "application/json"
    assert recorder.body() == POD


@pytest.mark.parametrize(
    ("patch_type", "patch", "content_type"),
    [
        pytest.param(
            PatchType.MERGE,
            {"metadata": {"labels": {"a": "b"}}},
            "application/merge-patch+json",
            id="merge",
        ),
        pytest.param(
            PatchType.STRATEGIC,
            {"spec": {"containers": [{"name": "c"}]}},
            "application/strategic-merge-patch+json",
            id="strategic",
        ),
        pytest.param(
            PatchType.JSON,
            [{"op": "replace", "path": "/spec/replicas", "value": 2}],
            "application/json-patch+json",
            id="json",
        ),
    ],
)
@pytest.mark.asyncio
async def test_client_patch_sends_content_type_per_patch_type(
    client: Client,
    recorder: Recorder,
    bus: Bus,
    patch_type: PatchType,
    patch: Any,
    content_type: str,
) -> None:
    await client.patch(DEPLOYMENTS, "d", patch, namespace="ns", patch_type=patch_type)
    req = recorder.last
    assert (req.method, req.url.path) == ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d")
    assert req.headers["content-type"] == content_type
    assert recorder.body() == patch
    assert api_events(bus)[0].verb == "patch"


@pytest.mark.asyncio
async def test_client_patch_apply_needs_field_manager_and_sends_force(
    client: Client, recorder: Recorder
) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(PODS, "p", {}, namespace="ns", patch_type=PatchType.APPLY)
    await client.patch(
        PODS, "p", POD, namespace="ns", patch_type=PatchType.APPLY, field_manager="m", force=True
    )
    assert recorder.last.headers["content-type"] == "application/apply-patch+yaml"
    assert dict(recorder.last.url.params) == {"fieldManager": "m", "force": "true"}


@pytest.mark.asyncio
async def test_client_patch_json_requires_a_list(client: Client) -> None:
    with pytest.raises(TypeError, match="list of operations"):
        await client.patch(PODS, "p", {"op": "x"}, namespace="ns", patch_type=PatchType.JSON)


@pytest.mark.asyncio
async def test_client_delete_sends_delete_options(client: Client, recorder: Recorder) -> None:
    await client.delete(
        PODS,
        "p",
        namespace="ns",
        uid="u-1",
        resource_version="7",
        propagation_policy="Background",
        grace_period_seconds=0,
    )
    assert recorder.last.headers["content-type"] == "application/json"
    assert recorder.body() == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"uid": "u-1", "resourceVersion": "7"},
        "propagationPolicy": "Background",
        "gracePeriodSeconds": 0,
    }


@pytest.mark.asyncio
async def test_client_metadata_only_sends_partial_object_metadata_accept(
    client: Client, recorder: Recorder
) -> None:
    await client.get(PODS, "p", namespace="ns", metadata_only=True)
    assert recorder.last.headers["accept"] == ACCEPT_METADATA
    await client.list(PODS, metadata_only=True)
    assert recorder.last.headers["accept"] == ACCEPT_METADATA_LIST
    assert ACCEPT_METADATA_LIST.endswith(",application/json")


@pytest.mark.asyncio
async def test_client_update_without_name_raises(client: Client) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await client.update(PODS, {"metadata": {"namespace": "ns"}})


@pytest.mark.parametrize(
    ("response", "cls"),
    [
        pytest.param(status(404, "NotFound"), NotFound, id="not-found"),
        pytest.param(status(409, "Conflict"), Conflict, id="conflict"),
        pytest.param(status(410, "Expired"), Expired, id="expired"),
        pytest.param(httpx.Response(504, text="gateway"), Timeout, id="504-no-status"),
    ],
)
@pytest.mark.asyncio
async def test_client_error_response_raises_mapped_error_and_records_it(
    client: Client,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    response: httpx.Response,
    cls: type,
) -> None:
    recorder.responses.append(response)
    with pytest.raises(cls):
        await client.get(PODS, "p", namespace="ns")
    (event,) = api_events(bus)
    assert event.code == response.status_code
    assert event.error.startswith(cls.__name__)
    labels = {"code": str(response.status_code), "method": "GET", "host": HOST}
    assert registry.get_sample_value("rest_client_requests_total", labels) == 1.0


@pytest.mark.asyncio
async def test_client_429_retry_after_is_retried_and_counted(
    client: Client, recorder: Recorder, bus: Bus, registry: CollectorRegistry, clock: AutoClock
) -> None:
    throttled = status(429, "TooManyRequests")
    throttled.headers["Retry-After"] = "2"
    recorder.responses += [throttled, status(429, "TooManyRequests"), httpx.Response(200, json={})]
    recorder.responses[1].headers["Retry-After"] = "1"
    assert await client.get(PODS, "p", namespace="ns") == {}
    assert len(recorder.requests) == 3
    assert clock.slept == [2.0, 1.0]
    (event,) = api_events(bus)
    assert (event.retries, event.code) == (2, 200)
    assert event.dur_ns == 3_000_000_000
    retry_labels = {"code": "429", "verb": "GET", "host": HOST}
    assert registry.get_sample_value("rest_client_request_retries_total", retry_labels) == 2.0
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "429", "method": "GET", "host": HOST}
        )
        == 2.0
    )
    assert (
        registry.get_sample_value(
            "rest_client_request_duration_seconds_count", {"verb": "GET", "host": HOST}
        )
        == 1.0
    )
    assert registry.get_sample_value(
        "rest_client_request_duration_seconds_sum", {"verb": "GET", "host": HOST}
    ) == pytest.approx(3.0)


@pytest.mark.asyncio
async def test_client_429_retries_are_bounded(
    client: Client, recorder: Recorder, clock: AutoClock
) -> None:
    def always_throttled(_: httpx.Request) -> httpx.Response:
        resp = status(429, "TooManyRequests")
        resp.headers["Retry-After"] = "1"
        return resp

    recorder.default = always_throttled
    with pytest.raises(TooManyRequests) as info:
        await client.get(PODS, "p", namespace="ns")
    assert info.value.retry_after == 1.0
    assert len(recorder.requests) == MAX_RETRIES + 1
    assert len(clock.slept) == MAX_RETRIES


@pytest.mark.asyncio
async def test_client_429_without_retry_after_is_not_retried(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses.append(status(429, "TooManyRequests"))
    with pytest.raises(TooManyRequests):
        await client.get(PODS, "p", namespace="ns")
    assert len(recorder.requests) == 1


@pytest.mark.asyncio
async def test_client_rate_limiter_wait_is_measured_in_event_and_metric(
    make_client: MakeClient,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    clock: AutoClock,
) -> None:
    limiter = TokenBucket(2.0, 2, clock=clock)
    client = make_client()
    client._limiter = limiter  # the config's bucket replaced by one we watch
    try:
        for _ in range(4):
            await client.get(PODS, "p", namespace="ns")
    finally:
        await client.aclose()
    waits = [e.rate_limiter_wait_ms for e in api_events(bus)]
    assert waits == [0.0, 0.0, 500.0, 500.0]
    labels = {"verb": "GET", "host": HOST}
    assert (
        registry.get_sample_value("rest_client_rate_limiter_duration_seconds_count", labels) == 4.0
    )
    assert registry.get_sample_value(
        "rest_client_rate_limiter_duration_seconds_sum", labels
    ) == pytest.approx(1.0)


@pytest.mark.asyncio
async def test_client_qps_from_config_builds_token_bucket(
    make_client: MakeClient, bus: Bus
) -> None:
    client = make_client(qps=1.0, burst=1)
    try:
        await client.get(PODS, "p", namespace="ns")
        await client.get(PODS, "p", namespace="ns")
    finally:
        await client.aclose()
    assert [e.rate_limiter_wait_ms for e in api_events(bus)] == [0.0, 1000.0]


@pytest.mark.asyncio
async def test_client_traceparent_header_inside_step(
    make_client: MakeClient, recorder: Recorder, bus: Bus
) -> None:
    from pycm.trace.kinds import ReconcileStarted

    on, all_, off = (
        make_client(),
        make_client(trace_sample_ratio=1.0),
        make_client(propagate_trace_context=False),
    )
    try:
        with bus.step(ReconcileStarted(controller="c", key="ns/p")) as step:
            await on.get(PODS, "p", namespace="ns")
            await all_.get(PODS, "p", namespace="ns")
            await off.get(PODS, "p", namespace="ns")
        await on.get(PODS, "p", namespace="ns")
    finally:
        for c in (on, all_, off):
            await c.aclose()
    trace_id = step.trace_id
    first, second = api_events(bus)[:2]
    # Each request's CLIENT span is the header's parent (the apiserver's span nests under the
    # call), and that span is a child of the step.
    assert (first.trace_id, first.parent_id) == (trace_id, step.span_id)
    assert (second.trace_id, second.parent_id) == (trace_id, step.span_id)
    assert len({first.span_id, second.span_id, step.span_id}) == 3
    # Ratio 0 (nothing exported by ratio): the context travels, marked not sampled.
    assert recorder.requests[0].headers["traceparent"] == f"00-{trace_id}-{first.span_id}-00"
    assert recorder.requests[1].headers["traceparent"] == f"00-{trace_id}-{second.span_id}-01"
    assert "traceparent" not in recorder.requests[2].headers
    assert "traceparent" not in recorder.requests[3].headers


@pytest.mark.asyncio
async def test_client_traceparent_sampled_flag_is_the_tail_samplers_ratio_choice(
    make_client: MakeClient, recorder: Recorder, bus: Bus
) -> None:
    """At ratio r the flag is 01 on exactly the traces the OTel sink keeps by ratio."""
    from pycm.otel.sampling import TailSampler
    from pycm.trace.kinds import ReconcileStarted

    client = make_client(trace_sample_ratio=0.5)
    trace_ids = []
    try:
        for i in range(64):
            with bus.step(ReconcileStarted(controller="c", key=f"ns/p{i}")) as step:
                await client.get(PODS, "p", namespace="ns")
            trace_ids.append(step.trace_id)
    finally:
        await client.aclose()
    flags = [r.headers["traceparent"].rsplit("-", 1)[1] for r in recorder.requests]
    sampler = TailSampler(0.5, 1.0)
    assert flags == ["01" if sampler.by_ratio(t) else "00" for t in trace_ids]
    assert 10 < flags.count("01") < 54  # both kinds occur: the flag is not a constant


@pytest.mark.asyncio
async def test_client_with_user_agent_shares_pool_and_sets_agent(
    client: Client, recorder: Recorder
) -> None:
    child = client.with_user_agent("deployment-controller")
    await child.get(PODS, "p", namespace="ns")
    await child.aclose()  # does not close the shared pool
    await client.get(PODS, "p", namespace="ns")
    assert recorder.requests[0].headers["user-agent"] == "deployment-controller"
    assert recorder.requests[1].headers["user-agent"].startswith("pycm/")


@pytest.mark.parametrize(
    ("exc", "cls"),
    [
        pytest.param(httpx.ConnectError("refused"), TransportError, id="connection-refused"),
        pytest.param(httpx.ReadError("reset"), TransportError, id="connection-reset"),
        pytest.param(httpx.ReadTimeout("slow"), Timeout, id="client-timeout"),
    ],
)
@pytest.mark.asyncio
async def test_client_transport_failure_maps_and_counts_error_code(
    client: Client,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    exc: Exception,
    cls: type,
) -> None:
    def fail(_: httpx.Request) -> httpx.Response:
        raise exc

    recorder.default = fail
    with pytest.raises(cls):
        await client.get(PODS, "p", namespace="ns")
    (event,) = api_events(bus)
    assert event.code == 0
    assert event.error.startswith(cls.__name__)
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "<error>", "method": "GET", "host": HOST}
        )
        == 1.0
    )


def _page(names: list[str], cont: str, rv: str = "10") -> httpx.Response:
    items = [{"metadata": {"name": n}} for n in names]
    return httpx.Response(
        200,
        json={
            "kind": "PodList",
            "metadata": {"resourceVersion": rv, "continue": cont},
            "items": items,
        },
    )


@pytest.mark.asyncio
async def test_client_list_all_follows_continue(client: Client, recorder: Recorder) -> None:
    recorder.responses += [_page(["a", "b"], "c1"), _page(["c"], "", rv="12")]
    result = await client.list_all(PODS, namespace="ns", page_size=2, resource_version="0")
    assert [i["metadata"]["name"] for i in result.items] == ["a", "b", "c"]
    assert (result.resource_version, result.pages) == ("12", 2)
    first, second = (dict(r.url.params) for r in recorder.requests)
    assert first == {"limit": "2", "resourceVersion": "0"}
    assert second == {"limit": "2", "continue": "c1"}


@pytest.mark.asyncio
async def test_client_list_all_expired_continue_relists_unpaged(
    client: Client, recorder: Recorder
) -> None:
    recorder.responses += [_page(["a"], "c1"), status(410, "Expired"), _page(["a", "b"], "", "20")]
    result = await client.list_all(PODS, page_size=1)
    assert [i["metadata"]["name"] for i in result.items] == ["a", "b"]
    assert result.resource_version == "20"
    assert dict(recorder.requests[2].url.params) == {}


@pytest.mark.asyncio
async def test_client_request_raw_returns_body(client: Client, recorder: Recorder) -> None:
    recorder.responses.append(httpx.Response(200, text="ok"))
    resp = await client.request("GET", "/healthz")
    assert (resp.code, resp.text) == (200, "ok")
    assert recorder.last.url.path == "/healthz"


@pytest.mark.asyncio
async def test_client_large_list_is_decoded_into_plain_dicts(
    client: Client, recorder: Recorder
) -> None:
    items = [{"metadata": {"name": f"p{i}", "labels": {"i": str(i)}}} for i in range(2000)]
    recorder.responses.append(
        httpx.Response(200, content=orjson.dumps({"kind": "PodList", "items": items}))
    )
    page = await client.list(PODS)
    assert page["items"] == items
    assert type(page["items"][0]) is dict


def test_api_request_event_kind_is_api_request() -> None:
    assert ApiRequestCompleted.KIND == "api.request"


def test_decode_json_large_body_runs_no_gc_collection_and_restores_gc() -> None:
    import gc

    from pycm.kube.client import GC_PAUSE_BYTES, decode_json

    items = [{"metadata": {"name": f"p{i}", "labels": {"a": "b"}}} for i in range(20000)]
    body = orjson.dumps({"items": items})
    assert len(body) >= GC_PAUSE_BYTES
    collections: list[str] = []

    def count(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(phase)

    gc.callbacks.append(count)
    try:
        decoded = decode_json(body)
    finally:
        gc.callbacks.remove(count)
    assert decoded == {"items": items}
    assert collections == []
    assert gc.isenabled()


@pytest.mark.asyncio
async def test_client_namespace_none_means_all_namespaces(
    client: Client, recorder: Recorder, bus: Bus
) -> None:
    await client.list(PODS, namespace=None)
    assert recorder.last.url.path == "/api/v1/pods"
    assert api_events(bus)[0].namespace == ""


def test_default_user_agent_has_client_go_shape() -> None:
    import re

    from pycm.kube.config import DEFAULT_USER_AGENT

    assert re.fullmatch(r"pycm/[\w.]+ \([a-z]+/\w+\) python/3\.\d+\.\d+", DEFAULT_USER_AGENT)


@pytest.mark.asyncio
async def test_client_unreadable_token_file_fails_request_and_records_error(
    make_client: MakeClient, recorder: Recorder, bus: Bus, tmp_path: Any
) -> None:
    from pycm.kube import ConfigError

    client = make_client(token=None, token_file=str(tmp_path / "missing"))
    try:
        with pytest.raises(ConfigError, match="cannot read the client's token"):
            await client.get(PODS, "p", namespace="ns")
    finally:
        await client.aclose()
    assert recorder.requests == []
    (event,) = api_events(bus)
    assert (event.code, event.error.split(":")[0]) == (0, "ConfigError")


@pytest.mark.asyncio
async def test_client_with_user_agent_shares_the_token_cache_so_a_401_refreshes_all(
    make_client: MakeClient, recorder: Recorder, tmp_path: Any
) -> None:
    # A rotated service-account token whose predecessor was revoked: one client's 401 makes the
    # next request of every client derived from the same root read the new token.
    token = tmp_path / "token"
    token.write_text("old")
    root = make_client(token=None, token_file=str(token))
    controller = root.with_user_agent("pycm/test (controller)")
    await _get(root)
    await _get(controller)
    token.write_text("new")
    recorder.responses.append(status(401, "Unauthorized"))
    with pytest.raises(Unauthorized):
        await _get(root)
    await _get(controller)
    sent = [r.headers["authorization"] for r in recorder.requests]
    assert sent == ["Bearer old", "Bearer old", "Bearer old", "Bearer new"]


@pytest.mark.asyncio
async def test_list_raw_sends_list_params_and_returns_the_bytes_as_sent(
    client: Client, recorder: Recorder, bus: Bus
) -> None:
    body = b'{"kind":"PodList","metadata":{"continue":"c2"},"items":[ ]}'
    recorder.responses.append(httpx.Response(200, content=body))
    got = await client.list_raw(PODS, namespace="ns", limit=500, continue_="c1")
    assert got == body
    assert recorder.last.url.params["limit"] == "500"
    assert recorder.last.url.params["continue"] == "c1"
    event = api_events(bus)[-1]
    assert (event.verb, event.code, event.bytes) == ("list", 200, len(body))
