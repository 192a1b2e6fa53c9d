"""The HTTP surface, raw (httpx against an in-process emulator)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pycm.sim.errors import too_many_requests
from pycm.sim.handlers import error_response
from pycm.sim.server import Emulator, run_emulator
from tests.sim.conftest import deployment, pod, replicaset

# What kubectl 1.20 sends for `kubectl get`.
TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"


async def _lines(
    http: httpx.AsyncClient, url: str, count: int, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The first ``count`` watch events (or fewer if the server ends the stream)."""
    out: list[dict[str, Any]] = []
    async with asyncio.timeout(5):
        async with http.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line:
                    out.append(json.loads(line))
                if len(out) == count:
                    break
    return out


@pytest.mark.asyncio
async def test_http_anonymous_is_401_but_health_and_version_are_open(emu: Emulator) -> None:
    async with httpx.AsyncClient(base_url=emu.url) as anon:
        r = await anon.get("/api/v1/pods")
        assert r.status_code == 401
        assert r.json()["kind"] == "Status" and r.json()["reason"] == "Unauthorized"
        bad = await anon.get("/api/v1/pods", headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401
        for path in ("/healthz", "/readyz", "/livez"):
            assert (await anon.get(path)).text == "ok"
        assert (await anon.get("/version")).json()["major"] == "1"


@pytest.mark.asyncio
async def test_http_discovery_lists_what_kubectl_needs(http: httpx.AsyncClient) -> None:
    core = {r["name"]: r for r in (await http.get("/api/v1")).json()["resources"]}
    assert core["pods"]["shortNames"] == ["po"] and core["pods"]["categories"] == ["all"]
    assert core["pods"]["singularName"] == "pod" and core["pods"]["namespaced"] is True
    assert core["nodes"]["namespaced"] is False
    assert "watch" in core["pods"]["verbs"] and "deletecollection" in core["pods"]["verbs"]
    assert core["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert {core[n]["shortNames"][0] for n in ("namespaces", "nodes", "configmaps", "events")} == {
        "ns",
        "no",
        "cm",
        "ev",
    }
    apps = {r["name"]: r for r in (await http.get("/apis/apps/v1")).json()["resources"]}
    assert apps["deployments"]["shortNames"] == ["deploy"] and apps["replicasets"][
        "shortNames"
    ] == ["rs"]
    assert (
        apps["deployments/scale"]["kind"] == "Scale"
        and apps["deployments/scale"]["group"] == "autoscaling"
    )
    assert "replicasets/scale" in apps and "replicasets/status" in apps
    groups = {g["name"] for g in (await http.get("/apis")).json()["groups"]}
    assert groups == {
        "apiextensions.k8s.io",  # CustomResourceDefinitions
        "apps",
        "coordination.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "discovery.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
    }
    assert (await http.get("/api")).json()["versions"] == ["v1"]
    for path in ("/openapi/v3/apis/nope/v1", "/apis/nope/v1"):  # (/openapi: test_openapi.py)
        r = await http.get(path)
        assert r.status_code == 404 and r.json()["reason"] == "NotFound"


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        pytest.param("GET", "/api/v1/widgets", None, 404, "NotFound", id="unknown-resource"),
        pytest.param("GET", f"{NS}/pods/nope", None, 404, "NotFound", id="missing-object"),
        pytest.param("PUT", f"{NS}/pods", b"{}", 405, "MethodNotAllowed", id="put-collection"),
        pytest.param(
            "GET",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            None,
            405,
            "MethodNotAllowed",
            id="list-reviews",
        ),
        pytest.param(
            "POST", f"{NS}/configmaps", b"{not json", 400, "BadRequest", id="malformed-json"
        ),
        pytest.param(
            "POST",
            f"{NS}/configmaps",
            orjson.dumps({"kind": "Pod", "metadata": {"name": "x"}}),
            400,
            "BadRequest",
            id="kind-mismatch",
        ),
        pytest.param(
            "POST",
            f"{NS}/configmaps",
            orjson.dumps({"metadata": {"name": "x", "namespace": "kube-system"}}),
            400,
            "BadRequest",
            id="namespace-mismatch",
        ),
        pytest.param(
            "POST",
            f"{NS}/pods",
            orjson.dumps({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            422,
            "Invalid",
            id="no-containers",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces",
            orjson.dumps({"metadata": {"name": "Not.A.Label"}}),
            422,
            "Invalid",
            id="namespace-name-not-a-label",
        ),
        pytest.param(
            "GET",
            f"{NS}/pods?labelSelector=a+in+(b",
            None,
            400,
            "BadRequest",
            id="bad-selector",
        ),
        pytest.param(
            "GET", f"{NS}/pods?continue=garbage", None, 400, "BadRequest", id="bad-continue"
        ),
        pytest.param(
            "POST",
            f"{APPS}/deployments",
            orjson.dumps({"metadata": {"name": "d"}, "spec": {"replicas": "3"}}),
            400,
            "BadRequest",
            id="wrong-json-type",
        ),
        pytest.param(
            "DELETE",
            f"{NS}/configmaps/x",
            orjson.dumps({"gracePeriodSeconds": "soon"}),
            400,
            "BadRequest",
            id="bad-delete-options",
        ),
    ],
)
@pytest.mark.asyncio
async def test_http_errors_are_status_objects(
    http: httpx.AsyncClient, method: str, path: str, body: bytes | None, code: int, reason: str
) -> None:
    r = await http.request(method, path, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == code
    status = r.json()
    assert (status["kind"], status["apiVersion"], status["status"]) == ("Status", "v1", "Failure")
    assert (status["code"], status["reason"]) == (code, reason)


@pytest.mark.asyncio
async def test_http_invalid_lists_field_causes(http: httpx.AsyncClient) -> None:
    body = pod("p")
    body["spec"]["containers"] = [{"name": "a"}, {"name": "a", "image": "x"}]
    r = await http.post(f"{NS}/pods", json=body)
    assert r.status_code == 422
    causes = {(c["field"], c["reason"]) for c in r.json()["details"]["causes"]}
    assert causes == {
        ("spec.containers[0].image", "FieldValueRequired"),
        ("spec.containers[1].name", "FieldValueDuplicate"),
    }
    r = await http.post(f"{APPS}/deployments", json={"metadata": {"name": "d"}, "spec": {}})
    fields = {c["field"] for c in r.json()["details"]["causes"]}
    assert {"spec.selector", "spec.template"} <= fields
    r = await http.post(f"{NS}/configmaps", json={"metadata": {}})
    assert r.json()["details"]["causes"][0]["field"] == "metadata.name"


@pytest.mark.asyncio
async def test_http_table_columns(http: httpx.AsyncClient) -> None:
    await http.post(f"{APPS}/deployments", json=deployment("web", 3))
    await http.post(f"{APPS}/replicasets", json=replicaset("web-1", 2))
    await http.post(f"{NS}/pods", json=pod("p"))
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
    await http.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", json=lease)

    async def table(path: str) -> dict[str, Any]:
        r = await http.get(path, headers={"Accept": TABLE})
        assert r.status_code == 200
        body = r.json()
        assert (body["kind"], body["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        return body

    def headers(body: dict[str, Any]) -> list[str]:
        return [c["name"].upper() for c in body["columnDefinitions"] if c["priority"] == 0]

    d = await table(f"{APPS}/deployments")
    assert headers(d) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert d["rows"][0]["cells"][:4] == ["web", "0/3", 0, 0]
    assert d["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    rs = await table(f"{APPS}/replicasets")
    assert headers(rs) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert rs["rows"][0]["cells"][:4] == ["web-1", 2, 0, 0]
    p = await table(f"{NS}/pods")
    assert headers(p) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert p["rows"][0]["cells"][:4] == ["p", "0/1", "Pending", 0]
    assert [c["name"] for c in p["columnDefinitions"] if c["priority"] == 1][:2] == ["IP", "Node"]
    leases = await table("/apis/coordination.k8s.io/v1/namespaces/default/leases")
    assert headers(leases) == ["NAME", "HOLDER", "AGE"] and leases["rows"][0]["cells"][:2] == [
        "l",
        "me",
    ]
    nodes = await table("/api/v1/nodes")
    assert headers(nodes) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes["rows"][0]["cells"][:3] == ["sim-node-0", "Ready", "<none>"]
    nss = await table("/api/v1/namespaces?includeObject=Object")
    assert headers(nss) == ["NAME", "STATUS", "AGE"]
    assert nss["rows"][0]["object"]["kind"] == "Namespace"
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c"}, "data": {"a": "1"}})
    cms = await table(f"{NS}/configmaps")
    assert headers(cms) == ["NAME", "DATA", "AGE"] and cms["rows"][0]["cells"][:2] == ["c", 1]
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started",
        "message": "hi",
        "type": "Normal",
    }
    await http.post(f"{NS}/events", json=event)
    events = await table(f"{NS}/events")
    assert headers(events) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert events["rows"][0]["cells"][1:4] == ["Normal", "Started", "pod/p"]
    one = await table(f"{NS}/pods/p?includeObject=None")
    assert "object" not in one["rows"][0] and len(one["rows"]) == 1


@pytest.mark.asyncio
async def test_http_metadata_only_list_get_and_watch(http: httpx.AsyncClient) -> None:
    await http.post(
        f"{NS}/configmaps",
        json={"metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k": "v"}},
    )
    listed = (await http.get(f"{NS}/configmaps", headers={"Accept": META_LIST})).json()
    assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert listed["items"][0]["metadata"]["labels"] == {"a": "b"}
    assert set(listed["items"][0]) == {"kind", "apiVersion", "metadata"}
    one = (await http.get(f"{NS}/configmaps/c", headers={"Accept": META_ONE})).json()
    assert one["kind"] == "PartialObjectMetadata" and "data" not in one
    events = await _lines(http, f"{NS}/configmaps?watch=1", 1, {"Accept": META_ONE})
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["kind"] == "PartialObjectMetadata"
    assert "data" not in events[0]["object"]


@pytest.mark.asyncio
async def test_http_list_resource_version_is_current(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    # (resourceVersionMatch needs a resourceVersion: tests/sim/test_request_options.py.)
    for query in ("resourceVersion=0&resourceVersionMatch=NotOlderThan", "resourceVersion=", ""):
        body = (await http.get(f"{NS}/pods?{query}")).json()
        assert body["metadata"]["resourceVersion"] == str(emu.store.resource_version)


@pytest.mark.asyncio
async def test_http_watch_initial_state_then_live_events(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "before"}})

    async def later() -> None:
        await asyncio.sleep(0.05)
        await http.post(f"{NS}/configmaps", json={"metadata": {"name": "after"}})

    writer = asyncio.create_task(later())
    events = await _lines(http, f"{NS}/configmaps?watch=true", 2)
    await writer
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "before"),
        ("ADDED", "after"),
    ]


