"""kubectl (project-local, 1.20) creating and listing the kinds operators own: its
``create secret`` generators, ``create job``, ``scale``, and the columns ``get`` prints."""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from pycm.util.certs import issue_self_signed
from tests.sim.kubectl.conftest import Kubectl

LABELS = {"app": "web"}
TEMPLATE = {
    "metadata": {"labels": LABELS},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
}


@pytest.fixture
def ns(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"kk-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()[1:]]


def test_kubectl_create_secret_generic_stores_base64_data(run_kubectl: Kubectl, ns: str) -> None:
    run_kubectl(
        "create", "secret", "generic", "creds", "--from-literal=user=admin",
        "--from-literal=password=s3cr3t", "-n", ns,
    )  # fmt: skip
    data = run_kubectl("get", "secret", "creds", "-n", ns, "-o", "jsonpath={.data.user}").stdout
    assert base64.b64decode(data) == b"admin"
    out = run_kubectl("get", "secrets", "-n", ns).stdout
    assert header(out) == ["NAME", "TYPE", "DATA", "AGE"]
    assert rows(out)[0][:3] == ["creds", "Opaque", "2"]


def test_kubectl_create_secret_tls_and_docker_registry(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    pair = issue_self_signed(
        ["web.example.com"], common_name="web.example.com", valid_for=dt.timedelta(days=1)
    )
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    run_kubectl(
        "create", "secret", "tls", "web-tls", f"--cert={tmp_path / 'tls.crt'}",
        f"--key={tmp_path / 'tls.key'}", "-n", ns,
    )  # fmt: skip
    run_kubectl(
        "create", "secret", "docker-registry", "pull", "--docker-server=registry.example.com",
        "--docker-username=u", "--docker-password=p", "-n", ns,
    )  # fmt: skip
    out = run_kubectl("get", "secrets", "-n", ns).stdout
    assert [r[:3] for r in rows(out)] == [
        ["pull", "kubernetes.io/dockerconfigjson", "1"],
        ["web-tls", "kubernetes.io/tls", "2"],
    ]
    crt = run_kubectl("get", "secret", "web-tls", "-n", ns, "-o", "jsonpath={.data.tls\\.crt}")
    assert base64.b64decode(crt.stdout) == pair.cert_pem


def test_kubectl_apply_statefulset_get_and_scale(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": LABELS}, "template": TEMPLATE},
    }
    (tmp_path / "sts.yaml").write_text(yaml.safe_dump(manifest))
    run_kubectl("apply", "--validate=false", "-f", str(tmp_path / "sts.yaml"), "-n", ns)
    run_kubectl("scale", "statefulset", "db", "--replicas=3", "-n", ns)
    out = run_kubectl("get", "statefulsets", "-n", ns).stdout
    assert header(out) == ["NAME", "READY", "AGE"]
    assert rows(out)[0][:2] == ["db", "0/3"]
    wide = run_kubectl("get", "sts", "-n", ns, "-o", "wide").stdout
    assert header(wide) == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert rows(wide)[0][3:] == ["app", "nginx:1.25"]


def test_kubectl_create_job_and_get_it(run_kubectl: Kubectl, ns: str) -> None:
    run_kubectl("create", "job", "once", "--image=busybox", "-n", ns)
    out = run_kubectl("get", "jobs", "-n", ns).stdout
    assert header(out) == ["NAME", "COMPLETIONS", "DURATION", "AGE"]
    assert rows(out)[0][:2] == ["once", "0/1"]


@pytest.mark.parametrize(
    ("resource", "manifest", "columns", "cells"),
    [
        pytest.param(
            "daemonsets",
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": LABELS}, "template": TEMPLATE},
            },
            [
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE",
                "SELECTOR",
                "AGE",
            ],
            ["agent", "0", "0", "0", "0", "0", "<none>"],
            id="daemonsets",
        ),
        pytest.param(
            "cronjobs",
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": "tick"},
                "spec": {
                    "schedule": "@hourly",
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                **TEMPLATE,
                                "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"},
                            }
                        }
                    },
                },
            },
            ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
            ["tick", "@hourly", "False", "0", "<none>"],
            id="cronjobs",
        ),
        pytest.param(
            "persistentvolumeclaims",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "standard",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "AGE"],
            ["data", "Pending", "standard"],
            id="pvc",
        ),
        pytest.param(
            "ingresses",
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": "web"},
                "spec": {
                    "rules": [
                        {
                            "host": "web.example.com",
                            "http": {
                                "paths": [
                                    {
                                        "path": "/",
                                        "pathType": "Prefix",
                                        "backend": {
                                            "service": {"name": "web", "port": {"number": 80}}
                                        },
                                    }
                                ]
                            },
                        }
                    ]
                },
            },
            ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
            ["web", "<none>", "web.example.com", "80"],
            id="ingresses",
        ),
        pytest.param(
            "endpointslices",
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": "web-1"},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.1.2.3", "10.1.2.4"]}],
                "ports": [{"port": 8080}],
            },
            ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
            ["web-1", "IPv4", "8080", "10.1.2.3,10.1.2.4"],
            id="endpointslices",
        ),
        pytest.param(
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"type": "NodePort", "selector": LABELS, "ports": [{"port": 80}]},
            },
            ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
            ["web", "NodePort"],
            id="services",
        ),
        pytest.param(
            "horizontalpodautoscalers",
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                    },
                    "maxReplicas": 5,
                },
            },
            ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"],
            ["web", "Deployment/web", "<unknown>/80%", "1", "5", "0"],
            id="hpa",
        ),
        pytest.param(
            "poddisruptionbudgets",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": LABELS}},
            },
            ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"],
            ["web", "1", "N/A", "0"],
            id="pdb",
        ),
    ],
)
def test_kubectl_get_prints_kube_columns_for_the_kinds_operators_own(
    run_kubectl: Kubectl,
    ns: str,
    tmp_path: Path,
    resource: str,
    manifest: dict[str, object],
    columns: list[str],
    cells: list[str],
) -> None:
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    run_kubectl("apply", "--validate=false", "-f", str(tmp_path / "m.yaml"), "-n", ns)
    out = run_kubectl("get", resource, "-n", ns).stdout
    assert header(out) == columns
    assert rows(out)[0][: len(cells)] == cells


