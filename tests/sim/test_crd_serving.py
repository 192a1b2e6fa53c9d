"""Custom resources served by the emulator, over real HTTP: the official ``kubernetes`` client
(its typed apiextensions API and its ``DynamicClient``), raw requests, and ``pycm.kube.Client``.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from pycm.kube import Client, load_config
from pycm.kube.resources import Resource as KubeResource
from pycm.sim.server import Emulator
from tests.sim.conftest import SimProcess, wait_for


def website_crd(group: str, scope: str = "Namespaced", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"websites.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": "websites",
                "singular": "website",
                "kind": "Website",
                "shortNames": ["ws"],
                "categories": ["all"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["host"],
                                    "properties": {
                                        "host": {"type": "string", "maxLength": 63},
                                        "replicas": {
                                            "type": "integer",
                                            "minimum": 0,
                                            "default": 1,
                                        },
                                        "tier": {"type": "string", "enum": ["free", "paid"]},
                                        "selector": {"type": "string"},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "replicas": {"type": "integer"},
                                        "phase": {"type": "string"},
                                    },
                                },
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".spec.selector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Host", "type": "string", "jsonPath": ".spec.host"},
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    ],
                },
                *extra.get("more_versions", []),
            ],
        },
    }


def site(name: str, host: str = "example.org", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "",  # set by the caller's group
        "kind": "Website",
        "metadata": {"name": name, "labels": {"tier": str(spec.get("tier", "free"))}},
        "spec": {"host": host, **spec},
    }


@pytest.fixture
def group(api: client.ApiClient) -> Iterator[str]:
    """A fresh API group with the Website CRD established in it (deleted after the test)."""
    name = f"t{secrets.token_hex(3)}.example.com"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(website_crd(name))
    yield name
    _delete_crd(ext, f"websites.{name}")


def _delete_crd(ext: client.ApiextensionsV1Api, name: str) -> None:
    """Delete a CRD a test may already have deleted."""
    try:
        ext.delete_custom_resource_definition(name)
    except ApiException as err:
        if err.status != 404:
            raise


def websites(api: client.ApiClient, group: str, version: str = "v1") -> Any:
    dyn = DynamicClient(api)
    return dyn.resources.get(api_version=f"{group}/{version}", kind="Website")


def body(group: str, name: str, **spec: Any) -> dict[str, Any]:
    obj = site(name, **spec)
    obj["apiVersion"] = f"{group}/v1"
    return obj


def _raw(sim: SimProcess, api: client.ApiClient) -> httpx.Client:
    token = api.configuration.api_key.get("authorization") or api.configuration.api_key.get(
        "BearerToken", ""
    )
    headers = {"Authorization": token if token.startswith("Bearer") else f"Bearer {token}"}
    return httpx.Client(base_url=sim.url, headers=headers, timeout=30, verify=False)


def test_crd_create_is_established_with_kubes_conditions(api: client.ApiClient, group: str) -> None:
    ext = client.ApiextensionsV1Api(api)
    crd = api.sanitize_for_serialization(ext.read_custom_resource_definition(f"websites.{group}"))
    conditions = {c["type"]: (c["status"], c["reason"]) for c in crd["status"]["conditions"]}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
    }
    assert crd["status"]["acceptedNames"]["listKind"] == "WebsiteList"  # defaulted
    assert crd["status"]["storedVersions"] == ["v1"]


def test_crd_discovery_lists_group_short_names_categories_subresources(
    sim: SimProcess, api: client.ApiClient, group: str
) -> None:
    with _raw(sim, api) as http:
        groups = http.get("/apis").json()["groups"]
        mine = [g for g in groups if g["name"] == group]
        assert mine and mine[0]["preferredVersion"]["version"] == "v1"
        listed = http.get(f"/apis/{group}/v1").json()["resources"]
    by_name = {r["name"]: r for r in listed}
    assert by_name["websites"]["shortNames"] == ["ws"]
    assert by_name["websites"]["categories"] == ["all"]
    assert by_name["websites"]["namespaced"] is True
    assert by_name["websites/scale"]["kind"] == "Scale"
    assert "websites/status" in by_name


def test_crd_dynamic_client_create_get_list_patch_delete(
    api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    created = res.create(body=body(group, "a", tier="paid"), namespace=namespace).to_dict()
    assert created["apiVersion"] == f"{group}/v1"
    assert created["spec"] == {"host": "example.org", "tier": "paid", "replicas": 1}  # defaulted
    assert created["metadata"]["generation"] == 1
    res.create(body=body(group, "b"), namespace=namespace)
    got = res.get(name="a", namespace=namespace).to_dict()
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    names = [i["metadata"]["name"] for i in res.get(namespace=namespace).to_dict()["items"]]
    assert names == ["a", "b"]
    paid = res.get(namespace=namespace, label_selector="tier=paid").to_dict()["items"]
    assert [i["metadata"]["name"] for i in paid] == ["a"]
    by_field = res.get(namespace=namespace, field_selector="metadata.name=b").to_dict()["items"]
    assert [i["metadata"]["name"] for i in by_field] == ["b"]
    patched = res.patch(
        name="a",
        namespace=namespace,
        body={"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    ).to_dict()
    assert patched["spec"]["replicas"] == 3
    assert patched["metadata"]["generation"] == 2
    res.delete(name="a", namespace=namespace)
    with pytest.raises(ApiException) as err:
        res.get(name="a", namespace=namespace)
    assert err.value.status == 404


def test_crd_list_paging_with_limit_and_continue(
    api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    for i in range(5):
        res.create(body=body(group, f"s{i}"), namespace=namespace)
    first = res.get(namespace=namespace, limit=2).to_dict()
    assert [i["metadata"]["name"] for i in first["items"]] == ["s0", "s1"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    second = res.get(namespace=namespace, limit=2, _continue=token).to_dict()
    assert [i["metadata"]["name"] for i in second["items"]] == ["s2", "s3"]


def test_crd_watch_sees_added_and_modified(
    api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    start = res.get(namespace=namespace).to_dict()["metadata"]["resourceVersion"]
    res.create(body=body(group, "w"), namespace=namespace)
    res.patch(
        name="w",
        namespace=namespace,
        body={"spec": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    seen = []
    for event in res.watch(namespace=namespace, resource_version=start, timeout=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", "w"), ("MODIFIED", "w")]


def test_crd_status_subresource_patch_and_main_resource_keeps_status(
    api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    created = res.create(
        body={**body(group, "st"), "status": {"phase": "Ignored"}}, namespace=namespace
    ).to_dict()
    assert "status" not in created  # a sent status is dropped on create
    status = res.status.patch(
        name="st",
        namespace=namespace,
        body={"status": {"phase": "Ready", "replicas": 1}},
        content_type="application/merge-patch+json",
    ).to_dict()
    assert status["status"] == {"phase": "Ready", "replicas": 1}
    assert status["metadata"]["generation"] == 1  # a status change is not a spec change
    current = res.get(name="st", namespace=namespace).to_dict()
    current["status"] = {"phase": "Overwritten"}
    current["spec"]["replicas"] = 4
    replaced = res.replace(body=current, namespace=namespace).to_dict()
    assert replaced["status"]["phase"] == "Ready"  # the main resource cannot change status
    assert replaced["metadata"]["generation"] == 2


def test_crd_scale_subresource_reads_and_writes_the_declared_paths(
    sim: SimProcess, api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    res.create(body=body(group, "sc", replicas=2, selector="app=sc"), namespace=namespace)
    res.status.patch(
        name="sc",
        namespace=namespace,
        body={"status": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    path = f"/apis/{group}/v1/namespaces/{namespace}/websites/sc/scale"
    with _raw(sim, api) as http:
        scale = http.get(path).json()
        assert scale["kind"] == "Scale"
        assert scale["spec"] == {"replicas": 2}
        assert scale["status"] == {"replicas": 2, "selector": "app=sc"}
        headers = {"Content-Type": "application/merge-patch+json"}
        answer = http.patch(path, content=b'{"spec":{"replicas":5}}', headers=headers)
        assert answer.status_code == 200, answer.text
    assert res.get(name="sc", namespace=namespace).to_dict()["spec"]["replicas"] == 5


def test_crd_invalid_object_is_422_naming_the_field(
    api: client.ApiClient, group: str, namespace: str
) -> None:
    res = websites(api, group)
    bad = body(group, "bad")
    bad["spec"]["replicas"] = "three"
    bad["spec"]["tier"] = "gold"
    with pytest.raises(ApiException) as err:
        res.create(body=bad, namespace=namespace)
    assert err.value.status == 422
    status = err.value.body if isinstance(err.value.body, str) else ""
    assert (
        f'Website.{group} \\"bad\\" is invalid' in status
        or f'Website.{group} "bad" is invalid' in status
    )
    assert (
        'spec.replicas: Invalid value: \\"string\\": spec.replicas in body must be of type '
        'integer: \\"string\\"' in status
    )
    assert 'spec.tier: Unsupported value: \\"gold\\"' in status


def test_crd_unknown_fields_are_pruned_with_a_warning(
    sim: SimProcess, api: client.ApiClient, group: str, namespace: str
) -> None:
    obj = body(group, "pr")
    obj["spec"]["hots"] = "typo"
    with _raw(sim, api) as http:
        answer = http.post(f"/apis/{group}/v1/namespaces/{namespace}/websites", json=obj)
        assert answer.status_code == 201, answer.text
        assert "hots" not in answer.json()["spec"]
        assert answer.headers.get("Warning") == '299 - "unknown field \\"spec.hots\\""'
        strict = http.post(
            f"/apis/{group}/v1/namespaces/{namespace}/websites?fieldValidation=Strict",
            json={**obj, "metadata": {"name": "pr2"}},
        )
    assert strict.status_code == 400
    assert 'strict decoding error: unknown field "spec.hots"' in strict.json()["message"]


def test_crd_cluster_scoped(api: client.ApiClient) -> None:
    group = f"c{secrets.token_hex(3)}.example.com"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(website_crd(group, scope="Cluster"))
    try:
        res = websites(api, group)
        assert res.namespaced is False
        created = res.create(body=body(group, "global")).to_dict()
        assert "namespace" not in created["metadata"]
        assert [i["metadata"]["name"] for i in res.get().to_dict()["items"]] == ["global"]
    finally:
        ext.delete_custom_resource_definition(f"websites.{group}")


def test_crd_several_versions_one_storage(api: client.ApiClient, namespace: str) -> None:
    group = f"v{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    beta = copy.deepcopy(crd["spec"]["versions"][0])
    beta.update({"name": "v1beta1", "storage": False})
    off = copy.deepcopy(beta)
    off.update({"name": "v1alpha1", "served": False})
    crd["spec"]["versions"] += [beta, off]
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd)
    try:
        v1, v1beta1 = websites(api, group, "v1"), websites(api, group, "v1beta1")
        written = v1beta1.create(
            body={**body(group, "x"), "apiVersion": f"{group}/v1beta1"}, namespace=namespace
        ).to_dict()
        assert written["apiVersion"] == f"{group}/v1beta1"
        read = v1.get(name="x", namespace=namespace).to_dict()
        assert read["apiVersion"] == f"{group}/v1"  # the None strategy: only apiVersion changes
        assert read["spec"] == written["spec"]
        listed = v1beta1.get(namespace=namespace).to_dict()
        assert [i["apiVersion"] for i in listed["items"]] == [f"{group}/v1beta1"]
        events = v1beta1.watch(namespace=namespace, timeout=2)
        first = next(iter(events))
        assert first["raw_object"]["apiVersion"] == f"{group}/v1beta1"  # a watch is rewritten too
        served = [r.api_version for r in DynamicClient(api).resources.search(group=group)]
        assert "v1alpha1" not in served and {"v1", "v1beta1"} <= set(served)
    finally:
        ext.delete_custom_resource_definition(f"websites.{group}")


def test_crd_delete_removes_objects_and_stops_serving(
    sim: SimProcess, api: client.ApiClient, namespace: str
) -> None:
    group = f"d{secrets.token_hex(3)}.example.com"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(website_crd(group))
    res = websites(api, group)
    res.create(body=body(group, "doomed"), namespace=namespace)
    ext.delete_custom_resource_definition(f"websites.{group}")
    with _raw(sim, api) as http:
        gone = http.get(f"/apis/{group}/v1/namespaces/{namespace}/websites")
        assert gone.status_code == 404
        assert group not in [g["name"] for g in http.get("/apis").json()["groups"]]
    # Created again, it serves an empty resource: the old objects went with the old CRD.
    ext.create_custom_resource_definition(website_crd(group))
    try:
        assert websites(api, group).get(namespace=namespace).to_dict()["items"] == []
    finally:
        ext.delete_custom_resource_definition(f"websites.{group}")


def test_crd_structurally_invalid_is_refused_with_kubes_message(api: client.ApiClient) -> None:
    group = f"s{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del spec_schema["properties"]["host"]["type"]
    with pytest.raises(ApiException) as err:
        client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    assert err.value.status == 422
    assert (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[host].type: "
        "Required value: must not be empty for specified object fields"
    ) in str(err.value.body)


def test_crd_name_conflict_is_not_established(api: client.ApiClient) -> None:
    group = f"n{secrets.token_hex(3)}.example.com"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(website_crd(group))
    other = website_crd(group)
    other["metadata"]["name"] = f"sites.{group}"
    other["spec"]["names"] = {"plural": "sites", "kind": "Site", "shortNames": ["ws"]}
    ext.create_custom_resource_definition(other)
    try:
        got = api.sanitize_for_serialization(ext.read_custom_resource_definition(f"sites.{group}"))
        conditions = {c["type"]: (c["status"], c["reason"]) for c in got["status"]["conditions"]}
        assert conditions["NamesAccepted"] == ("False", "ShortNamesConflict")
        assert conditions["Established"] == ("False", "NotAccepted")
        # The first CRD's deletion frees the name: the second is accepted and served.
        ext.delete_custom_resource_definition(f"websites.{group}")
        wait_for(
            lambda: any(
                c.type == "Established" and c.status == "True"
                for c in ext.read_custom_resource_definition(f"sites.{group}").status.conditions
            ),
            what="the second CRD established",
        )
    finally:
        for name in (f"websites.{group}", f"sites.{group}"):
            _delete_crd(ext, name)


@pytest.mark.asyncio
async def test_crd_pycm_client_round_trip(emu: Emulator) -> None:
    config = await load_config(str(emu.kubeconfig_path))
    async with await Client.connect(config) as kube:
        crds = KubeResource(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            frozenset({"status"}),
        )
        await kube.create(crds, website_crd("pycm.example.com"))
        sites = KubeResource(
            "pycm.example.com", "v1", "websites", "Website", True, frozenset({"status", "scale"})
        )
        created = await kube.create(sites, body("pycm.example.com", "rt"), namespace="default")
        assert created["spec"]["replicas"] == 1
        await kube.patch(
            sites, "rt", {"status": {"phase": "Ready"}}, namespace="default", subresource="status"
        )
        listed = await kube.list(sites, namespace="default")
        assert [(i["metadata"]["name"], i["status"]["phase"]) for i in listed["items"]] == [
            ("rt", "Ready")
        ]
        await kube.delete(crds, "websites.pycm.example.com")


def test_crd_storage_version_change_serves_old_objects_at_the_asked_version(
    api: client.ApiClient, namespace: str
) -> None:
    group = f"m{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    crd["spec"]["versions"][0]["name"] = "v1alpha1"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd)
    try:
        old = websites(api, group, "v1alpha1")
        old.create(
            body={**body(group, "early"), "apiVersion": f"{group}/v1alpha1"}, namespace=namespace
        )
        current = api.sanitize_for_serialization(
            ext.read_custom_resource_definition(f"websites.{group}")
        )
        v1 = copy.deepcopy(current["spec"]["versions"][0])
        v1["name"] = "v1"
        current["spec"]["versions"][0]["storage"] = False
        current["spec"]["versions"].append(v1)
        ext.replace_custom_resource_definition(f"websites.{group}", current)
        updated = ext.read_custom_resource_definition(f"websites.{group}")
        assert updated.status.stored_versions == ["v1alpha1", "v1"]
        new = websites(api, group, "v1")
        got = new.get(name="early", namespace=namespace).to_dict()
        assert got["apiVersion"] == f"{group}/v1"  # stored at v1alpha1, read at v1
        items = new.get(namespace=namespace).to_dict()["items"]
        assert [i["apiVersion"] for i in items] == [f"{group}/v1"]
        back = old.get(name="early", namespace=namespace).to_dict()
        assert back["apiVersion"] == f"{group}/v1alpha1"
    finally:
        _delete_crd(ext, f"websites.{group}")


def test_crd_server_side_apply_through_a_non_storage_version(
    sim: SimProcess, api: client.ApiClient, namespace: str
) -> None:
    group = f"a{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    beta = copy.deepcopy(crd["spec"]["versions"][0])
    beta.update({"name": "v1beta1", "storage": False})
    crd["spec"]["versions"].append(beta)
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd)
    try:
        config = {**body(group, "applied"), "apiVersion": f"{group}/v1beta1"}
        path = f"/apis/{group}/v1beta1/namespaces/{namespace}/websites/applied?fieldManager=me"
        headers = {"Content-Type": "application/apply-patch+yaml"}
        with _raw(sim, api) as http:
            answer = http.patch(path, content=json.dumps(config).encode(), headers=headers)
        assert answer.status_code == 201, answer.text
        assert answer.json()["apiVersion"] == f"{group}/v1beta1"
        stored = websites(api, group, "v1").get(name="applied", namespace=namespace).to_dict()
        assert stored["apiVersion"] == f"{group}/v1"
        assert stored["spec"]["host"] == "example.org"
    finally:
        _delete_crd(ext, f"websites.{group}")


def test_crd_each_version_writes_and_prints_by_its_own_schema(
    sim: SimProcess, api: client.ApiClient, namespace: str
) -> None:
    # v1 (storage) knows spec.host and spec.replicas; v1beta1 knows spec.host and spec.size,
    # an enum, and prints a Size column: kube serves each version with its own schema.
    group = f"p{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    beta = copy.deepcopy(crd["spec"]["versions"][0])
    beta.update({"name": "v1beta1", "storage": False, "subresources": {}})
    beta["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = {
        "host": {"type": "string"},
        "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
    }
    beta["additionalPrinterColumns"] = [
        {"name": "Size", "type": "string", "jsonPath": ".spec.size"}
    ]
    crd["spec"]["versions"].append(beta)
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd)
    try:
        v1beta1 = websites(api, group, "v1beta1")
        beta_body = {**body(group, "b"), "apiVersion": f"{group}/v1beta1"}
        written = v1beta1.create(body=beta_body, namespace=namespace).to_dict()
        assert written["spec"] == {"host": "example.org", "size": "small"}  # its default, kept
        bad = {**body(group, "bad"), "apiVersion": f"{group}/v1beta1"}
        bad["spec"]["size"] = "huge"
        with pytest.raises(ApiException) as err:
            v1beta1.create(body=bad, namespace=namespace)
        assert err.value.status == 422
        assert json.loads(err.value.body)["details"]["causes"] == [
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "huge": supported values: "small", "large"',
                "field": "spec.size",
            }
        ]
        # Through v1 the same field is unknown (pruned, with kube's warning) and v1's default
        # is filled instead.
        with _raw(sim, api) as http:
            v1_body = {**body(group, "a"), "spec": {"host": "example.org", "size": "small"}}
            made = http.post(f"/apis/{group}/v1/namespaces/{namespace}/websites", json=v1_body)
            assert made.status_code == 201, made.text
            assert made.json()["spec"] == {"host": "example.org", "replicas": 1}
            assert made.headers["warning"] == '299 - "unknown field \\"spec.size\\""'
            beta_path = f"/apis/{group}/v1beta1/namespaces/{namespace}/websites/b"
            table = http.get(
                beta_path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
            ).json()
            # v1beta1 declares no status subresource: /status is not served through it.
            assert http.get(f"{beta_path}/status").status_code == 404
            assert http.get(beta_path.replace("v1beta1", "v1") + "/status").status_code == 200
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
        assert table["rows"][0]["cells"] == ["b", "small"]
    finally:
        _delete_crd(ext, f"websites.{group}")


def test_crd_list_kind_names_its_lists(
    sim: SimProcess, api: client.ApiClient, namespace: str
) -> None:
    group = f"l{secrets.token_hex(3)}.example.com"
    crd = website_crd(group)
    crd["spec"]["names"]["listKind"] = "WebsiteCollection"
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crd)
    try:
        res = websites(api, group)
        res.create(body=body(group, "a"), namespace=namespace)
        assert res.get(namespace=namespace).to_dict()["kind"] == "WebsiteCollection"
        with _raw(sim, api) as http:
            gone = http.delete(f"/apis/{group}/v1/namespaces/{namespace}/websites")
        assert gone.status_code == 200, gone.text
        assert gone.json()["kind"] == "WebsiteCollection"
        assert [i["metadata"]["name"] for i in gone.json()["items"]] == ["a"]
    finally:
        _delete_crd(ext, f"websites.{group}")
