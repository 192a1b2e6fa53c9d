"""``kubectl apply --server-side`` (kubectl 1.20) against the emulator: a conflict with
client-side apply's manager, then ``--force-conflicts``."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from pycm.sim import fieldset
from tests.sim.kubectl.conftest import Kubectl
from tests.sim.kubectl.test_kubectl import manifest


@pytest.fixture
def ns(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"s-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _owners(kube_api: client.ApiClient, ns: str, name: str) -> dict[tuple[str, str], list[str]]:
    raw = client.ApiClient.sanitize_for_serialization(
        kube_api, client.AppsV1Api(kube_api).read_namespaced_deployment(name, ns)
    )
    return {
        (e["manager"], e["operation"]): list(fieldset.paths(e["fieldsV1"]))
        for e in raw["metadata"]["managedFields"]
    }


def test_kubectl_server_side_apply_conflicts_then_forces(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(manifest("web", 2))
    run_kubectl("apply", "-n", ns, "-f", str(path))  # client-side: an Update
    path.write_text(manifest("web", 4))
    refused = run_kubectl("apply", "--server-side", "-n", ns, "-f", str(path), check=False)
    assert refused.returncode == 1
    first = refused.stderr.splitlines()[0]
    assert first == (
        "error: Apply failed with 1 conflict: conflict with "
        '"kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )
    assert "--force-conflicts" in refused.stderr  # kubectl's advice after a 409 conflict
    apps = client.AppsV1Api(kube_api)
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 2
    forced = run_kubectl("apply", "--server-side", "--force-conflicts", "-n", ns, "-f", str(path))
    assert forced.stdout.strip() == "deployment.apps/web serverside-applied"
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 4
    owners = _owners(kube_api, ns, "web")
    assert ".spec.replicas" in owners[("kubectl", "Apply")]
    assert ".spec.replicas" not in owners[("kubectl-client-side-apply", "Update")]
    # Applying the same configuration again changes nothing and conflicts with no one.
    again = run_kubectl("apply", "--server-side", "-n", ns, "-f", str(path))
    assert again.stdout.strip() == "deployment.apps/web serverside-applied"


def test_kubectl_server_side_apply_creates_and_removes_what_it_stops_applying(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    body = json.loads(json.dumps(yaml.safe_load(manifest("ssa", 1))))  # no shared dicts
    body["metadata"]["labels"]["tier"] = "web"
    path = tmp_path / "ssa.yaml"
    path.write_text(yaml.safe_dump(body))
    created = run_kubectl("apply", "--server-side", "-n", ns, "-f", str(path))
    assert created.stdout.strip() == "deployment.apps/ssa serverside-applied"
    apps = client.AppsV1Api(kube_api)
    assert apps.read_namespaced_deployment("ssa", ns).metadata.labels["tier"] == "web"
    del body["metadata"]["labels"]["tier"]
    path.write_text(yaml.safe_dump(body))
    run_kubectl("apply", "--server-side", "-n", ns, "-f", str(path))
    assert "tier" not in apps.read_namespaced_deployment("ssa", ns).metadata.labels


def test_kubectl_server_side_apply_on_a_custom_resource_merges_its_set(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "sites.ssa.example.com"},
        "spec": {
            "group": "ssa.example.com",
            "scope": "Namespaced",
            "names": {"plural": "sites", "singular": "site", "kind": "Site"},
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
                                    "properties": {
                                        "replicas": {"type": "integer"},
                                        "tags": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "set",
                                            "items": {"type": "string"},
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    run_kubectl("apply", "--server-side", "-f", str(path))

    def site(**spec: object) -> str:
        meta = {"name": "s"}
        return yaml.safe_dump({"apiVersion": "ssa.example.com/v1", "kind": "Site",
                               "metadata": meta, "spec": spec})  # fmt: skip

    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    one.write_text(site(replicas=1, tags=["a"]))
    two.write_text(site(replicas=2, tags=["b"]))
    apply = ("apply", "--server-side", "-n", ns)
    run_kubectl(*apply, "--field-manager=one", "-f", str(one))
    refused = run_kubectl(*apply, "--field-manager=two", "-f", str(two), check=False)
    assert refused.stderr.splitlines()[0] == (
        'error: Apply failed with 1 conflict: conflict with "one": .spec.replicas'
    )
    run_kubectl(*apply, "--field-manager=two", "--force-conflicts", "-f", str(two))
    got = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        "ssa.example.com", "v1", ns, "sites", "s"
    )
    assert got["spec"] == {"replicas": 2, "tags": ["a", "b"]}  # the set merged item by item
    run_kubectl("delete", "-f", str(path))