def test_kubectl_rbac_objects_are_validated_described_and_listed_as_kube_does(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    # kubectl's own generators, a name with colons (a path segment, not a DNS name).
    run_kubectl("create", "role", "op:reader", "--verb=get,list", "--resource=pods", "-n", ns)
    run_kubectl("create", "serviceaccount", "op", "-n", ns)
    run_kubectl(
        "create", "rolebinding", "op", "--role=op:reader", f"--serviceaccount={ns}:op", "-n", ns
    )
    wide = run_kubectl("get", "rolebinding", "op", "-o", "wide", "-n", ns).stdout
    assert header(wide) == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert rows(wide)[0][:2] == ["op", "Role/op:reader"]
    assert rows(wide)[0][-1] == f"{ns}/op"
    assert header(run_kubectl("get", "serviceaccount", "op", "-n", ns).stdout) == [
        "NAME",
        "SECRETS",
        "AGE",
    ]
    assert "verbs\t<[]string>" in run_kubectl("explain", "role.rules").stdout
    # The binding's roleRef cannot change: kube's 422 through kubectl apply.
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "op", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"},
        "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": ns}],
    }
    (tmp_path / "rb.yaml").write_text(yaml.safe_dump(binding))
    changed = run_kubectl("apply", "-f", str(tmp_path / "rb.yaml"), check=False)
    assert changed.returncode == 1
    assert (
        'The RoleBinding "op" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:'
        '"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef'
    ) in changed.stderr


def test_kubectl_applies_and_lists_a_network_policy(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "db"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": LABELS}}], "ports": [{"port": 5432}]}
            ],
        },
    }
    (tmp_path / "np.yaml").write_text(yaml.safe_dump(policy))
    applied = run_kubectl("apply", "-f", str(tmp_path / "np.yaml"), "-n", ns)  # validated
    assert applied.stdout.strip() == "networkpolicy.networking.k8s.io/db created"
    out = run_kubectl("get", "netpol", "-n", ns).stdout
    assert header(out) == ["NAME", "POD-SELECTOR", "AGE"]
    assert rows(out)[0][:2] == ["db", "app=db"]
    assert "endPort\t<integer>" in run_kubectl("explain", "networkpolicy.spec.ingress.ports").stdout
