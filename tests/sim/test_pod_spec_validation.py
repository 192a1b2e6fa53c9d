"""Pod specs (a Pod's, and every controller's template) against kube's ValidatePodSpec, as far
as the emulator checks them: volumes' names, containers' ports and volume mounts — cases in
the style of kube's validation_test.go, every cause at once, in kube's order."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.seed import seed_cluster
from pycm.sim.store import Store
from pycm.util.clock import FakeClock

LABELS = {"app": "web"}


@pytest.fixture
def store() -> Store:
    s = Store(clock=FakeClock())
    seed_cluster(s, 1)
    return s


def pod(**spec: Any) -> dict[str, Any]:
    containers = [{"name": "app", "image": "nginx"}]
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, **spec}}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "app", "image": "nginx", **fields}


def causes(store: Store, plural: str, body: dict[str, Any], group: str = "") -> list[Any]:
    with pytest.raises(APIError) as err:
        store.create(store.resource(plural, group), copy.deepcopy(body), "default")
    assert err.value.code == 422, err.value.status()
    return [(c["field"], c["message"]) for c in err.value.status()["details"]["causes"]]


def test_pod_spec_valid_volumes_ports_and_mounts_are_created(store: Store) -> None:
    body = pod(
        volumes=[{"name": "data", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "c"}}],
        containers=[
            container(
                ports=[{"name": "http", "containerPort": 80}, {"containerPort": 9090}],
                volumeMounts=[
                    {"name": "data", "mountPath": "/data"},
                    {"name": "conf", "mountPath": "/etc/app"},
                ],
            )
        ],
    )
    created = store.create(store.resource("pods"), body, "default")
    assert created["spec"]["containers"][0]["ports"][1]["protocol"] == "TCP"  # defaulted


INVALID = [
    pytest.param(
        pod(
            volumes=[
                {"name": "data", "emptyDir": {}},
                {"name": "data", "emptyDir": {}},
                {"name": "Bad_Name", "emptyDir": {}},
                {"emptyDir": {}},
            ]
        ),
        [
            ("spec.volumes[1].name", 'Duplicate value: "data"'),
            (
                "spec.volumes[2].name",
                'Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
                "alphanumeric characters or '-', and must start and end with an alphanumeric "
                "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ),
            ("spec.volumes[3].name", "Required value"),
        ],
        id="volume-names",
    ),
    pytest.param(
        pod(
            volumes=[
                {"name": "typo", "emptydir": {}},
                {"name": "two", "emptyDir": {}, "configMap": {"name": "c"}, "cephfs": {}},
            ]
        ),
        [
            ("spec.volumes[0]", "Required value: must specify a volume type"),
            ("spec.volumes[1].cephFS", "Forbidden: may not specify more than 1 volume type"),
            ("spec.volumes[1].configMap", "Forbidden: may not specify more than 1 volume type"),
        ],
        id="volume-sources",
    ),
    pytest.param(
        pod(
            containers=[
                container(
                    ports=[
                        {"name": "http", "containerPort": 80},
                        {"name": "http", "containerPort": 70000, "protocol": "ICMP"},
                        {"name": "Web--UI", "hostPort": 99999},
                    ]
                )
            ]
        ),
        [
            ("spec.containers[0].ports[1].name", 'Duplicate value: "http"'),
            (
                "spec.containers[0].ports[1].containerPort",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            ),
            (
                "spec.containers[0].ports[1].protocol",
                'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            ),
            (
                "spec.containers[0].ports[2].name",
                'Invalid value: "Web--UI": must contain only alpha-numeric characters (a-z, '
                "0-9), and hyphens (-)",
            ),
            (
                "spec.containers[0].ports[2].name",
                'Invalid value: "Web--UI": must not contain consecutive hyphens',
            ),
            ("spec.containers[0].ports[2].containerPort", "Required value"),
            (
                "spec.containers[0].ports[2].hostPort",
                "Invalid value: 99999: must be between 1 and 65535, inclusive",
            ),
        ],
        id="container-ports",
    ),
    pytest.param(
        pod(
            volumes=[{"name": "data", "emptyDir": {}}],
            containers=[
                container(
                    volumeMounts=[
                        {"name": "data", "mountPath": "/data"},
                        {"name": "cache", "mountPath": "/data"},
                        {"name": "data"},
                    ]
                )
            ],
        ),
        [
            ("spec.containers[0].volumeMounts[1].name", 'Not found: "cache"'),
            (
                "spec.containers[0].volumeMounts[1].mountPath",
                'Invalid value: "/data": must be unique',
            ),
            ("spec.containers[0].volumeMounts[2].mountPath", "Required value"),
        ],
        id="volume-mounts",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID)
def test_pod_spec_invalid_is_refused_with_kubes_causes(
    store: Store, body: dict[str, Any], expected: list[Any]
) -> None:
    assert causes(store, "pods", body) == expected


def test_pod_spec_of_a_deployment_template_is_checked_too(store: Store) -> None:
    template = {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d"}])]},
    }
    body = {
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": LABELS}, "template": template},
    }
    assert causes(store, "deployments", body, "apps") == [
        ("spec.template.spec.containers[0].volumeMounts[0].name", 'Not found: "data"')
    ]


def test_pod_spec_statefulset_mounts_its_claim_templates(store: Store) -> None:
    template = {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d"}])]},
    }
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    spec = {"selector": {"matchLabels": LABELS}, "serviceName": "db", "template": template}
    body = {"metadata": {"name": "db"}, "spec": {**spec, "volumeClaimTemplates": [claim]}}
    res = store.resource("statefulsets", "apps")
    assert store.create(res, copy.deepcopy(body), "default")["metadata"]["name"] == "db"
    body["metadata"]["name"] = "db2"
    del body["spec"]["volumeClaimTemplates"]
    assert causes(store, "statefulsets", body, "apps") == [
        ("spec.template.spec.containers[0].volumeMounts[0].name", 'Not found: "data"')
    ]


def test_pod_spec_probes_and_hooks_need_exactly_one_action(store: Store) -> None:
    http = {"httpGet": {"port": 80}}
    body = pod(
        containers=[
            container(
                lifecycle={"preStop": {}, "postStart": {"exec": {}}},
                livenessProbe={**http, "tcpSocket": {"port": 80}, "periodSeconds": -1},
                readinessProbe={"initialDelaySeconds": 5},
                startupProbe={**http, "failureThreshold": 30},
            )
        ]
    )
    assert causes(store, "pods", body) == [
        ("spec.containers[0].lifecycle.postStart.exec.command", "Required value"),
        ("spec.containers[0].lifecycle.preStop", "Required value: must specify a handler type"),
        (
            "spec.containers[0].livenessProbe.tcpSocket",
            "Forbidden: may not specify more than 1 handler type",
        ),
        (
            "spec.containers[0].livenessProbe.periodSeconds",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        ("spec.containers[0].readinessProbe", "Required value: must specify a handler type"),
    ]


def test_pod_spec_env_needs_a_name_and_one_value_or_source(store: Store) -> None:
    secret = {"secretKeyRef": {"name": "s"}}
    body = pod(
        containers=[
            container(
                env=[
                    {"value": "x"},
                    {"name": "A", "valueFrom": {}},
                    {"name": "B", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
                    {"name": "C", "valueFrom": {**secret, "configMapKeyRef": {"key": "k"}}},
                ],
                envFrom=[{"prefix": "P_"}],
            )
        ]
    )
    must = (
        "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
    )
    assert causes(store, "pods", body) == [
        ("spec.containers[0].env[0].name", "Required value"),
        ("spec.containers[0].env[1].valueFrom", f'Invalid value: "": {must}'),
        (
            "spec.containers[0].env[2].valueFrom",
            'Invalid value: "": may not be specified when `value` is not empty',
        ),
        ("spec.containers[0].env[3].valueFrom.secretKeyRef.key", "Required value"),
        (
            "spec.containers[0].env[3].valueFrom",
            'Invalid value: "": may not have more than one field specified at a time',
        ),
        (
            "spec.containers[0].envFrom",
            'Invalid value: "": must specify one of: `configMapRef` or `secretRef`',
        ),
    ]