@pytest.mark.asyncio
async def test_http_watch_bookmarks_carry_only_the_resource_version(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    rv = emu.store.resource_version
    events = await _lines(
        http, f"{NS}/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}", 1
    )
    assert events[0]["type"] == "BOOKMARK"
    assert events[0]["object"]["metadata"] == {"resourceVersion": str(rv)}
    assert events[0]["object"]["kind"] == "Pod"


@pytest.mark.asyncio
async def test_http_watch_timeout_seconds_ends_the_stream(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    rv = emu.store.resource_version
    events = await _lines(http, f"{NS}/pods?watch=1&timeoutSeconds=1&resourceVersion={rv}", 10)
    assert events == []
    assert 0.9 <= loop.time() - start < 3
    assert emu.store.watcher_count == 0


@pytest.mark.asyncio
async def test_http_watch_expired_version_is_an_error_event(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    rv = emu.store.resource_version
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c"}})
    emu.store.compact()
    events = await _lines(http, f"{NS}/configmaps?watch=1&resourceVersion={rv}", 5)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")


@pytest.mark.asyncio
async def test_http_continue_token_expires_after_compaction(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    for i in range(3):
        await http.post(f"{NS}/configmaps", json={"metadata": {"name": f"c{i}"}})
    first = (await http.get(f"{NS}/configmaps?limit=1")).json()
    token = first["metadata"]["continue"]
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c9"}})
    emu.store.compact()
    r = await http.get(f"{NS}/configmaps", params={"limit": "1", "continue": token})
    assert r.status_code == 410 and r.json()["reason"] == "Expired"


@pytest.mark.asyncio
async def test_http_watch_selector_transitions(http: httpx.AsyncClient, emu: Emulator) -> None:
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "c", "labels": {"on": "no"}}})
    rv = emu.store.resource_version
    merge = {"Content-Type": "application/merge-patch+json"}
    await http.patch(
        f"{NS}/configmaps/c", content=b'{"metadata":{"labels":{"on":"yes"}}}', headers=merge
    )
    await http.patch(
        f"{NS}/configmaps/c", content=b'{"metadata":{"labels":{"on":"no"}}}', headers=merge
    )
    events = await _lines(
        http, f"{NS}/configmaps?watch=1&labelSelector=on%3Dyes&resourceVersion={rv}", 2
    )
    assert [(e["type"], e["object"]["metadata"]["labels"]["on"]) for e in events] == [
        ("ADDED", "yes"),
        ("DELETED", "no"),
    ]


@pytest.mark.asyncio
async def test_http_patch_types(http: httpx.AsyncClient) -> None:
    body = deployment("d")
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    await http.post(f"{APPS}/deployments", json=body)
    smp = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [
                        {"name": "side", "$patch": "delete"},
                        {"name": "app", "image": "nginx:2"},
                    ],
                }
            }
        }
    }
    r = await http.patch(
        f"{APPS}/deployments/d",
        content=orjson.dumps(smp),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert r.status_code == 200
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:2")]
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 2},
        {"op": "add", "path": "/metadata/labels/x", "value": "y"},
    ]
    r = await http.patch(
        f"{APPS}/deployments/d",
        content=orjson.dumps(ops),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert r.json()["spec"]["replicas"] == 2 and r.json()["metadata"]["labels"]["x"] == "y"
    failing = [{"op": "test", "path": "/spec/replicas", "value": 7}]
    r = await http.patch(
        f"{APPS}/deployments/d",
        content=orjson.dumps(failing),
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert r.status_code == 422
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 5}}
    r = await http.patch(
        f"{APPS}/deployments/d",
        content=orjson.dumps(stale),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    r = await http.patch(
        f"{APPS}/deployments/d", content=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 415


@pytest.mark.asyncio
async def test_http_delete_responses_and_options(http: httpx.AsyncClient, emu: Emulator) -> None:
    await http.post(f"{NS}/pods", json=pod("p"))
    r = await http.delete(f"{NS}/pods/p")
    assert r.json()["kind"] == "Pod"  # pods return the object
    await http.post(f"{APPS}/deployments", json=deployment("d"))
    r = await http.request(
        "DELETE",
        f"{APPS}/deployments/d",
        content=orjson.dumps(
            {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "x"}}
        ),
    )
    assert r.status_code == 409
    r = await http.delete(f"{APPS}/deployments/d", params={"propagationPolicy": "Foreground"})
    assert r.json()["kind"] == "Status" and r.json()["status"] == "Success"
    assert r.json()["details"]["name"] == "d" and r.json()["details"]["group"] == "apps"
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "a", "labels": {"x": "1"}}})
    await http.post(f"{NS}/configmaps", json={"metadata": {"name": "b"}})
    r = await http.delete(f"{NS}/configmaps", params={"labelSelector": "x=1"})
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["a"]
    left = (await http.get(f"{NS}/configmaps")).json()["items"]
    assert [c["metadata"]["name"] for c in left] == ["b"]


