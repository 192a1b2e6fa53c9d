"""Unknown fields are pruned at every depth the schemas declare, as kube-apiserver prunes them:
named by path (``spec.template.spec.containers[0].x``) in a Warning header each (Warn, the
default), dropped silently (Ignore), or refused with a 400 listing all (Strict); map keys and
opaque sub-structures are kept as they are."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.errors import APIError
from pycm.sim.pruning import prune_unknown_fields
from pycm.sim.server import Emulator, run_emulator

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    ],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5},
                    "securityContext": {"capabilities": {"drop": ["ALL"]}},
                },
                {"name": "sidecar", "image": "proxy:1"},
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }


def _deployment(name: str = "d") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {
                "matchLabels": labels,
                "matchExpressions": [{"key": "app", "operator": "Exists"}],
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            },
        },
    }


def _typo_deployment(name: str = "d") -> dict[str, Any]:
    body = _deployment(name)
    spec = body["spec"]
    spec["strategy"]["rollingUpdate"]["maxSurg"] = 2
    spec["selector"]["matchExpressions"][0]["operater"] = "In"
    spec["template"]["metadata"]["lables"] = {"x": "y"}
    spec["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    return body


TYPOS = [
    "spec.selector.matchExpressions[0].operater",
    "spec.strategy.rollingUpdate.maxSurg",
    "spec.template.metadata.lables",
    "spec.template.spec.containers[0].imagePullPolicyy",
]


# ---------------------------------------------------------------- the walk


def test_prune_pod_nested_unknown_fields_named_by_path_in_document_order() -> None:
    body = _pod()
    clean = copy.deepcopy(body)
    containers = body["spec"]["containers"]
    containers[0]["env"][1]["valueFrom"]["fieldRef"]["fieldPth"] = "x"
    containers[0]["readinessProbe"]["httpGet"]["pth"] = "/"
    containers[0]["securityContext"]["capabilites"] = {}
    containers[1]["imagePullPolicyy"] = "Always"
    body["spec"]["volumes"][0]["nmae"] = "tmp"
    body["spec"]["restartPolicyy"] = "Never"
    body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "stauts": "True"}]}
    body["metadata"]["lables"] = {}
    assert prune_unknown_fields("Pod", "v1", body, None) == [
        "metadata.lables",
        "spec.containers[0].env[1].valueFrom.fieldRef.fieldPth",
        "spec.containers[0].readinessProbe.httpGet.pth",
        "spec.containers[0].securityContext.capabilites",
        "spec.containers[1].imagePullPolicyy",
        "spec.volumes[0].nmae",
        "spec.restartPolicyy",
        "status.conditions[0].stauts",
    ]
    del body["status"]
    assert body == clean


def test_prune_deployment_template_strategy_and_selector_typos_dropped() -> None:
    body = _typo_deployment()
    assert prune_unknown_fields("Deployment", "v1", body, "Warn") == TYPOS
    assert body == _deployment()


def test_prune_ignore_drops_silently() -> None:
    body = _typo_deployment()
    assert prune_unknown_fields("Deployment", "v1", body, "Ignore") == []
    assert body == _deployment()


def test_prune_strict_lists_every_field_in_kubes_message() -> None:
    with pytest.raises(APIError) as err:
        prune_unknown_fields("Deployment", "v1", _typo_deployment(), "Strict")
    assert err.value.code == 400
    listed = ", ".join(f'unknown field "{path}"' for path in TYPOS)
    assert err.value.status()["message"] == (
        f'Deployment in version "v1" cannot be handled as a Deployment: '
        f"strict decoding error: {listed}"
    )


def test_prune_map_keys_are_never_pruned() -> None:
    body = _pod()
    body["metadata"]["annotations"] = {"anything/at-all": "1", "imagePullPolicyy": "2"}
    body["metadata"]["labels"]["bogus"] = "kept"
    spec = body["spec"]
    spec["nodeSelector"] = {"whatever": "x"}
    spec["overhead"] = {"example.com/widget": "1"}
    spec["containers"][0]["resources"] = {
        "limits": {"cpu": "1", "example.com/gpu": "2"},
        "requests": {"invented": "3"},
    }
    kept = copy.deepcopy(body)
    assert prune_unknown_fields("Pod", "v1", body, "Strict") == []
    assert body == kept
    cm = {"metadata": {"name": "c"}, "data": {"kind": "x", "spec": "y"}, "binaryData": {"z": ""}}
    assert prune_unknown_fields("ConfigMap", "v1", cm, "Strict") == []
    assert cm["data"] == {"kind": "x", "spec": "y"}


def test_prune_opaque_substructures_are_kept_whole() -> None:
    body = _pod()
    spec = body["spec"]
    spec["affinity"] = {"podAntiAffinity": {"inventedTerm": [{"weight": 1, "odd": True}]}}
    spec["volumes"][0]["emptyDir"] = {"sizeLimit": "64Mi", "notAField": 1}
    spec["securityContext"] = {"runAsUser": 1, "invented": 2}
    spec["containers"][0]["securityContext"]["seccompProfile"] = {"type": "X", "odd": 1}
    spec["topologySpreadConstraints"] = [{"maxSkew": 1, "odd": 2}]
    body["metadata"]["managedFields"] = [{"manager": "m", "fieldsV1": {"f:odd": {}}, "odd": 1}]
    node = {"metadata": {"name": "n"}, "spec": {"odd": 1}, "status": {"odd": 2}}
    kept, kept_node = copy.deepcopy(body), copy.deepcopy(node)
    assert prune_unknown_fields("Pod", "v1", body, "Strict") == []
    assert prune_unknown_fields("Node", "v1", node, "Strict") == []
    assert (body, node) == (kept, kept_node)


def test_prune_values_of_another_shape_are_left_to_validation() -> None:
    # kube fails to decode these (400); pruning neither crashes on them nor drops them.
    body = _pod()
    body["spec"]["containers"] = "not a list"
    body["spec"]["volumes"] = [None, 3, {"name": "v", "odd": 1}]
    body["spec"]["affinity"] = None
    assert prune_unknown_fields("Pod", "v1", body, "Warn") == ["spec.volumes[2].odd"]
    assert body["spec"]["containers"] == "not a list"
    assert body["spec"]["volumes"] == [None, 3, {"name": "v"}]


def test_prune_kind_without_a_schema_is_untouched() -> None:
    review = {"metadata": {"name": "s"}, "spec": {"odd": 1}, "odd": 2}
    assert prune_unknown_fields("TokenReview", "v1", review, "Strict") == []
    assert review == {"metadata": {"name": "s"}, "spec": {"odd": 1}, "odd": 2}


def test_prune_role_drops_what_its_type_does_not_declare() -> None:
    role = {"metadata": {"name": "s"}, "rules": [{"verbs": ["get"], "odd": 1}], "odd": 2}
    assert prune_unknown_fields("Role", "v1", role, "Warn") == ["rules[0].odd", "odd"]
    assert role == {"metadata": {"name": "s"}, "rules": [{"verbs": ["get"]}]}


def test_prune_service_drops_what_its_type_does_not_declare() -> None:
    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "odd": 1}]}, "odd": 2}
    assert prune_unknown_fields("Service", "v1", service, "Warn") == ["spec.ports[0].odd", "odd"]
    assert service == {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}


def test_prune_lease_candidate_drops_what_its_type_does_not_declare() -> None:
    spec = {
        "leaseName": "kcm",
        "binaryVersion": "1.36.0",
        "emulationVersion": "1.36.0",
        "strategy": "OldestEmulationVersion",
        "pingTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:00.000000Z",
    }
    candidate = {"metadata": {"name": "c"}, "spec": {**spec, "leaseNme": "x"}, "status": {}}
    dropped = prune_unknown_fields(
        "LeaseCandidate", "coordination.k8s.io/v1beta1", candidate, "Warn"
    )
    assert dropped == ["spec.leaseNme", "status"]
    assert candidate == {"metadata": {"name": "c"}, "spec": spec}


def test_prune_unknown_mode_is_400() -> None:
    with pytest.raises(APIError) as err:
        prune_unknown_fields("Pod", "v1", _pod(), "Loose")
    assert err.value.code == 400


# ---------------------------------------------------------------- over HTTP


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    # Explicit options: the tests do not depend on the emulator's defaults.
    async with run_emulator(tls=False, kubelet=False, nodes=1, watch_window=50) as emulator:
        yield emulator


def _warnings(paths: list[str]) -> list[str]:
    return [f'299 - "unknown field \\"{path}\\""' for path in paths]


def _status(r: httpx.Response, code: int) -> dict[str, Any]:
    assert r.status_code == code, r.text[:300]
    body: dict[str, Any] = r.json()
    assert (body["kind"], body["code"]) == ("Status", code), body
    return body


def _configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


@pytest.mark.asyncio
async def test_sim_unknown_fields_pruned_with_a_warning_by_default(
    http: httpx.AsyncClient,
) -> None:
    body = _configmap("u", data={"a": "b"}, bogus={"x": 1})
    body["metadata"]["inventedMeta"] = "y"
    r = await http.post(CMS, json=body)
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == _warnings(["metadata.inventedMeta", "bogus"])
    stored = (await http.get(f"{CMS}/u")).json()
    assert "bogus" not in stored and "inventedMeta" not in stored["metadata"]
    assert stored["data"] == {"a": "b"}


@pytest.mark.asyncio
async def test_sim_unknown_fields_strict_is_400_ignore_is_silent(
    http: httpx.AsyncClient,
) -> None:
    body = _configmap("s", bogus=1)
    strict = await http.post(CMS, json=body, params={"fieldValidation": "Strict"})
    assert _status(strict, 400)["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "bogus"'
    )
    assert (await http.get(f"{CMS}/s")).status_code == 404
    ignored = await http.post(CMS, json=body, params={"fieldValidation": "Ignore"})
    assert ignored.status_code == 201 and "warning" not in ignored.headers
    assert "bogus" not in ignored.json()
    # An unknown mode is kube's ValidateCreateOptions' 422 (tests/sim/test_request_options.py).
    wrong = await http.post(CMS, json=_configmap("w"), params={"fieldValidation": "Loose"})
    _status(wrong, 422)


@pytest.mark.asyncio
async def test_sim_patch_adding_unknown_fields_prunes_them(http: httpx.AsyncClient) -> None:
    await http.post(CMS, json=_configmap("p", data={"a": "b"}))
    merge = {"Content-Type": "application/merge-patch+json"}
    r = await http.patch(f"{CMS}/p", content=b'{"bogus": 1, "data": {"c": "d"}}', headers=merge)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == _warnings(["bogus"])
    stored = (await http.get(f"{CMS}/p")).json()
    assert "bogus" not in stored and stored["data"] == {"a": "b", "c": "d"}
    strict = await http.patch(
        f"{CMS}/p", content=b'{"bogus": 2}', headers=merge, params={"fieldValidation": "Strict"}
    )
    # kube's patch handler: 422 Invalid on the field "patch".
    why = 'Invalid value: "{\\"bogus\\":2}": strict decoding error: unknown field "bogus"'
    status = _status(strict, 422)
    assert status["message"] == f' "" is invalid: patch: {why}'
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": why, "field": "patch"}
    ]
    assert "bogus" not in (await http.get(f"{CMS}/p")).json()


@pytest.mark.asyncio
async def test_sim_deployment_nested_typos_warned_dropped_or_refused(
    http: httpx.AsyncClient,
) -> None:
    strict = await http.post(
        DEPLOYS, json=_typo_deployment("s"), params={"fieldValidation": "Strict"}
    )
    listed = ", ".join(f'unknown field "{path}"' for path in TYPOS)
    assert _status(strict, 400)["message"].endswith(f"strict decoding error: {listed}")
    assert (await http.get(f"{DEPLOYS}/s")).status_code == 404
    r = await http.post(DEPLOYS, json=_typo_deployment("w"))
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == _warnings(TYPOS)
    stored = (await http.get(f"{DEPLOYS}/w")).json()
    assert "maxSurg" not in stored["spec"]["strategy"]["rollingUpdate"]
    assert "imagePullPolicyy" not in stored["spec"]["template"]["spec"]["containers"][0]
    assert stored["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 1
    # A PUT of the same is pruned the same way; Ignore says nothing.
    stored["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    put = await http.put(f"{DEPLOYS}/w", json=stored, params={"fieldValidation": "Ignore"})
    assert put.status_code == 200 and "warning" not in put.headers
    assert "imagePullPolicyy" not in put.json()["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.asyncio
async def test_sim_strategic_patch_into_a_container_names_its_index(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.post(PODS, json=_pod())).status_code == 201
    smp = {"Content-Type": "application/strategic-merge-patch+json"}
    patch = b'{"spec": {"containers": [{"name": "sidecar", "imagePullPolicyy": "Never"}]}}'
    r = await http.patch(f"{PODS}/p", content=patch, headers=smp)
    assert r.status_code == 200, r.text
    assert r.headers.get_list("warning") == _warnings(["spec.containers[1].imagePullPolicyy"])
    assert "imagePullPolicyy" not in r.json()["spec"]["containers"][1]
