"""Server-side apply over HTTP: ownership, merging, removal and conflicts as
structured-merge-diff's tests state them (each case a sequence of applies and updates by named
managers, then the object and who owns what), plus kube's request-level rules and the official
client's ``patch_namespaced_deployment`` with the apply content type."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client

from pycm.sim import fieldset
from pycm.sim.apply import apply, merge_applied, remove_fields
from pycm.sim.resources import REGISTRY
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.clock import FakeClock
from tests.sim.conftest import deployment

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
APPLY_YAML = {"Content-Type": "application/apply-patch+yaml"}


def cm(name: str = "c", data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    if data is not None:
        body["data"] = data
    return body


def dep(replicas: int | None = None, containers: list[dict[str, Any]] | None = None) -> Any:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
    }
    spec: dict[str, Any] = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if containers is not None:
        spec["selector"] = {"matchLabels": {"app": "d"}}
        spec["template"] = {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": containers},
        }
    if spec:
        body["spec"] = spec
    return body


@dataclass
class Op:
    """One write: an apply (``config``), or with ``update`` a merge patch as an Update."""

    manager: str
    config: dict[str, Any]
    force: bool = False
    update: bool = False
    conflict: str | None = None  # the expected 409 message


@dataclass
class Case:
    path: str  # the collection
    ops: list[Op]
    expect: dict[str, Any]  # a subset of the final object
    owners: dict[str, list[str]]  # manager -> its member paths, in kube's order
    absent: list[str] = field(default_factory=list)  # dotted paths that must not exist


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _subset(expected: Any, got: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in expected.items())
    return bool(expected == got)


CASES = [
    pytest.param(
        Case(
            NS + "/configmaps",
            [Op("a", cm(data={"x": "1"}))],
            {"data": {"x": "1"}},
            {"a": [".data.x"]},
        ),
        id="apply creates the object, its manager owns what it applied",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [Op("a", cm(data={"x": "1"})), Op("b", cm(data={"y": "2"}))],
            {"data": {"x": "1", "y": "2"}},
            {"a": [".data.x"], "b": [".data.y"]},
        ),
        id="two appliers of different fields both keep theirs",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [
                Op("a", cm(data={"x": "1"})),
                Op(
                    "b",
                    cm(data={"x": "2"}),
                    conflict='Apply failed with 1 conflict: conflict with "a": .data.x',
                ),
            ],
            {"data": {"x": "1"}},
            {"a": [".data.x"]},
        ),
        id="a different value for another applier's field is a conflict",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [Op("a", cm(data={"x": "1"})), Op("b", cm(data={"x": "1"}))],
            {"data": {"x": "1"}},
            {"a": [".data.x"], "b": [".data.x"]},
        ),
        id="the same value is shared ownership, not a conflict",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [Op("a", cm(data={"x": "1", "z": "3"})), Op("b", cm(data={"x": "2"}), force=True)],
            {"data": {"x": "2", "z": "3"}},
            {"a": [".data.z"], "b": [".data.x"]},
        ),
        id="force takes the field from its owner",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [Op("a", cm(data={"x": "1", "y": "2"})), Op("a", cm(data={"x": "1"}))],
            {"data": {"x": "1"}},
            {"a": [".data.x"]},
            absent=["data.y"],
        ),
        id="a field its applier stops applying is removed",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [
                Op("a", cm(data={"x": "1", "y": "2"})),
                Op("b", cm(data={"y": "2"})),
                Op("a", cm(data={"x": "1"})),
            ],
            {"data": {"x": "1", "y": "2"}},
            {"a": [".data.x"], "b": [".data.y"]},
        ),
        id="a field another manager also owns stays when one stops applying it",
    ),
    pytest.param(
        Case(
            NS + "/configmaps",
            [
                Op("a", cm(data={"x": "1"})),
                Op("u", {"data": {"x": "9"}}, update=True),
                Op(
                    "a",
                    cm(data={"x": "1", "w": "4"}),
                    conflict='Apply failed with 1 conflict: conflict with "u" using v1: .data.x',
                ),
                Op("a", cm(data={"x": "1", "w": "4"}), force=True),
            ],
            {"data": {"x": "1", "w": "4"}},
            {"a": [".data.w", ".data.x"]},
            absent=[],
        ),
        id="an update takes a field; the applier conflicts with it, then forces it back",
    ),
    pytest.param(
        Case(
            APPS + "/deployments",
            [
                Op("a", dep(1, [{"name": "web", "image": "nginx"}])),
                Op("b", dep(containers=[{"name": "side", "image": "envoy"}])),
            ],
            {"spec": {"replicas": 1}},
            {
                "a": [
                    ".spec.replicas",
                    ".spec.selector",
                    ".spec.template.metadata.labels.app",
                    '.spec.template.spec.containers[name="web"]',
                    '.spec.template.spec.containers[name="web"].image',
                    '.spec.template.spec.containers[name="web"].name',
                ],
                "b": [
                    ".spec.selector",
                    ".spec.template.metadata.labels.app",
                    '.spec.template.spec.containers[name="side"]',
                    '.spec.template.spec.containers[name="side"].image',
                    '.spec.template.spec.containers[name="side"].name',
                ],
            },
        ),
        id="lists merge by key: a second applier adds its container and owns only it",
    ),
    pytest.param(
        Case(
            APPS + "/deployments",
            [
                Op("a", dep(2, [{"name": "web", "image": "nginx"}])),
                Op(
                    "b",
                    dep(3),
                    conflict='Apply failed with 1 conflict: conflict with "a": .spec.replicas',
                ),
            ],
            {"spec": {"replicas": 2}},
            {"b": []},
        ),
        id="the issue's conflict on .spec.replicas",
    ),
]


async def _write(http: httpx.AsyncClient, path: str, op: Op) -> httpx.Response:
    name = op.config.get("metadata", {}).get("name", "c" if "configmaps" in path else "d")
    if op.update:
        return await http.patch(
            f"{path}/{name}?fieldManager={op.manager}",
            json=op.config,
            headers={"Content-Type": "application/merge-patch+json"},
        )
    force = "&force=true" if op.force else ""
    return await http.patch(
        f"{path}/{name}?fieldManager={op.manager}{force}",
        content=yaml.safe_dump(op.config),
        headers=APPLY_YAML,
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES)
async def test_apply_case(http: httpx.AsyncClient, case: Case) -> None:
    created = False
    for op in case.ops:
        r = await _write(http, case.path, op)
        if op.conflict is not None:
            assert r.status_code == 409, r.text
            assert r.json()["reason"] == "Conflict"
            assert r.json()["message"] == op.conflict
            continue
        assert r.status_code == (200 if created else 201), r.text
        created = True
    name = "c" if "configmaps" in case.path else "d"
    got = (await http.get(f"{case.path}/{name}")).json()
    assert _subset(case.expect, got), got
    for dotted in case.absent:
        assert _get(got, dotted) is None
    owners = _owners(got)
    for manager, paths in case.owners.items():
        assert owners.get(manager, []) == paths, owners


def _owners(obj: dict[str, Any]) -> dict[str, list[str]]:
    return {
        e["manager"]: list(fieldset.paths(e["fieldsV1"]))
        for e in obj["metadata"].get("managedFields") or []
    }


# ---------------------------------------------------------------- entries and subresources


@pytest.mark.asyncio
async def test_apply_entry_is_an_apply_operation_without_an_update_for_the_same_write(
    http: httpx.AsyncClient,
) -> None:
    r = await http.patch(
        f"{NS}/configmaps/e?fieldManager=tool",
        content=json.dumps(cm("e", {"k": "v"}, app="x")),
        headers=APPLY_YAML,
    )
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "tool",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": created["metadata"]["creationTimestamp"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {"f:k": {}},
                "f:metadata": {"f:labels": {"f:app": {}}},
            },
        }
    ]
    same = await http.patch(
        f"{NS}/configmaps/e?fieldManager=tool",
        content=json.dumps(cm("e", {"k": "v"}, app="x")),
        headers=APPLY_YAML,
    )
    assert same.status_code == 200
    assert same.json()["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.asyncio
async def test_apply_multiple_conflicts_are_grouped_by_manager(http: httpx.AsyncClient) -> None:
    await http.post(f"{NS}/configmaps?fieldManager=creator", json=cm("m", {"x": "1", "y": "1"}))
    await http.patch(
        f"{NS}/configmaps/m?fieldManager=a", content=json.dumps(cm("m", {"z": "1"})),
        headers=APPLY_YAML,
    )  # fmt: skip
    r = await http.patch(
        f"{NS}/configmaps/m?fieldManager=b",
        content=json.dumps(cm("m", {"x": "2", "y": "2", "z": "2"})),
        headers=APPLY_YAML,
    )
    assert r.status_code == 409
    assert r.json()["message"] == (
        "Apply failed with 3 conflicts: "
        'conflicts with "a":\n- .data.z\n'
        'conflicts with "creator" using v1:\n- .data.x\n- .data.y'
    )
    assert [c["field"] for c in r.json()["details"]["causes"]] == [".data.z", ".data.x", ".data.y"]


@pytest.mark.asyncio
async def test_apply_to_status_owns_only_status(http: httpx.AsyncClient) -> None:
    r = await http.post(f"{APPS}/deployments", json=deployment("s"))
    assert r.status_code == 201
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "s"},
              "spec": {"replicas": 9}, "status": {"observedGeneration": 7}}  # fmt: skip
    r = await http.patch(
        f"{APPS}/deployments/s/status?fieldManager=ctl", content=json.dumps(status),
        headers=APPLY_YAML,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["status"]["observedGeneration"] == 7
    assert got["spec"]["replicas"] == 1  # spec is not the status subresource's
    (entry,) = [e for e in got["metadata"]["managedFields"] if e["manager"] == "ctl"]
    assert entry["operation"] == "Apply"
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}
    # An apply to the main resource ignores status.
    main = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "s"},
            "status": {"observedGeneration": 1}}  # fmt: skip
    r = await http.patch(
        f"{APPS}/deployments/s?fieldManager=main", content=json.dumps(main), headers=APPLY_YAML
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"]["observedGeneration"] == 7
    status["metadata"] = {"name": "none"}
    missing = await http.patch(
        f"{APPS}/deployments/none/status?fieldManager=ctl", content=json.dumps(status),
        headers=APPLY_YAML,
    )  # fmt: skip
    assert missing.status_code == 404


# ---------------------------------------------------------------- the request


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "body", "code", "message"),
    [
        pytest.param(
            "",
            cm("r"),
            422,
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
            "for apply patch",
            id="no fieldManager",
        ),
        pytest.param(
            "?fieldManager=m",
            {"apiVersion": "v1", "metadata": {"name": "r"}},
            400,
            "Object 'Kind' is missing in the apply patch",
            id="no kind",
        ),
        pytest.param(
            "?fieldManager=m",
            {**cm("r"), "kind": "Secret"},
            400,
            "the kind in the body (Secret) does not match the kind of the requested resource "
            "(ConfigMap)",
            id="another kind",
        ),
        pytest.param(
            "?fieldManager=m",
            {**cm("r"), "apiVersion": "v2"},
            400,
            "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1",
            id="another version",
        ),
        pytest.param(
            "?fieldManager=m",
            {**cm("r"), "metadata": {"name": "r", "managedFields": []}},
            400,
            "metadata.managedFields must be nil",
            id="managed fields",
        ),
        pytest.param(
            "?fieldManager=m&force=true",
            "a: [",
            400,
            None,
            id="not YAML",
        ),
        pytest.param(
            "?fieldManager=m",
            cm("other"),
            400,
            "the name of the object (other) does not match the name on the URL (r)",
            id="another name",
        ),
        pytest.param(
            "?fieldManager=m",
            [1, 2],
            400,
            "the body of an apply patch must be an object (YAML or JSON)",
            id="not an object",
        ),
    ],
)
async def test_apply_refuses_bad_requests(
    http: httpx.AsyncClient, query: str, body: Any, code: int, message: str | None
) -> None:
    raw = body if isinstance(body, str) else json.dumps(body)
    r = await http.patch(f"{NS}/configmaps/r{query}", content=raw, headers=APPLY_YAML)
    assert r.status_code == code, r.text
    if message is None:
        assert r.json()["message"].startswith("the body of the request could not be decoded")
    else:
        assert r.json()["message"] == message
    assert (await http.get(f"{NS}/configmaps/r")).status_code == 404


@pytest.mark.asyncio
async def test_apply_body_may_be_yaml_and_unknown_fields_are_pruned(
    http: httpx.AsyncClient,
) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: b\nbogus: 1\n"
    r = await http.patch(f"{NS}/configmaps/y?fieldManager=m", content=body, headers=APPLY_YAML)
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"a": "b"}
    assert "bogus" not in r.json()
    assert r.headers["warning"] == '299 - "unknown field \\"bogus\\""'


# ---------------------------------------------------------------- merging, in process


@pytest.mark.parametrize(
    ("live", "config", "merged"),
    [
        pytest.param({"a": 1, "b": 2}, {"b": 3}, {"a": 1, "b": 3}, id="map merges"),
        pytest.param({"a": 1}, {"a": None}, {}, id="null removes"),
        pytest.param(
            {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
            {"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]},
            {
                "containers": [
                    {"name": "a", "image": "x"},
                    {"name": "b", "image": "z"},
                    {"name": "c", "image": "w"},
                ]
            },
            id="associative list merges by key",
        ),
        pytest.param(
            {"finalizers": ["a", "b"]},
            {"finalizers": ["b", "c"]},
            {"finalizers": ["a", "b", "c"]},
            id="set is a union",
        ),
        pytest.param({"args": ["a", "b"]}, {"args": ["c"]}, {"args": ["c"]}, id="atomic list"),
        pytest.param(
            {"selector": {"matchLabels": {"a": "1"}}},
            {"selector": {"matchLabels": {"b": "2"}}},
            {"selector": {"matchLabels": {"b": "2"}}},
            id="atomic map",
        ),
    ],
)
def test_merge_applied(live: Any, config: Any, merged: Any) -> None:
    before = json.dumps(live)
    assert merge_applied(live, config) == merged
    assert json.dumps(live) == before  # never mutated


def test_remove_fields_keeps_what_another_manager_owns_beneath() -> None:
    obj = {"spec": {"containers": [{"name": "a", "image": "x", "resources": {"cpu": "1"}}]}}
    stale = {"f:spec": {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}}}}
    others = {"f:spec": {"f:containers": {'k:{"name":"a"}': {"f:resources": {}}}}}
    assert remove_fields(obj, stale, others) == {
        "spec": {"containers": [{"name": "a", "resources": {"cpu": "1"}}]}
    }
    assert remove_fields(obj, stale, {}) == {"spec": {"containers": []}}


# ---------------------------------------------------------------- the official client


def test_apply_with_the_official_client(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    body = deployment("official", replicas=2)
    created = apps.patch_namespaced_deployment(
        "official", namespace, body, field_manager="op",
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip
    assert created.spec.replicas == 2
    assert [(e.manager, e.operation) for e in created.metadata.managed_fields] == [("op", "Apply")]
    body["spec"]["replicas"] = 3
    with pytest.raises(client.ApiException) as refused:
        apps.patch_namespaced_deployment(
            "official", namespace, body, field_manager="other",
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
    assert refused.value.status == 409
    assert json.loads(refused.value.body)["message"] == (
        'Apply failed with 1 conflict: conflict with "op": .spec.replicas'
    )
    forced = apps.patch_namespaced_deployment(
        "official", namespace, body, field_manager="other", force=True,
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip
    assert forced.spec.replicas == 3
    owners = {e.manager: e.fields_v1 for e in forced.metadata.managed_fields}
    assert "f:replicas" in owners["other"]["f:spec"]
    assert "f:replicas" not in owners["op"]["f:spec"]


# ---------------------------------------------------------------- in process, with a fake clock


def _store() -> tuple[Store, FakeClock]:
    clock = FakeClock()
    store = Store(clock=clock)
    seed_cluster(store, 1)
    return store, clock


def test_apply_noop_keeps_the_entry_time_and_the_resource_version() -> None:
    store, clock = _store()
    res = REGISTRY.get("apps", "v1", "deployments")
    assert res is not None
    first, created = apply(store, res, "default", "n", deployment("n"), manager="m", force=False)
    assert created
    clock.advance(60)
    again, created = apply(store, res, "default", "n", deployment("n"), manager="m", force=False)
    assert not created
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]
    clock.advance(60)
    changed, _ = apply(store, res, "default", "n", deployment("n", 3), manager="m", force=False)
    (entry,) = changed["metadata"]["managedFields"]
    assert entry["time"] != first["metadata"]["managedFields"][0]["time"]
    assert changed["spec"]["replicas"] == 3


def test_apply_keys_ports_with_their_default_protocol() -> None:
    # The stored port is defaulted to TCP: an apply without protocol is the same item, not a
    # second port; its key is kube's k:{"containerPort":80,"protocol":"TCP"}.
    store, _ = _store()
    res = REGISTRY.get("apps", "v1", "deployments")
    assert res is not None
    body = deployment("p")
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    apply(store, res, "default", "p", body, manager="m", force=False)
    got, _ = apply(store, res, "default", "p", body, manager="m", force=False)
    container = got["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    (entry,) = got["metadata"]["managedFields"]
    owned = list(fieldset.paths(entry["fieldsV1"]))
    assert '.spec.template.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]' in (
        owned
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        pytest.param(
            "/api/v1/namespaces/applied",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"labels": {"a": "b"}}},
            201,
            id="cluster-scoped",
        ),
        pytest.param(
            f"{NS}/services/svc",
            {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}},
            201,
            id="a kind without a schema",
        ),
        pytest.param(
            "/apis/authentication.k8s.io/v1/tokenreviews/t",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"},
            405,
            id="a kind never stored",
        ),
        pytest.param(
            f"{APPS}/deployments/d/scale",
            {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 1}},
            400,
            id="scale",
        ),
    ],
)
async def test_apply_other_kinds_and_subresources(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], code: int
) -> None:
    if path.endswith("/scale"):
        await http.post(f"{APPS}/deployments", json=deployment("d"))
    r = await http.patch(f"{path}?fieldManager=m", content=json.dumps(body), headers=APPLY_YAML)
    assert r.status_code == code, r.text
    if code == 201:
        again = await http.patch(
            f"{path}?fieldManager=m", content=json.dumps(body), headers=APPLY_YAML
        )
        assert again.status_code == 200, again.text
        assert again.json()["metadata"]["managedFields"][0]["operation"] == "Apply"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"},"data":{"k":"v"}}',
            id="json",
        ),
        pytest.param(
            b"{apiVersion: v1, kind: ConfigMap, metadata: {name: y}, data: {k: v}}",
            id="yaml-flow-style",
        ),
        pytest.param(
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n",
            id="yaml-block-style",
        ),
    ],
)
async def test_apply_body_is_json_or_any_yaml(http: httpx.AsyncClient, body: bytes) -> None:
    """JSON (what kubectl and controller-runtime send) is read as JSON, YAML's flow style —
    which starts as JSON does but is not JSON — and block style as YAML: one object either way."""
    r = await http.patch(f"{NS}/configmaps/y?fieldManager=tool", content=body, headers=APPLY_YAML)
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"k": "v"}


@pytest.mark.asyncio
async def test_apply_json_body_too_deep_is_refused(http: httpx.AsyncClient) -> None:
    deep = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"},"data":' + (
        b'{"a":' * 150 + b"1" + b"}" * 150 + b"}"
    )
    r = await http.patch(f"{NS}/configmaps/z?fieldManager=tool", content=deep, headers=APPLY_YAML)
    assert r.status_code == 400 and "max depth" in r.text, r.text
