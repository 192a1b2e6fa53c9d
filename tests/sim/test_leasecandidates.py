"""coordination.k8s.io/v1beta1 LeaseCandidate over HTTP: discovery, create/get/update/watch,
kube's validation messages (ValidateLeaseCandidate), the Lease's strategy and preferredHolder
rules, and kubectl get with kube's columns."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from kubernetes import client

from pycm.sim.registry.leasecandidates import Semver
from tests.sim.conftest import emu, http
from tests.sim.conftest_kubectl import kubectl
from tests.sim.kubectl.conftest import Kubectl, kube_api, kube_sim, run_kubectl

__all__ = ["emu", "http", "kube_api", "kube_sim", "kubectl", "run_kubectl"]

BASE = "/apis/coordination.k8s.io/v1beta1/namespaces/kube-system/leasecandidates"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def candidate(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "leaseName": "kube-controller-manager",
        "binaryVersion": "1.36.0",
        "emulationVersion": "1.36.0",
        "strategy": "OldestEmulationVersion",
        "renewTime": "2026-01-01T00:00:00.000000Z",
    }
    body.update(spec)
    return {
        "apiVersion": "coordination.k8s.io/v1beta1",
        "kind": "LeaseCandidate",
        "metadata": {"name": name},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def _causes(response: httpx.Response) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.text
    details = response.json()["details"]
    return [(c["field"], c["message"]) for c in details["causes"]]


@pytest.mark.asyncio
async def test_leasecandidates_discovery_lists_v1beta1_beside_v1(http: httpx.AsyncClient) -> None:
    groups = (await http.get("/apis")).json()["groups"]
    coordination = next(g for g in groups if g["name"] == "coordination.k8s.io")
    assert [v["version"] for v in coordination["versions"]] == ["v1", "v1beta1"]
    assert coordination["preferredVersion"]["version"] == "v1"
    beta = (await http.get("/apis/coordination.k8s.io/v1beta1")).json()["resources"]
    assert [(r["name"], r["kind"], r["namespaced"]) for r in beta] == [
        ("leasecandidates", "LeaseCandidate", True)
    ]


@pytest.mark.asyncio
async def test_leasecandidate_create_get_update_watch_roundtrip(http: httpx.AsyncClient) -> None:
    # A candidate is named by its elector identity, hostname_uuid: a ConfigMap key, not a DNS
    # subdomain.
    name = "host-a_0b8c6a2e-1111-4b4b-9c9c-000000000001"
    made = await http.post(BASE, json=candidate(name))
    assert made.status_code == 201, made.text
    got = (await http.get(f"{BASE}/{name}")).json()
    assert got["spec"]["leaseName"] == "kube-controller-manager"
    got["spec"]["pingTime"] = "2026-01-01T00:00:05.000000Z"
    updated = await http.put(f"{BASE}/{name}", json=got)
    assert updated.status_code == 200, updated.text
    assert updated.json()["spec"]["pingTime"] == "2026-01-01T00:00:05.000000Z"
    since = made.json()["metadata"]["resourceVersion"]
    watched = await http.get(
        BASE, params={"watch": "1", "resourceVersion": since, "timeoutSeconds": "1"}
    )
    events = [orjson.loads(line) for line in watched.text.splitlines() if line]
    assert [(e["type"], e["object"]["spec"].get("pingTime")) for e in events] == [
        ("MODIFIED", "2026-01-01T00:00:05.000000Z")
    ]


@pytest.mark.asyncio
async def test_leasecandidate_lease_name_is_immutable(http: httpx.AsyncClient) -> None:
    made = (await http.post(BASE, json=candidate("c1"))).json()
    made["spec"]["leaseName"] = "other"
    causes = _causes(await http.put(f"{BASE}/c1", json=made))
    assert causes == [("spec.leaseName", 'Invalid value: "other": field is immutable')]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"leaseName": None, "binaryVersion": None, "strategy": None},
            [
                ("spec.leaseName", "Required value"),
                ("spec.binaryVersion", "Required value"),
                ("spec.strategy", "Required value"),
            ],
            id="required",
        ),
        pytest.param(
            {"binaryVersion": "v1.36.0", "emulationVersion": "1.36"},
            [
                (
                    "spec.emulationVersion",
                    'Invalid value: "1.36": must be a valid semantic version',
                ),
                (
                    "spec.binaryVersion",
                    'Invalid value: "v1.36.0": must be a valid semantic version',
                ),
                # kube's: an unparsable emulation version counts as none for the strategy.
                (
                    "spec.emulationVersion",
                    "Required value: must be specified when `strategy` is 'OldestEmulationVersion'",
                ),
            ],
            id="strict-semver",
        ),
        pytest.param(
            {"binaryVersion": "1.35.0", "emulationVersion": "1.36.0"},
            [
                (
                    "spec.binaryVersion",
                    'Invalid value: "1.35.0": must be greater than or equal to `emulationVersion`',
                )
            ],
            id="binary-below-emulation",
        ),
        pytest.param(
            {"emulationVersion": None},
            [
                (
                    "spec.emulationVersion",
                    "Required value: must be specified when `strategy` is 'OldestEmulationVersion'",
                )
            ],
            id="emulation-required-by-strategy",
        ),
        pytest.param(
            {"strategy": "NewestEmulationVersion"},
            [
                (
                    "spec.strategy.strategy",
                    'Unsupported value: "NewestEmulationVersion": supported values: '
                    '"OldestEmulationVersion"',
                )
            ],
            id="unknown-strategy",
        ),
        pytest.param({"strategy": "example.com/MyStrategy"}, [], id="vendor-strategy"),
    ],
)
@pytest.mark.asyncio
async def test_leasecandidate_validation_names_kubes_causes(
    http: httpx.AsyncClient, spec: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    response = await http.post(BASE, json=candidate(f"c-{secrets.token_hex(3)}", **spec))
    if not expected:
        assert response.status_code == 201, response.text
        return
    assert _causes(response) == expected
    assert response.json()["message"].startswith('LeaseCandidate.coordination.k8s.io "c-')


@pytest.mark.asyncio
async def test_leasecandidate_name_is_a_config_key(http: httpx.AsyncClient) -> None:
    causes = _causes(await http.post(BASE, json=candidate("bad name")))
    assert causes[0][0] == "metadata.name"
    assert "a valid config key must consist of alphanumeric characters" in causes[0][1]


@pytest.mark.asyncio
async def test_lease_preferred_holder_needs_a_strategy(http: httpx.AsyncClient) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l1"},
        "spec": {"holderIdentity": "a", "preferredHolder": "b"},
    }
    assert _causes(await http.post(LEASES, json=lease)) == [
        ("spec.preferredHolder", "Forbidden: may only be specified if `strategy` is defined")
    ]
    lease["spec"]["strategy"] = "OldestEmulationVersion"
    made = await http.post(LEASES, json=lease)
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["preferredHolder"] == "b"


@pytest.mark.asyncio
async def test_leasecandidate_bad_json_type_is_a_400(http: httpx.AsyncClient) -> None:
    body = candidate("c2", leaseName=5)
    response = await http.post(BASE, content=orjson.dumps(body))
    assert response.status_code == 400
    assert response.json()["message"].endswith(
        "cannot unmarshal number into Go struct field LeaseCandidateSpec.spec.leaseName of type "
        "string"
    )


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        pytest.param("1.35.0", "1.36.0", id="minor"),
        pytest.param("1.36.0-alpha.1", "1.36.0", id="pre-release-first"),
        pytest.param("1.36.0-alpha.2", "1.36.0-alpha.10", id="numeric-identifiers"),
        pytest.param("1.36.0-alpha", "1.36.0-alpha.1", id="shorter-first"),
        pytest.param("1.9.0", "1.10.0", id="not-lexical"),
    ],
)
def test_semver_orders_as_semver(older: str, newer: str) -> None:
    a, b = Semver.parse(older), Semver.parse(newer)
    assert a is not None and b is not None
    assert a.compare(b) == -1 and b.compare(a) == 1 and a.compare(a) == 0


def test_semver_tolerant_takes_v_and_short_forms_strict_does_not() -> None:
    assert Semver.parse("v1.36") is None and Semver.parse("1.36") is None
    assert Semver.parse("01.2.3") is None
    assert Semver.parse_tolerant("v1.36") == Semver(1, 36, 0)
    assert Semver.parse_tolerant(" 1 ") == Semver(1, 0, 0)
    assert Semver.parse_tolerant("x1.2") is None


def test_kubectl_get_leasecandidates_prints_kubes_columns(
    run_kubectl: Kubectl, kube_api: client.ApiClient, tmp_path: Path
) -> None:
    ns = f"lc-{secrets.token_hex(3)}"
    client.CoreV1Api(kube_api).create_namespace({"metadata": {"name": ns}})
    try:
        manifest = tmp_path / "lc.yaml"
        body = candidate("pycm-a_1", emulationVersion="1.35.0")
        body["metadata"]["namespace"] = ns
        manifest.write_text(yaml.safe_dump(body))
        made = run_kubectl("create", "-f", str(manifest), "--validate=false")
        assert "leasecandidate.coordination.k8s.io/pycm-a_1 created" in made.stdout
        got = run_kubectl("get", "leasecandidates", "-n", ns)
        lines = got.stdout.splitlines()
        assert lines[0].split() == ["NAME", "LEASENAME", "BINARYVERSION", "EMULATIONVERSION", "AGE"]
        assert lines[1].split()[:4] == ["pycm-a_1", "kube-controller-manager", "1.36.0", "1.35.0"]
        bad = tmp_path / "bad.yaml"
        body = candidate("pycm-b", binaryVersion="1.0.0")
        body["metadata"]["namespace"] = ns
        bad.write_text(yaml.safe_dump(body))
        refused = run_kubectl("create", "-f", str(bad), "--validate=false", check=False)
        assert refused.returncode == 1
        assert (
            'The LeaseCandidate "pycm-b" is invalid: spec.binaryVersion: Invalid '
            'value: "1.0.0": must be greater than or equal to `emulationVersion`'
        ) in refused.stderr
    finally:
        client.CoreV1Api(kube_api).delete_namespace(ns)


@pytest.mark.asyncio
async def test_leasecandidate_unknown_fields_pruned_warned_or_refused(
    http: httpx.AsyncClient,
) -> None:
    body = candidate("pruned", leaseNme="typo")
    r = await http.post(BASE, json=body)
    assert r.status_code == 201, r.text
    assert "leaseNme" not in r.json()["spec"]
    assert 'unknown field \\"spec.leaseNme\\"' in r.headers["warning"]
    body["metadata"]["name"] = "refused"
    r = await http.post(f"{BASE}?fieldValidation=Strict", json=body)
    assert r.status_code == 400, r.text
    assert 'strict decoding error: unknown field "spec.leaseNme"' in r.json()["message"]
    r = await http.get("/openapi/v2")
    definition = r.json()["definitions"]["io.k8s.api.coordination.v1beta1.LeaseCandidate"]
    assert sorted(definition["properties"]["spec"]["properties"]) == [
        "binaryVersion",
        "emulationVersion",
        "leaseName",
        "pingTime",
        "renewTime",
        "strategy",
    ]
