"""kubectl (Debian's kubernetes-client, project-local) against an emulator process."""

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

from tests.sim.conftest import replicaset
from tests.sim.kubectl.conftest import Kubectl


def manifest(name: str, replicas: int, image: str = "nginx:1.25") -> str:
    labels = {"app": name}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": image}]},
                },
            },
        }
    )


@pytest.fixture
def ns(kube_api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(kube_api)
    name = f"k-{secrets.token_hex(4)}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def wait_for(predicate: Any, what: str) -> Any:
    deadline = time.monotonic() + 10
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value


def test_kubectl_is_the_project_local_one(kubectl: Path) -> None:
    assert kubectl.is_relative_to(Path(__file__).resolve().parents[3] / "tools")
    assert kubectl.is_file()


@pytest.mark.parametrize(
    ("resource", "columns"),
    [
        pytest.param("pods", ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], id="pods"),
        pytest.param(
            "deployments", ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], id="deployments"
        ),
        pytest.param(
            "replicasets", ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], id="replicasets"
        ),
        pytest.param("leases", ["NAME", "HOLDER", "AGE"], id="leases"),
    ],
)
def test_kubectl_get_prints_kube_columns_for_namespaced_kinds(
    run_kubectl: Kubectl,
    kube_api: client.ApiClient,
    ns: str,
    resource: str,
    columns: list[str],
) -> None:
    core, apps = client.CoreV1Api(kube_api), client.AppsV1Api(kube_api)
    coordination = client.CoordinationV1Api(kube_api)
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    apps.create_namespaced_deployment(ns, yaml.safe_load(manifest("d", 1)))
    apps.create_namespaced_replica_set(ns, replicaset("r"))
    coordination.create_namespaced_lease(
        ns, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
    )
    out = run_kubectl("get", resource, "-n", ns).stdout
    assert header(out) == columns
    rows = [line.split() for line in out.splitlines()[1:]]
    assert len(rows) == 1
    if resource == "leases":
        assert rows[0][:2] == ["l", "me"]


def test_kubectl_get_pods_shows_the_kubelet_made_them_running(
    run_kubectl: Kubectl, ns: str
) -> None:
    run_kubectl("run", "web", "--image=nginx", "-n", ns)

    def running() -> list[str] | None:
        out = run_kubectl("get", "pods", "-n", ns).stdout
        row = out.splitlines()[1].split() if len(out.splitlines()) > 1 else []
        return row if row[1:3] == ["1/1", "Running"] else None

    row = wait_for(running, "the pod to run")
    assert row[0] == "web" and row[3] == "0"


@pytest.mark.parametrize(
    ("resource", "columns", "first"),
    [
        pytest.param("nodes", ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], "sim-node-0"),
        pytest.param("namespaces", ["NAME", "STATUS", "AGE"], "default"),
    ],
)
def test_kubectl_get_prints_kube_columns_for_cluster_kinds(
    run_kubectl: Kubectl, resource: str, columns: list[str], first: str
) -> None:
    out = run_kubectl("get", resource).stdout
    assert header(out) == columns
    row = out.splitlines()[1].split()
    assert row[0] == first
    assert row[1] in ("Ready", "Active")


def test_kubectl_apply_create_unchanged_configured_scale_delete(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str, tmp_path: Path
) -> None:
    apps = client.AppsV1Api(kube_api)
    path = tmp_path / "web.yaml"
    path.write_text(manifest("web", 2))
    apply = ("apply", "--validate=false", "-n", ns, "-f", str(path))
    assert run_kubectl(*apply).stdout.strip() == "deployment.apps/web created"
    assert run_kubectl(*apply).stdout.strip() == "deployment.apps/web unchanged"
    path.write_text(manifest("web", 2, image="nginx:1.26"))
    assert run_kubectl(*apply).stdout.strip() == "deployment.apps/web configured"
    got = apps.read_namespaced_deployment("web", ns)
    assert got.spec.template.spec.containers[0].image == "nginx:1.26"
    assert got.metadata.generation == 2
    out = run_kubectl("scale", "deployment/web", "--replicas=5", "-n", ns).stdout
    assert out.strip() == "deployment.apps/web scaled"
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 5
    out = run_kubectl("delete", "deployment", "web", "-n", ns).stdout
    assert out.strip() == 'deployment.apps "web" deleted'
    assert apps.list_namespaced_deployment(ns).items == []


def test_kubectl_delete_pod_waits_for_the_kubelet_to_terminate_it(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str
) -> None:
    run_kubectl("run", "p", "--image=nginx", "-n", ns)
    start = time.monotonic()
    out = run_kubectl("delete", "pod", "p", "-n", ns).stdout
    assert out.strip() == 'pod "p" deleted'
    assert time.monotonic() - start < 10  # min(30s grace, 1s terminate delay)
    assert client.CoreV1Api(kube_api).list_namespaced_pod(ns).items == []


def test_kubectl_get_watch_ends_at_request_timeout(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str
) -> None:
    client.CoreV1Api(kube_api).create_namespaced_config_map(ns, {"metadata": {"name": "a"}})
    start = time.monotonic()
    result = run_kubectl("get", "configmaps", "-w", "--request-timeout=1s", "-n", ns, timeout=20)
    took = time.monotonic() - start
    assert result.returncode == 0
    assert 0.9 <= took < 10
    assert header(result.stdout) == ["NAME", "DATA", "AGE"]
    assert result.stdout.splitlines()[1].split()[0] == "a"


