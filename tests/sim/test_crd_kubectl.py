"""kubectl (the project-local 1.20) on custom resources: apply a CRD, get with its printer
columns, by short name and category, a 422 naming the bad field, delete."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.sim.conftest_kubectl import kubectl
from tests.sim.kubectl.conftest import Kubectl, kube_api, kube_sim, run_kubectl

__all__ = ["kube_api", "kube_sim", "kubectl", "run_kubectl"]  # the fixtures this module uses


def crd_manifest(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"websites.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "websites",
                "singular": "website",
                "kind": "Website",
                "shortNames": ["wsite"],
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
                                    "properties": {
                                        "host": {"type": "string"},
                                        "replicas": {"type": "integer", "default": 1},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"phase": {"type": "string"}},
                                },
                            },
                        }
                    },
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Host", "type": "string", "jsonPath": ".spec.host"},
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ],
        },
    }


@pytest.fixture
def ns(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"c-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def _write(tmp_path: Path, name: str, *docs: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_kubectl_apply_crd_then_get_shows_printer_columns(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    group = f"k{secrets.token_hex(3)}.example.com"
    crd = _write(tmp_path, "crd.yaml", crd_manifest(group))
    applied = run_kubectl("apply", "-f", crd, "--validate=false")
    assert (
        f"customresourcedefinition.apiextensions.k8s.io/websites.{group} created" in applied.stdout
    )
    run_kubectl("wait", "--for", "condition=established", f"crd/websites.{group}", "--timeout=10s")
    site = {
        "apiVersion": f"{group}/v1",
        "kind": "Website",
        "metadata": {"name": "home", "namespace": ns},
        "spec": {"host": "home.example"},
    }
    made = run_kubectl("apply", "-f", _write(tmp_path, "site.yaml", site), "--validate=false")
    assert f"website.{group}/home created" in made.stdout

    # kubectl's discovery cache may predate the CRD: it refreshes on a miss, as on a cluster.
    deadline = time.monotonic() + 10
    while True:
        got = run_kubectl("get", f"websites.{group}", "-n", ns, check=False)
        if got.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split() == ["NAME", "HOST", "REPLICAS", "AGE"]
    assert lines[1].split()[:3] == ["home", "home.example", "1"]

    short = run_kubectl("get", "wsite", "-n", ns)
    assert short.stdout.splitlines()[1].split()[0] == "home"
    everything = run_kubectl("get", "all", "-n", ns)
    assert f"website.{group}/home" in everything.stdout

    as_json = json.loads(run_kubectl("get", "wsite", "home", "-n", ns, "-o", "json").stdout)
    assert as_json["spec"] == {"host": "home.example", "replicas": 1}

    # Applied again: the custom resource is patched, and a changed CRD served anew.
    site["spec"]["host"] = "new.example"
    again = run_kubectl("apply", "-f", _write(tmp_path, "site.yaml", site), "--validate=false")
    assert f"website.{group}/home configured" in again.stdout
    changed = crd_manifest(group)
    changed["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"] = "Domain"
    reapplied = run_kubectl(
        "apply", "-f", _write(tmp_path, "crd.yaml", changed), "--validate=false"
    )
    assert "configured" in reapplied.stdout
    lines = run_kubectl("get", "wsite", "-n", ns).stdout.splitlines()
    assert lines[0].split() == ["NAME", "DOMAIN", "REPLICAS", "AGE"]
    assert lines[1].split()[:2] == ["home", "new.example"]

    run_kubectl("delete", "-f", crd)
    after = run_kubectl("get", f"websites.{group}", "-n", ns, check=False)
    assert after.returncode != 0


def test_kubectl_invalid_custom_resource_is_422_naming_the_field(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    group = f"i{secrets.token_hex(3)}.example.com"
    crd = _write(tmp_path, "crd.yaml", crd_manifest(group))
    run_kubectl("apply", "-f", crd, "--validate=false")
    bad = {
        "apiVersion": f"{group}/v1",
        "kind": "Website",
        "metadata": {"name": "bad", "namespace": ns},
        "spec": {"host": "x", "replicas": "three"},
    }
    try:
        out = run_kubectl(
            "apply", "-f", _write(tmp_path, "bad.yaml", bad), "--validate=false", check=False
        )
        assert out.returncode != 0
        assert (
            'The Website "bad" is invalid: spec.replicas: Invalid value: "string": ' in out.stderr
        )
        assert 'spec.replicas in body must be of type integer: "string"' in out.stderr
    finally:
        run_kubectl("delete", "-f", crd)
