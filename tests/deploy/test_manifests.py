"""deploy/kubernetes: valid against Kubernetes' schemas, accepted by kubectl, and shaped as the
README promises (three replicas, leader election, probes on 10257 over HTTPS, hardened pods).

Schemas come from kubernetes-validate (pinned in the lock; its schemas ship in the wheel, so it
works offline); `kubectl apply --dry-run=client -k` runs the project's kubectl against the
emulator (TLS), which serves discovery for every kind the manifests hold.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.conftest import DEPLOY, KUSTOMIZATIONS, Objects, find, kubectl_env
from tests.sim.conftest import SimProcess, start_sim, stop_sim

# The oldest Kubernetes the manifests are meant for, and the newest the validator knows.
SCHEMA_VERSIONS = ("1.30.0", "1.37.0")
POD_LABELS = {
    "app.kubernetes.io/name": "pycm",
    "app.kubernetes.io/component": "controller-manager",
}


def _yaml_files() -> list[Path]:
    return sorted((DEPLOY / "kubernetes").rglob("*.yaml"))


def _is_manifest(doc: Any) -> bool:
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc and "metadata" in doc


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("name", sorted(KUSTOMIZATIONS))
def test_manifests_rendered_validate_strictly_against_kubernetes_schemas(
    render: Callable[[str], Objects], name: str, version: str
) -> None:
    objects = render(name)
    assert len(objects) >= 10
    for obj in objects:
        # strict: an unknown field (a typo) is an error, not silently dropped by the server.
        kubernetes_validate.validate(obj, version, strict=True)


def test_manifests_every_plain_file_validates() -> None:
    manifests = 0
    for path in _yaml_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if _is_manifest(doc):
                kubernetes_validate.validate(doc, SCHEMA_VERSIONS[0], strict=True)
                manifests += 1
    assert manifests >= 14  # the base's ten objects and each overlay's Role and RoleBinding


def test_manifests_schema_validation_rejects_a_broken_deployment(
    render: Callable[[str], Objects],
) -> None:
    # The check above can fail: the same Deployment with a typo in a field is rejected.
    broken = find(render("default"), "Deployment", "pycm")
    broken = yaml.safe_load(yaml.safe_dump(broken))
    broken["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, SCHEMA_VERSIONS[0], strict=True)


@pytest.fixture(scope="module")
def kube_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    tmp = tmp_path_factory.mktemp("deploy-kubectl")
    process = start_sim(["--tls", "--kubeconfig-out", str(tmp / "kubeconfig")], tmp)
    yield process
    assert stop_sim(process) == 0


@pytest.mark.parametrize("name", sorted(KUSTOMIZATIONS))
def test_manifests_kubectl_apply_dry_run_accepts_every_object(
    kubectl: Path, kube_sim: SimProcess, render: Callable[[str], Objects], name: str
) -> None:
    result = subprocess.run(
        [
            str(kubectl),
            "--kubeconfig",
            str(kube_sim.kubeconfig),
            "apply",
            "--dry-run=client",
            # kubectl's own schema check runs against the emulator's /openapi/v2 (the kinds it
            # has schemas for); kubernetes-validate above checks every kind.
            "-k",
            str(KUSTOMIZATIONS[name]),
        ],
        capture_output=True,
        text=True,
        env=kubectl_env(kube_sim.tmp),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert all(re.search(r" created \(dry run\)$", line) for line in lines), result.stdout
    assert len(lines) == len(render(name))


def _container(objects: Objects) -> dict[str, Any]:
    deployment = find(objects, "Deployment", "pycm")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def test_manifests_deployment_runs_three_electing_replicas(
    render: Callable[[str], Objects],
) -> None:
    objects = render("default")
    deployment = find(objects, "Deployment", "pycm")
    assert deployment["metadata"]["namespace"] == "pycm-system"
    spec = deployment["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"]["matchLabels"] == POD_LABELS
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "pycm"
    args = _container(objects)["args"]
    assert args[0] == "run"
    assert "--leader-elect=true" in args
    # No --leader-elect-resource-namespace: in-cluster the pod's namespace is the default, and
    # the leader-election Role lives there.
    assert not any(a.startswith("--leader-elect-resource-namespace") for a in args)
    assert "--leader-elect-resource-name=pycm" in args
    assert _container(objects)["image"] == "localhost/pycm:0.1.0"
    terms = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert terms[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert terms[0]["podAffinityTerm"]["labelSelector"]["matchLabels"] == POD_LABELS


def test_manifests_probes_are_livez_and_readyz_over_https_on_10257(
    render: Callable[[str], Objects],
) -> None:
    container = _container(render("default"))
    assert container["ports"] == [{"name": "https", "containerPort": 10257, "protocol": "TCP"}]
    assert "--secure-port=10257" in container["args"]
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert (get["path"], get["port"], get["scheme"]) == (path, "https", "HTTPS")


def test_manifests_pod_is_hardened(render: Callable[[str], Objects]) -> None:
    objects = render("default")
    pod = find(objects, "Deployment", "pycm")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = _container(objects)
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert "memory" in container["resources"]["limits"]
    namespace = find(objects, "Namespace", "pycm-system")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_manifests_pdb_and_metrics_service_select_the_pods(
    render: Callable[[str], Objects],
) -> None:
    objects = render("default")
    pdb = find(objects, "PodDisruptionBudget", "pycm")
    assert pdb["spec"]["selector"]["matchLabels"] == POD_LABELS
    assert pdb["spec"]["maxUnavailable"] == 1
    service = find(objects, "Service", "pycm-metrics")
    assert service["spec"]["selector"] == POD_LABELS
    assert service["spec"]["ports"][0]["targetPort"] == "https"
    assert service["spec"]["ports"][0]["port"] == 10257


def test_manifests_otlp_endpoint_points_at_a_collector_service(
    render: Callable[[str], Objects],
) -> None:
    args = _container(render("default"))["args"]
    endpoints = [a.split("=", 1)[1] for a in args if a.startswith("--otlp-endpoint=")]
    assert endpoints == ["http://otel-collector.observability.svc:4317"]
    # ... and the file says how to change it.
    text = (DEPLOY / "kubernetes" / "base" / "deployment.yaml").read_text()
    assert "Point this at yours" in text


def test_manifests_service_account_overlay_adds_the_flag_and_kube_system_role(
    render: Callable[[str], Objects],
) -> None:
    plain, overlay = render("default"), render("service-account-credentials")
    assert "--use-service-account-credentials" not in _container(plain)["args"]
    assert _container(overlay)["args"][-1] == "--use-service-account-credentials"
    role = find(overlay, "Role", "pycm:service-account-credentials")
    assert role["metadata"]["namespace"] == "kube-system"
    assert {(tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"]} == {
        (("serviceaccounts",), ("get", "create")),
        (("serviceaccounts/token",), ("create",)),
    }
    assert not [o for o in plain if o["metadata"].get("namespace") == "kube-system"]


def test_manifests_coordinated_overlay_adds_the_gate_and_the_candidates_role(
    render: Callable[[str], Objects],
) -> None:
    plain, overlay = render("default"), render("coordinated-leader-election")
    gate = "--feature-gates=CoordinatedLeaderElection=true"
    assert gate not in _container(plain)["args"]
    assert _container(overlay)["args"][-1] == gate
    role = find(overlay, "Role", "pycm:coordinated-leader-election")
    assert role["metadata"]["namespace"] == "pycm-system"  # the Lease's (the pod's) namespace
    assert [(r["resources"], r["verbs"]) for r in role["rules"]] == [
        (["leasecandidates"], ["get", "create", "update", "watch"])
    ]
    binding = find(overlay, "RoleBinding", "pycm:coordinated-leader-election")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "pycm", "namespace": "pycm-system"}
    ]


def test_manifests_sharded_overlay_adds_the_flag_and_the_members_role(
    render: Callable[[str], Objects],
) -> None:
    plain, overlay = render("default"), render("sharded")
    assert "--sharded" not in _container(plain)["args"]
    assert _container(overlay)["args"][-1] == "--sharded"
    (deployment,) = [o for o in overlay if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 3  # three members share the keys
    # The leader lease's Role stays: singletons still elect.
    assert find(overlay, "Role", "pycm:leader-election")["metadata"]["namespace"] == "pycm-system"
    role = find(overlay, "Role", "pycm:sharding")
    assert role["metadata"]["namespace"] == "pycm-system"  # the pod's: the members' Leases
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in role["rules"]] == [
        (["coordination.k8s.io"], ["leases"], ["create", "get", "list", "update", "delete"])
    ]
    assert not any("resourceNames" in r for r in role["rules"])  # names are the pods'
    binding = find(overlay, "RoleBinding", "pycm:sharding")
    assert binding["roleRef"]["name"] == "pycm:sharding"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "pycm", "namespace": "pycm-system"}
    ]
