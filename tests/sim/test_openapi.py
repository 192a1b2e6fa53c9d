"""/openapi/v2 and /openapi/v3: generated from the emulator's schemas (and a CRD hook), typed
as the API's models type them, in JSON and in gnostic's protobuf, with ETags.

kubectl's own reading of the protobuf (validation, explain, apply) is in
tests/sim/kubectl/test_openapi_kubectl.py; here the wire bytes are read back with a small
reader of protobuf's wire format, field numbers from gnostic's OpenAPIv2.proto.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from typing import Any

import httpx
import kubernetes.client
import orjson
import pytest

from pycm.sim.openapi import PROTOBUF_V2, ServedSchema, build_definitions
from pycm.sim.openapi.definitions import LEAF_TYPES, custom_schema_v2, kind_definition_name
from pycm.sim.openapi.gnostic import encode_document
from pycm.sim.resources import REGISTRY, Registry
from pycm.sim.schemas import KINDS, Field, Kept, ListOf, Struct
from pycm.sim.server import Emulator

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
WEBSITE = ServedSchema(
    "example.com",
    "v1",
    "Website",
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["url"],
                "properties": {
                    "url": {"type": "string", "pattern": "^https://"},
                    "replicas": {"type": "integer", "minimum": 1, "nullable": True},
                    "port": {"x-kubernetes-int-or-string": True},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    },
)


# ---------------------------------------------------------------- leaf types


_MODELS = {kind: f"V1{kind}" for kind in KINDS} | {
    "Event": "CoreV1Event",
    "LeaseCandidate": "V1beta1LeaseCandidate",
}
_API_TYPES = {"str": "string", "int": "integer", "bool": "boolean", "datetime": "string"}


def _leaf_types(struct: Struct, model_name: str, found: dict[str, set[str]]) -> None:
    """Every LEAF of ``struct`` by name -> the API's types for it, walking the client's models."""
    model = getattr(kubernetes.client, model_name)
    types = {model.attribute_map[a]: model.openapi_types[a] for a in model.attribute_map}
    for name, field in struct.items():
        api = types.get(name)
        if api is None:
            continue
        _field_types(name, field, api, found)


def _field_types(name: str, field: Field, api: str, found: dict[str, set[str]]) -> None:
    item = re.match(r"^list\[(.+)\]$", api, re.IGNORECASE)
    if isinstance(field, ListOf) and item:
        _leaf_types(field.item, item.group(1), found)
    elif isinstance(field, dict):
        _leaf_types(field, api, found)
    elif field is Kept.LEAF:
        found.setdefault(name, set()).add(api)


def _api_types() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for kind, top in KINDS.items():
        _leaf_types(top, _MODELS[kind], found)
    return found


def _expected(schema: dict[str, Any]) -> str:
    if schema.get("type") == "array":
        return "list[str]"
    if schema.get("format") == "int-or-string":
        return "object"  # the client's type for an IntOrString
    if schema.get("format") == "date-time":
        return "datetime"
    return {"string": "str", "integer": "int", "boolean": "bool"}[schema["type"]]


def test_leaf_types_match_the_apis_models_wherever_the_name_is_a_leaf() -> None:
    found = _api_types()
    wrong = {}
    for name, schema in LEAF_TYPES.items():
        api = {t.lower() for t in found.get(name, set())}
        if not api:
            continue  # a name the schemas declare only in kinds added later
        if api != {_expected(schema).lower()}:
            wrong[name] = (schema, sorted(api))
    assert wrong == {}


def test_leaf_types_check_catches_a_mistyped_name() -> None:
    # The check above could pass vacuously: "replicas" really is an int in the models.
    assert {t.lower() for t in _api_types()["replicas"]} == {"int"}
    assert _expected({"type": "string"}) != "int"


def _model_types(model_name: str) -> dict[str, str]:
    model = getattr(kubernetes.client, model_name)
    return {model.attribute_map[a]: model.openapi_types[a] for a in model.attribute_map}


def _resolve(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return definitions[ref.rsplit("/", 1)[-1]] if ref else schema


def _typed_leaves(
    struct: Struct,
    model_name: str,
    schema: dict[str, Any],
    definitions: dict[str, Any],
    path: str,
    out: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    """Every LEAF of ``struct`` the client's model types, by its path: (the model's type, the
    schema the document gives it), walking the schemas, the models and the document at once."""
    types = _model_types(model_name)
    properties = _resolve(schema, definitions)["properties"]
    for name, field in struct.items():
        api = types.get(name)
        if api is None:
            continue  # a field newer than the client's models
        here, item = f"{path}.{name}", re.match(r"^list\[(.+)\]$", api, re.IGNORECASE)
        if isinstance(field, ListOf) and item:
            items = _resolve(properties[name], definitions)["items"]
            _typed_leaves(field.item, item.group(1), items, definitions, here + "[]", out)
        elif isinstance(field, dict):
            _typed_leaves(field, api, properties[name], definitions, here, out)
        elif field is Kept.LEAF:
            out[here] = (api, _resolve(properties[name], definitions))


def _document_leaves() -> dict[str, tuple[str, dict[str, Any]]]:
    definitions = build_definitions(REGISTRY)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for res in REGISTRY.resources.values():
        if res.kind in KINDS:
            name = kind_definition_name(res.group, res.version, res.kind)
            top = {"$ref": "#/definitions/" + name}
            _typed_leaves(KINDS[res.kind], _MODELS[res.kind], top, definitions, res.kind, out)
    return out


def test_every_leaf_the_models_type_is_typed_as_they_type_it_at_its_path() -> None:
    # kubectl explain prints a leaf's type and kubectl's client-side validation checks it; an
    # untyped leaf would print "<>" and take anything (a Service port "80", a suspend "yes").
    leaves = _document_leaves()
    assert len(leaves) > 400  # the walk reached every kind's leaves, not only a few
    wrong = {
        path: (api, schema)
        for path, (api, schema) in leaves.items()
        if not schema.get("type") or _expected(schema).lower() != api.lower()
    }
    assert wrong == {}


@pytest.mark.parametrize(
    ("path", "want"),
    [
        pytest.param("Service.spec.ports[].port", {"type": "integer", "format": "int32"}, id="svc"),
        pytest.param(
            "Service.spec.ports[].targetPort",
            {"type": "string", "format": "int-or-string"},
            id="target-port",
        ),
        pytest.param(
            "Pod.spec.containers[].livenessProbe.httpGet.port",
            {"type": "string", "format": "int-or-string"},
            id="probe-port",
        ),
        pytest.param("Job.status.ready", {"type": "integer", "format": "int32"}, id="job-ready"),
        pytest.param(
            "Job.status.uncountedTerminatedPods.failed",
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
            id="uncounted-failed",
        ),
        pytest.param("Pod.status.containerStatuses[].ready", {"type": "boolean"}, id="cs-ready"),
        pytest.param("CronJob.spec.suspend", {"type": "boolean"}, id="suspend"),
    ],
)
def test_leaves_sharing_a_name_are_typed_by_their_holder(path: str, want: dict[str, Any]) -> None:
    assert _document_leaves()[path][1] == want


# ---------------------------------------------------------------- definitions


def test_definitions_name_kinds_and_structs_as_kube_does() -> None:
    definitions = build_definitions(REGISTRY)
    deployment = definitions[DEPLOYMENT]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deployment["properties"]["spec"] == {
        "$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    }
    spec = definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert spec["replicas"] == {"type": "integer", "format": "int32"}
    assert spec["strategy"]["properties"]["rollingUpdate"]["properties"]["maxSurge"] == {
        "type": "string",
        "format": "int-or-string",
    }
    assert "type" not in definitions["io.k8s.api.apps.v1.DeploymentSpec"]  # a struct: no type
    lease = definitions["io.k8s.api.coordination.v1.Lease"]
    assert lease["x-kubernetes-group-version-kind"][0]["group"] == "coordination.k8s.io"
    assert definitions["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]


def test_definitions_carry_list_merge_keys_for_both_kinds_of_apply() -> None:
    pod_spec = build_definitions(REGISTRY)["io.k8s.api.core.v1.PodSpec"]["properties"]
    containers = pod_spec["containers"]
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    container = build_definitions(REGISTRY)["io.k8s.api.core.v1.Container"]["properties"]
    assert container["ports"]["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert container["args"]["x-kubernetes-list-type"] == "atomic"
    meta = build_definitions(REGISTRY)["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    assert meta["properties"]["finalizers"]["x-kubernetes-list-type"] == "set"
    assert meta["properties"]["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


@pytest.mark.parametrize(
    ("group", "kind", "name"),
    [
        pytest.param("", "Pod", "io.k8s.api.core.v1.Pod", id="core"),
        pytest.param("apps", "Deployment", "io.k8s.api.apps.v1.Deployment", id="apps"),
        pytest.param(
            "rbac.authorization.k8s.io", "Role", "io.k8s.api.rbac.v1.Role", id="k8s.io group"
        ),
        pytest.param("stable.example.com", "CronTab", "com.example.stable.v1.CronTab", id="crd"),
    ],
)
def test_kind_definition_name(group: str, kind: str, name: str) -> None:
    assert kind_definition_name(group, "v1", kind) == name


@pytest.mark.parametrize(
    ("v3", "v2"),
    [
        pytest.param({"type": "string", "nullable": True}, {"type": "string"}, id="nullable"),
        pytest.param({"x-kubernetes-int-or-string": True}, {}, id="int-or-string"),
        pytest.param(
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "description": "d"},
            {"description": "d"},
            id="preserve-unknown-fields",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer", "maximum": 3}}},
            {"properties": {"a": {"type": "integer", "maximum": 3}}},
            id="struct",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "string"}},
            {"type": "object", "additionalProperties": {"type": "string"}},
            id="map",
        ),
        pytest.param({"type": "object"}, {}, id="object without properties"),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            id="set",
        ),
        pytest.param(
            {"oneOf": [{"required": ["a"]}], "type": "string", "enum": ["x", "y"]},
            {"type": "string", "enum": ["x", "y"]},
            id="oneOf",
        ),
    ],
)
def test_custom_schema_v2(v3: dict[str, Any], v2: dict[str, Any]) -> None:
    assert custom_schema_v2(v3) == v2


def test_custom_schema_depth_is_bounded() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(500):
        deep = {"properties": {"a": deep}}
    converted = custom_schema_v2(deep)
    depth = 0
    while converted.get("properties"):
        converted = converted["properties"]["a"]
        depth += 1
    assert depth <= 66


def test_definitions_include_custom_resources_from_the_hook() -> None:
    definitions = build_definitions(REGISTRY, [WEBSITE])
    website = definitions["com.example.v1.Website"]
    assert website["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Website", "version": "v1"}
    ]
    props = website["properties"]
    assert props["metadata"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    assert props["spec"]["required"] == ["url"]
    assert props["spec"]["properties"]["replicas"] == {"type": "integer", "minimum": 1}


# ---------------------------------------------------------------- protobuf


def _read(buf: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs of one message: ints for varints, floats for fixed64,
    bytes for length-delimited fields."""
    out: list[tuple[int, Any]] = []
    i = 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            byte = buf[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while i < len(buf):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 1:
            out.append((number, struct.unpack("<d", buf[i : i + 8])[0]))
            i += 8
        elif wire == 2:
            size = varint()
            out.append((number, buf[i : i + size]))
            i += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    assert i == len(buf)
    return out


def _fields(buf: bytes, number: int) -> list[Any]:
    return [v for n, v in _read(buf) if n == number]


def test_protobuf_document_reads_back_field_by_field() -> None:
    schema = {
        "description": "a thing",
        "required": ["spec"],
        "properties": {
            "replicas": {"type": "integer", "format": "int32", "minimum": 0.5, "maxLength": 300},
            "list": {"type": "array", "items": {"$ref": "#/definitions/x"}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}],
    }
    doc = {"swagger": "2.0", "info": {"title": "T", "version": "v9"}, "definitions": {"p": schema}}
    raw = encode_document(doc)
    assert _fields(raw, 1) == [b"2.0"]
    (info,) = _fields(raw, 2)
    assert _fields(info, 1) == [b"T"] and _fields(info, 2) == [b"v9"]
    (definitions,) = _fields(raw, 9)
    (named,) = _fields(definitions, 1)  # Definitions.additional_properties: NamedSchema
    assert _fields(named, 1) == [b"p"]
    (body,) = _fields(named, 2)
    assert _fields(body, 4) == [b"a thing"]
    assert _fields(body, 19) == [b"spec"]
    (extension,) = _fields(body, 31)  # NamedAny
    assert _fields(extension, 1) == [b"x-kubernetes-group-version-kind"]
    (value,) = _fields(extension, 2)  # Any: yaml = 2
    assert orjson.loads(_fields(value, 2)[0]) == schema["x-kubernetes-group-version-kind"]
    (properties,) = _fields(body, 25)
    props = {}
    for item in _fields(properties, 1):
        props[_fields(item, 1)[0]] = _fields(item, 2)[0]
    replicas = props[b"replicas"]
    (type_item,) = _fields(replicas, 22)
    assert _fields(type_item, 1) == [b"integer"]
    assert _fields(replicas, 2) == [b"int32"]
    assert _fields(replicas, 9) == [0.5]
    assert _fields(replicas, 11) == [300]  # a two-byte varint
    (items,) = _fields(props[b"list"], 23)
    (item_schema,) = _fields(items, 1)
    assert _fields(item_schema, 1) == [b"#/definitions/x"]
    (additional,) = _fields(props[b"map"], 21)
    (value_schema,) = _fields(additional, 1)
    assert _fields(_fields(value_schema, 22)[0], 1) == [b"string"]


# ---------------------------------------------------------------- over HTTP


@pytest.mark.asyncio
async def test_openapi_v2_json_and_protobuf_share_an_etag(http: httpx.AsyncClient) -> None:
    as_json = await http.get("/openapi/v2", headers={"Accept": "application/json"})
    assert as_json.status_code == 200
    assert as_json.headers["content-type"] == "application/json"
    doc = as_json.json()
    assert doc["swagger"] == "2.0"
    assert DEPLOYMENT in doc["definitions"]
    as_pb = await http.get("/openapi/v2", headers={"Accept": PROTOBUF_V2})
    assert as_pb.status_code == 200
    assert as_pb.headers["content-type"] == (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    )
    assert as_pb.content == encode_document(doc)
    etag = as_json.headers["etag"]
    assert re.fullmatch(r'"[0-9A-F]{128}"', etag)
    assert as_pb.headers["etag"] == etag
    again = await http.get("/openapi/v2", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    stale = await http.get("/openapi/v2", headers={"If-None-Match": '"0"'})
    assert stale.status_code == 200


@pytest.mark.asyncio
async def test_openapi_v2_refuses_an_unserved_media_type(http: httpx.AsyncClient) -> None:
    response = await http.get("/openapi/v2", headers={"Accept": "text/html"})
    assert response.status_code == 406
    assert response.json()["reason"] == "NotAcceptable"


@pytest.mark.asyncio
async def test_openapi_needs_authentication(emu: Emulator) -> None:
    async with httpx.AsyncClient(base_url=emu.url) as anonymous:
        response = await anonymous.get("/openapi/v2")
    assert response.status_code == 401


@pytest.mark.asyncio
async def test_openapi_v3_index_and_group_versions(http: httpx.AsyncClient) -> None:
    index = (await http.get("/openapi/v3")).json()["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"} <= set(index)
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    apps = await http.get(url)
    assert apps.status_code == 200
    doc = apps.json()
    assert doc["openapi"].startswith("3.")
    schemas = doc["components"]["schemas"]
    assert schemas[DEPLOYMENT]["properties"]["spec"] == {
        "$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    }
    # With the definitions its kinds reach, and not the other groups' kinds.
    assert "io.k8s.api.core.v1.PodTemplateSpec" in schemas
    assert "io.k8s.api.core.v1.Pod" not in schemas
    assert apps.headers["etag"] == '"' + url.split("hash=")[1] + '"'
    cached = await http.get(url, headers={"If-None-Match": apps.headers["etag"]})
    assert cached.status_code == 304
    missing = await http.get("/openapi/v3/apis/nothing.example.com/v1")
    assert missing.status_code == 404


@pytest.mark.asyncio
async def test_openapi_follows_the_custom_resource_hook(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    served: list[ServedSchema] = []
    emu.api.custom_schemas = lambda: served
    emu.api.openapi = None  # built again with the hook
    before = await http.get("/openapi/v2")
    assert "com.example.v1.Website" not in before.json()["definitions"]
    served.append(WEBSITE)
    after = await http.get("/openapi/v2")
    assert after.json()["definitions"]["com.example.v1.Website"]["properties"]["spec"][
        "required"
    ] == ["url"]
    assert after.headers["etag"] != before.headers["etag"]
    index = (await http.get("/openapi/v3")).json()["paths"]
    custom = (await http.get(index["apis/example.com/v1"]["serverRelativeURL"])).json()
    website = custom["components"]["schemas"]["com.example.v1.Website"]
    # v3 keeps what Swagger 2.0 cannot say.
    assert website["properties"]["spec"]["properties"]["replicas"]["nullable"] is True
    assert website["properties"]["metadata"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in custom["components"]["schemas"]


def test_definitions_describe_only_builtin_groups_from_the_schemas() -> None:
    # A CRD's kind may share a built-in's name; it is described by its own schema only.
    builtin = REGISTRY.get("apps", "v1", "deployments")
    assert builtin is not None
    registry = Registry()
    registry.add(builtin)
    registry.add(dataclasses.replace(builtin, group="example.com"))
    definitions = build_definitions(registry)
    assert "io.k8s.api.apps.v1.Deployment" in definitions
    assert "com.example.v1.Deployment" not in definitions
