"""kubectl 1.20 reading the emulator's /openapi/v2 (gnostic protobuf): client-side validation,
``kubectl explain`` and client-side apply's strategic merge patch, all without
``--validate=false``."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.sim.kubectl.conftest import Kubectl


def rich_deployment(name: str, replicas: int, user: int, toleration: str) -> dict[str, Any]:
    """A Deployment reaching typed, untyped (pod securityContext) and merge-keyed fields."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsUser": user},
                    "tolerations": [{"key": toleration, "operator": "Exists"}],
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": str(user)}],
                            "resources": {"limits": {"cpu": "100m"}},
                        }
                    ],
                },
            },
        },
    }


def _create_refused(run_kubectl: Kubectl, ns: str, path: Path, body: dict[str, Any]) -> str:
    """``kubectl create -f`` of ``body`` written to ``path``: refused (exit 1); its stderr."""
    path.write_text(yaml.safe_dump(body))
    refused = run_kubectl("create", "-n", ns, "-f", str(path), check=False)
    assert refused.returncode == 1
    return refused.stderr


@pytest.fixture
def ns(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"o-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def test_kubectl_apply_validates_against_the_served_schema_and_patches(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(rich_deployment("web", 2, 1000, "a")))
    created = run_kubectl("apply", "-n", ns, "-f", str(path))
    assert created.stdout.strip() == "deployment.apps/web created"
    assert created.stderr == ""
    path.write_text(yaml.safe_dump(rich_deployment("web", 3, 1001, "b")))
    configured = run_kubectl("apply", "-n", ns, "-f", str(path))
    assert configured.stdout.strip() == "deployment.apps/web configured"
    # No "warning: error calculating patch from openapi spec": the served schema was usable.
    assert configured.stderr == ""
    got = client.AppsV1Api(kube_api).read_namespaced_deployment("web", ns)
    assert got.spec.replicas == 3
    pod = got.spec.template.spec
    assert pod.security_context.run_as_user == 1001
    assert [t.key for t in pod.tolerations] == ["b"]
    assert pod.containers[0].env[0].value == "1001"


def test_kubectl_create_refuses_a_typo_client_side(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    body = rich_deployment("typo", 1, 1000, "a")
    body["spec"]["replicass"] = body["spec"].pop("replicas")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(body))
    for verb in ("create", "apply"):
        refused = run_kubectl(verb, "-n", ns, "-f", str(path), check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f'error: error validating "{path}": error validating data: '
            'ValidationError(Deployment.spec): unknown field "replicass" in '
            "io.k8s.api.apps.v1.DeploymentSpec; if you choose to ignore these errors, turn "
            "validation off with --validate=false"
        )
    assert client.AppsV1Api(kube_api).list_namespaced_deployment(ns).items == []


def test_kubectl_create_refuses_a_wrong_type_client_side(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    body = rich_deployment("typed", 1, 1000, "a")
    body["spec"]["template"]["spec"]["containers"][0]["stdin"] = "yes"
    refused = _create_refused(run_kubectl, ns, tmp_path / "typed.yaml", body)
    assert (
        "ValidationError(Deployment.spec.template.spec.containers[0].stdin): invalid type for "
        'io.k8s.api.core.v1.Container.stdin: got "string", expected "boolean"'
    ) in refused


def test_kubectl_create_validates_core_kinds(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}},
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            ]
        )
    )
    out = run_kubectl("create", "-n", ns, "-f", str(path)).stdout.split("\n")
    assert out[:2] == ["configmap/c created", "pod/p created"]
    assert client.CoreV1Api(kube_api).read_namespaced_config_map("c", ns).metadata.name == "c"


def test_kubectl_explain_reads_the_served_schema(run_kubectl: Kubectl) -> None:
    replicas = run_kubectl("explain", "deployment.spec.replicas").stdout
    assert "KIND:     Deployment" in replicas
    assert "VERSION:  apps/v1" in replicas
    assert "FIELD:    replicas <integer>" in replicas
    spec = run_kubectl("explain", "deployments.spec").stdout
    assert "RESOURCE: spec <Object>" in spec
    for line in ("replicas\t<integer>", "paused\t<boolean>", "template\t<Object>"):
        assert line in spec
    containers = run_kubectl("explain", "pod.spec.containers").stdout
    assert "RESOURCE: containers <[]Object>" in containers
    missing = run_kubectl("explain", "deployment.spec.replicass", check=False)
    assert missing.returncode == 1
    assert 'field "replicass" does not exist' in missing.stderr


def test_kubectl_create_validates_the_kinds_operators_own(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    labels = {"app": "db"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "db", "image": "postgres"}]},
    }
    objects = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "stringData": {"password": "p"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": template,
            },
        },
    ]
    path = tmp_path / "operator.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    out = run_kubectl("create", "-n", ns, "-f", str(path)).stdout.split("\n")
    assert out[:2] == ["secret/s created", "statefulset.apps/db created"]
    objects[1]["metadata"]["name"] = "db2"
    objects[1]["spec"]["replica"] = objects[1]["spec"].pop("replicas")
    refused = _create_refused(run_kubectl, ns, path, objects[1])
    assert (
        'ValidationError(StatefulSet.spec): unknown field "replica" in '
        "io.k8s.api.apps.v1.StatefulSetSpec"
    ) in refused


def test_kubectl_explain_and_validation_type_the_kinds_operators_own(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    ports = run_kubectl("explain", "service.spec.ports").stdout
    for line in ("appProtocol\t<string>", "nodePort\t<integer>", "port\t<integer>"):
        assert line in ports
    assert "suspend\t<boolean>" in run_kubectl("explain", "cronjob.spec").stdout
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "suspend": "yes",
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}
            },
        },
    }
    refused = _create_refused(run_kubectl, ns, tmp_path / "job.yaml", job)
    assert (
        "ValidationError(Job.spec.suspend): invalid type for io.k8s.api.batch.v1.JobSpec.suspend: "
        'got "string", expected "boolean"'
    ) in refused


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "websites.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "websites", "singular": "website", "kind": "Website"},
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
                                    "url": {"type": "string"},
                                    "replicas": {"type": "integer"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def test_kubectl_validates_a_custom_resource_against_its_crd_schema(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(CRD))
    run_kubectl("apply", "-f", str(crd))
    website = {
        "apiVersion": "example.com/v1",
        "kind": "Website",
        "metadata": {"name": "home"},
        "spec": {"url": "https://example.com", "replicas": 2},
    }
    path = tmp_path / "website.yaml"
    path.write_text(yaml.safe_dump(website))
    assert run_kubectl("apply", "-n", ns, "-f", str(path)).stdout.strip() == (
        "website.example.com/home created"
    )
    website["spec"]["replicass"] = website["spec"].pop("replicas")
    path.write_text(yaml.safe_dump(website))
    refused = run_kubectl("apply", "-n", ns, "-f", str(path), check=False)
    assert refused.returncode == 1
    assert (
        'ValidationError(Website.spec): unknown field "replicass" in com.example.v1.Website.spec'
    ) in refused.stderr
    explained = run_kubectl("explain", "website.spec.replicas").stdout
    assert "FIELD:    replicas <integer>" in explained
    run_kubectl("delete", "-f", str(crd))