def test_kubectl_rollout_status_sees_a_complete_deployment(
    run_kubectl: Kubectl, kube_api: client.ApiClient, ns: str
) -> None:
    apps = client.AppsV1Api(kube_api)
    dep = apps.create_namespaced_deployment(ns, yaml.safe_load(manifest("web", 2)))
    status = {
        "observedGeneration": dep.metadata.generation,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable",
                "message": 'ReplicaSet "web-1" has successfully progressed.',
            },
        ],
    }
    apps.patch_namespaced_deployment_status("web", ns, {"status": status})
    out = run_kubectl("rollout", "status", "deployment/web", "--timeout=10s", "-n", ns).stdout
    assert out.strip() == 'deployment "web" successfully rolled out'
    assert header(run_kubectl("get", "deployments", "-n", ns).stdout)[1] == "READY"
    assert run_kubectl("get", "deployments", "-n", ns).stdout.splitlines()[1].split()[1] == "2/2"


def test_kubectl_describe_pod_and_deployment(run_kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    run_kubectl("run", "p", "--image=nginx:1.25", "-n", ns)

    # The kubelet turns a pod Running (containers started, not ready) before it turns Ready:
    # describe is read once the Ready condition is True, not at the first Running.
    def described_ready() -> str | None:
        described = run_kubectl("describe", "pod", "p", "-n", ns).stdout
        return described if "Ready             True" in described else None

    out = wait_for(described_ready, "the pod to be Ready")
    for line in ("Name:         p", f"Namespace:    {ns}", "Status:       Running"):
        assert line in out
    assert "Node:         sim-node-" in out
    assert "Ready             True" in out
    (tmp_path / "d.yaml").write_text(manifest("web", 3))
    run_kubectl("apply", "--validate=false", "-n", ns, "-f", str(tmp_path / "d.yaml"))
    out = run_kubectl("describe", "deployment", "web", "-n", ns).stdout
    assert "Selector:               app=web" in out
    assert "Replicas:               3 desired" in out
    assert "StrategyType:           RollingUpdate" in out


def test_kubectl_shows_kubes_warning_and_strict_error_for_a_nested_unknown_field(
    run_kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    body = yaml.safe_load(manifest("typo", 1))
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(body))
    url = f"/apis/apps/v1/namespaces/{ns}/deployments"
    field = "spec.template.spec.containers[0].imagePullPolicyy"
    strict = run_kubectl(
        "create", "--raw", f"{url}?fieldValidation=Strict", "-f", str(path), check=False
    )
    assert strict.returncode != 0
    assert f'strict decoding error: unknown field "{field}"' in strict.stderr
    warned = run_kubectl("create", "--raw", url, "-f", str(path))
    assert f'Warning: unknown field "{field}"' in warned.stderr.splitlines()
    stored = json.loads(run_kubectl("get", "deployment", "typo", "-n", ns, "-o", "json").stdout)
    assert "imagePullPolicyy" not in stored["spec"]["template"]["spec"]["containers"][0]


def _managers(run_kubectl: Kubectl, *target: str) -> dict[tuple[str, str], Any]:
    """(manager, subresource) -> fieldsV1 of ``target`` as ``kubectl get`` shows them (this
    kubectl, 1.20, prints them; 1.21+ hides them unless ``--show-managed-fields``)."""
    out = run_kubectl("get", *target, "-o", "json").stdout
    entries = json.loads(out)["metadata"]["managedFields"]
    assert all(e["operation"] == "Update" and e["fieldsType"] == "FieldsV1" for e in entries)
    return {(e["manager"], e.get("subresource", "")): e["fieldsV1"] for e in entries}


def test_kubectl_managed_fields_name_create_scale_and_the_kubelet(
    run_kubectl: Kubectl, ns: str
) -> None:
    run_kubectl("create", "deployment", "mf", "--image=nginx", "-n", ns)
    created = _managers(run_kubectl, "deployment", "mf", "-n", ns)
    assert list(created) == [("kubectl-create", "")]
    assert created["kubectl-create", ""]["f:spec"]["f:replicas"] == {}

    run_kubectl("scale", "deployment/mf", "--replicas=3", "-n", ns)
    scaled = _managers(run_kubectl, "deployment", "mf", "-n", ns)
    # this kubectl (1.20) sends "kubectl/v1.20.2 …" for scale (newer ones "kubectl-scale/…",
    # test_managedfields covers that agent): the entry is the scale subresource's
    assert scaled["kubectl", "scale"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in scaled["kubectl-create", ""]["f:spec"]

    run_kubectl("run", "p", "--image=nginx", "-n", ns)

    def kubelet_wrote() -> dict[tuple[str, str], Any] | None:
        # The kubelet writes status twice — bound (PodScheduled), then Ready --pod-ready-delay
        # later — so its entry exists before it names Ready: wait for the second write (a
        # kubectl get within those 100 ms saw the first only).
        got = _managers(run_kubectl, "pod", "p", "-n", ns)
        entry = got.get(("kubelet", "status"), {})
        conditions = entry.get("f:status", {}).get("f:conditions", {})
        return got if 'k:{"type":"Ready"}' in conditions else None

    pod = wait_for(kubelet_wrote, "the kubelet's status write")
    assert set(pod) == {("kubectl-run", ""), ("kubelet", "status")}
    assert set(pod["kubelet", "status"]) == {"f:status"}
    assert 'k:{"type":"Ready"}' in pod["kubelet", "status"]["f:status"]["f:conditions"]