@pytest.mark.asyncio
async def test_http_before_request_hook_can_answer(http: httpx.AsyncClient, emu: Emulator) -> None:
    async def throttle(request: Request) -> Response | None:
        if request.url.path.endswith("/pods"):
            return error_response(too_many_requests("slow down", retry_after=3))
        return None

    emu.before_request.append(throttle)
    r = await http.get(f"{NS}/pods")
    assert r.status_code == 429 and r.headers["Retry-After"] == "3"
    assert r.json()["reason"] == "TooManyRequests"
    assert (await http.get(f"{NS}/configmaps")).status_code == 200
    emu.before_request.remove(throttle)
    assert (await http.get(f"{NS}/pods")).status_code == 200


class _Tag:
    """A pure-ASGI middleware that tags every response (the fault engineer's slot)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-sim-tag", b"1")]
            await send(message)

        await self.app(scope, receive, tagged)


@pytest.mark.asyncio
async def test_http_middleware_slot_wraps_the_app() -> None:
    async with (
        run_emulator(middleware=[Middleware(_Tag)], tls=False, kubelet=False) as emu,
        httpx.AsyncClient(base_url=emu.url) as c,
    ):
        assert (await c.get("/healthz")).headers["x-sim-tag"] == "1"


@pytest.mark.asyncio
async def test_http_policy_file_enforces_and_answers_reviews(tmp_path: Path) -> None:
    (tmp_path / "tokens.csv").write_text('alice-token,alice,u1,"devs"\nbob-token,bob,u2\n')
    (tmp_path / "policy.yaml").write_text(
        "rules:\n"
        "  - groups: [devs]\n    verbs: [get, list, watch]\n    apiGroups: ['']\n"
        "    resources: [pods]\n    namespaces: [default]\n"
        "  - users: ['*']\n    verbs: [get]\n    nonResourceURLs: ['/api', '/apis/*']\n"
    )
    async with (
        run_emulator(
            token_auth_file=str(tmp_path / "tokens.csv"),
            authz_policy_file=str(tmp_path / "policy.yaml"),
            tls=False,
            kubelet=False,
        ) as emu,
        httpx.AsyncClient(base_url=emu.url) as c,
    ):

        def auth(token: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {token}"}

        alice, bob, admin = auth("alice-token"), auth("bob-token"), auth(emu.admin_token)
        assert (await c.get(f"{NS}/pods", headers=alice)).status_code == 200
        r = await c.get(f"{NS}/configmaps", headers=alice)
        assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
        assert 'User "alice" cannot list resource "configmaps"' in r.json()["message"]
        assert (
            await c.get("/api/v1/namespaces/kube-system/pods", headers=alice)
        ).status_code == 403
        assert (await c.get(f"{NS}/pods", headers=bob)).status_code == 403
        assert (await c.get("/apis/apps/v1", headers=bob)).status_code == 200
        assert (await c.get("/api/v1", headers=bob)).status_code == 403
        assert (await c.get(f"{NS}/configmaps", headers=admin)).status_code == 200

        async def sar(spec: dict[str, Any]) -> bool:
            r = await c.post(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                json={"spec": spec},
                headers=admin,
            )
            assert r.status_code == 201
            return bool(r.json()["status"]["allowed"])

        pods = {"verb": "watch", "resource": "pods", "namespace": "default"}
        assert await sar({"user": "carol", "groups": ["devs"], "resourceAttributes": pods})
        assert not await sar({"user": "carol", "groups": ["ops"], "resourceAttributes": pods})
        assert not await sar(
            {
                "user": "carol",
                "groups": ["devs"],
                "resourceAttributes": {**pods, "verb": "delete"},
            }
        )
        assert await sar(
            {"user": "x", "nonResourceAttributes": {"path": "/apis/apps", "verb": "get"}}
        )
        assert not await sar(
            {"user": "x", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
        )


@pytest.mark.asyncio
async def test_http_tls_serves_with_the_kubeconfig_ca() -> None:
    import ssl

    import yaml

    async with run_emulator(tls=True, kubelet=False) as emu:
        assert emu.url.startswith("https://127.0.0.1:")
        cfg = yaml.safe_load(emu.kubeconfig_path.read_text())
        assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
        assert emu.ca_pem is not None
        context = ssl.create_default_context(cadata=emu.ca_pem.decode())
        headers = {"Authorization": f"Bearer {emu.admin_token}"}
        async with httpx.AsyncClient(base_url=emu.url, verify=context, headers=headers) as c:
            assert (await c.get("/api/v1/namespaces")).status_code == 200


@pytest.mark.asyncio
async def test_http_dry_run_is_refused_not_written(http: httpx.AsyncClient, emu: Emulator) -> None:
    r = await http.post(f"{NS}/configmaps?dryRun=All", json={"metadata": {"name": "dry"}})
    assert r.status_code == 400
    assert emu.store.peek(emu.store.resource("configmaps"), "default", "dry") is None


@pytest.mark.asyncio
async def test_emulator_runnables_start_after_serving_and_stop_first() -> None:
    seen: list[str] = []

    async def kubelet(emulator: Emulator) -> None:
        # (The try spans the client too: the stop may come while the client closes.)
        try:
            async with httpx.AsyncClient(base_url=emulator.url) as c:
                seen.append((await c.get("/healthz")).text)  # the server is already up
            await asyncio.Event().wait()
        finally:
            seen.append("cancelled")

    async with run_emulator(runnables={"kubelet": kubelet}, tls=False, kubelet=False) as emu:
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen == ["ok"]
    assert seen == ["ok", "cancelled"]
    assert emu.failures == []


@pytest.mark.asyncio
async def test_http_watch_as_table_sends_rows(http: httpx.AsyncClient) -> None:
    await http.post(f"{NS}/pods", json=pod("p"))
    events = await _lines(http, f"{NS}/pods?watch=1", 1, {"Accept": TABLE})
    table = events[0]["object"]
    assert (events[0]["type"], table["kind"]) == ("ADDED", "Table")
    assert [row["cells"][0] for row in table["rows"]] == ["p"]
    assert table["columnDefinitions"][0]["name"] == "Name"


@pytest.mark.asyncio
async def test_http_namespace_lifecycle(http: httpx.AsyncClient, emu: Emulator) -> None:
    r = await http.post("/api/v1/namespaces", json={"metadata": {"name": "scratch"}})
    assert r.status_code == 201 and r.json()["status"]["phase"] == "Active"
    cms = emu.store.resource("configmaps")
    held = {"metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    await http.post("/api/v1/namespaces/scratch/configmaps", json=held)
    r = await http.delete("/api/v1/namespaces/scratch")
    assert r.json()["status"]["phase"] == "Terminating"
    r = await http.post("/api/v1/namespaces/scratch/configmaps", json={"metadata": {"name": "n"}})
    assert r.status_code == 403
    merge = {"Content-Type": "application/merge-patch+json"}
    await http.patch(
        "/api/v1/namespaces/scratch/configmaps/held",
        content=b'{"metadata":{"finalizers":null}}',
        headers=merge,
    )
    assert emu.store.peek(cms, "scratch", "held") is None
    assert (await http.get("/api/v1/namespaces/scratch")).status_code == 404


@pytest.mark.asyncio
async def test_http_watch_that_falls_behind_is_ended() -> None:
    async with (
        run_emulator(watch_queue_size=5, tls=False, kubelet=False) as emu,
        asyncio.timeout(5),
    ):
        headers = {"Authorization": f"Bearer {emu.admin_token}"}
        cms = emu.store.resource("configmaps")
        rv = emu.store.resource_version
        async with (
            httpx.AsyncClient(base_url=emu.url, headers=headers) as c,
            c.stream("GET", f"{NS}/configmaps?watch=1&resourceVersion={rv}") as response,
        ):
            while emu.store.watcher_count == 0:
                await asyncio.sleep(0.01)
            for i in range(20):  # one burst, faster than any consumer: the queue overflows
                emu.store.create(cms, {"metadata": {"name": f"c{i}"}}, "default")
            lines = [line async for line in response.aiter_lines() if line]
        # The watch ended (its client relists) instead of buffering without bound.
        assert lines == []
        assert emu.store.watcher_count == 0


@pytest.mark.asyncio
async def test_http_idle_keep_alive_connection_outlives_uvicorns_default(emu: Emulator) -> None:
    """An idle connection stays open past uvicorn's default 5 s keep-alive, so a client that
    keeps its own for longer (client-go and pycm.kube: 90 s) never sends on one being closed."""
    host, port = emu.url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    request = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n".encode()

    async def get_ok() -> None:
        writer.write(request)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 200")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        assert await reader.readexactly(length) == b"ok"

    try:
        await get_ok()
        await asyncio.sleep(6.5)
        assert not reader.at_eof(), "the server closed an idle keep-alive connection"
        await get_ok()  # the same connection still serves
    finally:
        writer.close()
        await writer.wait_closed()
