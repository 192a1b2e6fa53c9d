"""Pod specs (a Pod's, and every controller's template) against kube's ValidatePodSpec, as far
as the emulator checks them (pycm/sim/podspec_validation.py's docstring lists what is not):
volumes, containers (ports, env, mounts, pull policy, resources, security context, hooks and
probes; init containers and sidecars), the pod's policies, DNS, security context, affinity,
topology spread and tolerations — cases in the style of kube's validation_test.go, every cause
at once, in kube's order; and the defaults kube applies to these fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.quantity import canonical_quantity
from pycm.sim.store import Store

LABELS = {"app": "web"}
QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


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


QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
ENV_NAME = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
IDS = "must be between 0 and 2147483647, inclusive"
INIT_ONLY = "Forbidden: may not be set for init containers without restartPolicy=Always"
EXEC = {"exec": {"command": ["true"]}}
C0 = "spec.containers[0]"
AFF = "spec.affinity"
REQ, PREF = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)


def test_pod_spec_valid_scheduling_security_and_resources_are_created(store: Store) -> None:
    """No false alarm: every field these rules read, well formed, is accepted."""
    term = {"labelSelector": {"matchLabels": LABELS}, "topologyKey": "kubernetes.io/hostname"}
    body = pod(
        containers=[
            container(
                env=[{"name": "MY_ENV.name-1", "value": "x"}],
                envFrom=[{"prefix": "CFG_", "configMapRef": {"name": "c"}}],
                resources={
                    "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "2"},
                    "requests": {"cpu": "500m", "memory": "64Mi", "example.com/gpu": "2"},
                },
                securityContext={"runAsUser": 1000, "allowPrivilegeEscalation": False},
                livenessProbe={"httpGet": {"port": 80}},
            )
        ],
        initContainers=[
            container(name="migrate"),
            container(name="proxy", restartPolicy="Always", readinessProbe=EXEC),
        ],
        tolerations=[
            {"operator": "Exists"},
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {"key": "dedicated", "value": "web", "effect": "NoSchedule"},
        ],
        nodeSelector={"kubernetes.io/os": "linux"},
        securityContext={"runAsUser": 0, "fsGroup": 2000, "supplementalGroups": [3000]},
        affinity={
            "nodeAffinity": {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                PREF: [
                    {
                        "weight": 100,
                        "preference": {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                            ]
                        },
                    }
                ],
            },
            "podAntiAffinity": {PREF: [{"weight": 1, "podAffinityTerm": term}]},
            "podAffinity": {REQ: [term]},
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 2,
                "labelSelector": {"matchLabels": LABELS},
            }
        ],
        dnsPolicy="None",
        dnsConfig={
            "nameservers": ["10.0.0.10"],
            "searches": ["svc.cluster.local."],
            "options": [{"name": "ndots", "value": "2"}],
        },
        serviceAccountName="web",
        activeDeadlineSeconds=600,
        hostname="web-0",
        subdomain="web",
    )
    created = store.create(store.resource("pods"), copy.deepcopy(body), "default")
    assert created["spec"]["tolerations"] == body["spec"]["tolerations"]


INVALID_MORE = [
    pytest.param(
        pod(
            containers=[
                container(
                    resources={
                        "limits": {
                            "cpu": "1000m",
                            "memory": "128Mi",
                            "gpu": "1",
                            "example.com/gpu": "1",
                        },
                        "requests": {
                            "cpu": "2",
                            "memory": "-1",
                            "example.com/gpu": "500m",
                            "pods": "1",
                            "vendor.io/fpga": "1",
                        },
                    }
                )
            ]
        ),
        [
            (
                f"{C0}.resources.limits[gpu]",
                'Invalid value: "gpu": must be a standard resource type or fully qualified',
            ),
            (
                f"{C0}.resources.requests",
                'Invalid value: "2": must be less than or equal to cpu limit of 1',
            ),
            (
                f"{C0}.resources.requests[memory]",
                'Invalid value: "-1": must be greater than or equal to 0',
            ),
            (
                f"{C0}.resources.requests[example.com/gpu]",
                'Invalid value: "500m": must be an integer',
            ),
            (
                f"{C0}.resources.requests",
                'Invalid value: "500m": must be equal to example.com/gpu limit of 1',
            ),
            (
                f"{C0}.resources.requests[pods]",
                'Invalid value: "pods": must be a standard resource for containers',
            ),
            (
                f"{C0}.resources.limits",
                "Required value: Limit must be set for non overcommitable resources",
            ),
            (  # a Pod's request defaults to its limit, so the bad name is a request's too
                f"{C0}.resources.requests[gpu]",
                'Invalid value: "gpu": must be a standard resource type or fully qualified',
            ),
        ],
        id="resources",
    ),
    pytest.param(
        pod(
            containers=[
                container(
                    env=[
                        {"name": "1BAD", "value": "x"},
                        {"name": "..", "value": "x"},
                        {"name": "ok.name-1", "value": "x"},
                    ],
                    envFrom=[{"prefix": "9_", "secretRef": {"name": "s"}}],
                    imagePullPolicy="Sometimes",
                    terminationMessagePolicy="Stdout",
                )
            ]
        ),
        [
            (
                f"{C0}.terminationMessagePolicy",
                "Invalid value: \"Stdout\": must be 'File' or 'FallbackToLogsOnError'",
            ),
            (f"{C0}.env[0].name", f'Invalid value: "1BAD": {ENV_NAME}'),
            (f"{C0}.env[1].name", "Invalid value: \"..\": must not be '..'"),
            (f"{C0}.envFrom[0].prefix", f'Invalid value: "9_": {ENV_NAME}'),
            (
                f"{C0}.imagePullPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", '
                '"Never"',
            ),
        ],
        id="env-names-and-policies",
    ),
    pytest.param(
        pod(
            tolerations=[
                {"operator": "Equal", "value": "x"},
                {"key": "k", "operator": "Exists", "value": "v"},
                {"key": "k", "operator": "In"},
                {"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 30},
                {"key": "bad key!", "value": "bad value!", "effect": "Never"},
            ],
            nodeSelector={"disk": "ssd!"},
        ),
        [
            ("spec.nodeSelector", f'Invalid value: "ssd!": {LABEL_VALUE}'),
            (
                "spec.tolerations[0].operator",
                'Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
                '"match all values and all keys"',
            ),
            (
                "spec.tolerations[1].operator",
                'Invalid value: {"key":"k","operator":"Exists","value":"v"}: '
                "value must be empty when `operator` is 'Exists'",
            ),
            (
                "spec.tolerations[2].operator",
                'Unsupported value: "In": supported values: "Equal", "Exists"',
            ),
            (
                "spec.tolerations[3].effect",
                "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
                "`tolerationSeconds` is set",
            ),
            ("spec.tolerations[4].key", f'Invalid value: "bad key!": {QUALIFIED}'),
            ("spec.tolerations[4].operator", f'Invalid value: "bad value!": {LABEL_VALUE}'),
            (
                "spec.tolerations[4].effect",
                'Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", '
                '"NoExecute"',
            ),
        ],
        id="tolerations-and-node-selector",
    ),
    pytest.param(
        pod(
            containers=[
                container(
                    securityContext={
                        "runAsGroup": -5,
                        "procMount": "Masked",
                        "allowPrivilegeEscalation": False,
                        "privileged": True,
                    }
                ),
                container(
                    name="two",
                    securityContext={
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"add": ["NET_ADMIN", "CAP_SYS_ADMIN"]},
                    },
                ),
            ],
            securityContext={
                "runAsUser": -1,
                "fsGroup": 2**31,
                "supplementalGroups": [5, -2],
                "fsGroupChangePolicy": "Sometimes",
            },
        ),
        [
            (f"{C0}.securityContext.runAsGroup", f"Invalid value: -5: {IDS}"),
            (
                f"{C0}.securityContext.procMount",
                'Unsupported value: "Masked": supported values: "Default", "Unmasked"',
            ),
            (
                f"{C0}.securityContext",
                'Invalid value: {"allowPrivilegeEscalation":false,"privileged":true,'
                '"procMount":"Masked","runAsGroup":-5}: cannot set '
                "`allowPrivilegeEscalation` to false and `privileged` to true",
            ),
            (
                "spec.containers[1].securityContext",
                'Invalid value: {"allowPrivilegeEscalation":false,"capabilities":{"add":'
                '["NET_ADMIN","CAP_SYS_ADMIN"]}}: cannot set `allowPrivilegeEscalation` to '
                "false and `capabilities.Add` CAP_SYS_ADMIN",
            ),
            ("spec.securityContext.fsGroup", f"Invalid value: 2147483648: {IDS}"),
            ("spec.securityContext.runAsUser", f"Invalid value: -1: {IDS}"),
            ("spec.securityContext.supplementalGroups[1]", f"Invalid value: -2: {IDS}"),
            (
                "spec.securityContext.fsGroupChangePolicy",
                'Unsupported value: "Sometimes": supported values: "OnRootMismatch", "Always"',
            ),
        ],
        id="security-contexts",
    ),
    pytest.param(
        pod(
            restartPolicy="Sometimes",
            dnsPolicy="Cluster",
            dnsConfig={
                "nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3", "not-an-ip"],
                "searches": ["ok.example.", "Bad_Search"],
                "options": [{"value": "2"}],
            },
            serviceAccountName="Bad_SA",
            nodeName="Node_1",
            priorityClassName="High!",
            runtimeClassName="gVisor",
            preemptionPolicy="Sometimes",
            activeDeadlineSeconds=0,
            hostname="Host",
            subdomain="a.b",
            terminationGracePeriodSeconds=-1,
        ),
        [
            (
                "spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            ),
            (
                "spec.dnsPolicy",
                'Unsupported value: "Cluster": supported values: "ClusterFirst", '
                '"ClusterFirstWithHostNet", "Default", "None"',
            ),
            (
                "spec.dnsConfig.nameservers",
                'Invalid value: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "not-an-ip"}: '
                "must not have more than 3 nameservers",
            ),
            (
                "spec.dnsConfig.nameservers[3]",
                'Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or '
                "2001:db8::ffff)",
            ),
            ("spec.dnsConfig.searches[1]", f'Invalid value: "Bad_Search": {DNS_SUBDOMAIN}'),
            ("spec.dnsConfig.options[0]", "Required value: Option.Name must not be empty"),
            ("spec.serviceAccountName", f'Invalid value: "Bad_SA": {DNS_SUBDOMAIN}'),
            ("spec.nodeName", f'Invalid value: "Node_1": {DNS_SUBDOMAIN}'),
            (
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            ),
            ("spec.hostname", f'Invalid value: "Host": {DNS_LABEL}'),
            ("spec.subdomain", f'Invalid value: "a.b": {DNS_LABEL}'),
            ("spec.priorityClassName", f'Invalid value: "High!": {DNS_SUBDOMAIN}'),
            ("spec.runtimeClassName", f'Invalid value: "gVisor": {DNS_SUBDOMAIN}'),
            (
                "spec.preemptionPolicy",
                'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
            ),
            (
                "spec.terminationGracePeriodSeconds",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
        ],
        id="pod-policies-dns-and-names",
    ),
    pytest.param(
        pod(dnsPolicy="None"),
        [("spec.dnsConfig", "Required value: must provide `dnsConfig` when `dnsPolicy` is None")],
        id="dns-none-needs-a-config",
    ),
    pytest.param(
        pod(
            affinity={
                "nodeAffinity": {
                    REQ: {"nodeSelectorTerms": []},
                    PREF: [
                        {
                            "weight": 0,
                            "preference": {"matchExpressions": [{"key": "zone", "operator": "In"}]},
                        },
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "n", "operator": "Gt", "values": ["1", "2"]},
                                    {"key": "x", "operator": "Near"},
                                ],
                                "matchFields": [
                                    {"key": "metadata.labels", "operator": "In", "values": ["a"]}
                                ],
                            },
                        },
                    ],
                },
                "podAffinity": {
                    PREF: [{"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}]
                },
                "podAntiAffinity": {REQ: [{"labelSelector": {"matchLabels": LABELS}}]},
            }
        ),
        [
            (
                f"{AFF}.nodeAffinity.{REQ}.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            ),
            (
                f"{AFF}.nodeAffinity.{PREF}[0].weight",
                "Invalid value: 0: must be in the range 1-100",
            ),
            (
                f"{AFF}.nodeAffinity.{PREF}[0].preference.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                f"{AFF}.nodeAffinity.{PREF}[1].preference.matchExpressions[0].values",
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
            (
                f"{AFF}.nodeAffinity.{PREF}[1].preference.matchExpressions[1].operator",
                'Invalid value: "Near": not a valid selector operator',
            ),
            (
                f"{AFF}.nodeAffinity.{PREF}[1].preference.matchFields[0].key",
                'Invalid value: "metadata.labels": not a valid field selector key',
            ),
            (
                f"{AFF}.podAffinity.{PREF}[0].weight",
                "Invalid value: 101: must be in the range 1-100",
            ),
            (f"{AFF}.podAntiAffinity.{REQ}[0].topologyKey", "Required value: can not be empty"),
            (
                f"{AFF}.podAntiAffinity.{REQ}[0].topologyKey",
                'Invalid value: "": name part must be non-empty',
            ),
            (f"{AFF}.podAntiAffinity.{REQ}[0].topologyKey", f'Invalid value: "": {QUALIFIED}'),
        ],
        id="affinity",
    ),
    pytest.param(
        pod(
            topologySpreadConstraints=[
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": 2,
                },
                {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Maybe", "minDomains": 0},
            ]
        ),
        [
            (
                "spec.topologySpreadConstraints[0].maxSkew",
                "Invalid value: 0: must be greater than zero",
            ),
            (
                "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
                'Duplicate value: "{zone, DoNotSchedule}"',
            ),
            ("spec.topologySpreadConstraints[2].topologyKey", "Required value: can not be empty"),
            (
                "spec.topologySpreadConstraints[2].whenUnsatisfiable",
                'Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
            ),
            (
                "spec.topologySpreadConstraints[2].minDomains",
                "Invalid value: 0: must be greater than zero",
            ),
            (
                "spec.topologySpreadConstraints[2].minDomains",
                "Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
                "Maybe",
            ),
        ],
        id="topology-spread",
    ),
    pytest.param(
        pod(
            containers=[container(restartPolicy="Always")],
            initContainers=[
                container(name="init", lifecycle={"preStop": EXEC}, livenessProbe=EXEC),
                container(
                    name="sidecar",
                    restartPolicy="Always",
                    livenessProbe={**EXEC, "successThreshold": 2},
                ),
                container(name="once", restartPolicy="OnFailure"),
                container(name="app", readinessProbe=EXEC),
            ],
        ),
        [
            (f"{C0}.restartPolicy", "Forbidden: may not be set for non-init containers"),
            ("spec.initContainers[0].lifecycle", INIT_ONLY),
            ("spec.initContainers[0].livenessProbe", INIT_ONLY),
            (
                "spec.initContainers[1].livenessProbe.successThreshold",
                "Invalid value: 2: must be 1",
            ),
            (
                "spec.initContainers[2].restartPolicy",
                'Unsupported value: "OnFailure": supported values: "Always"',
            ),
            ("spec.initContainers[3].name", 'Duplicate value: "app"'),
            ("spec.initContainers[3].readinessProbe", INIT_ONLY),
        ],
        id="init-containers-and-sidecars",
    ),
    pytest.param(
        pod(ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
        [("spec.ephemeralContainers", "Forbidden: cannot be set on create")],
        id="ephemeral-containers",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID_MORE)
def test_pod_spec_invalid_fields_are_refused_with_kubes_causes(
    store: Store, body: dict[str, Any], expected: list[Any]
) -> None:
    assert causes(store, "pods", body) == expected


def deployment(spec: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": LABELS}, "spec": spec}
    return {
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": LABELS}, "template": template},
    }


def test_pod_spec_template_causes_carry_the_template_prefix(store: Store) -> None:
    spec = {
        "containers": [container(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
        "tolerations": [{"key": "k", "operator": "In"}],
    }
    assert causes(store, "deployments", deployment(spec), "apps") == [
        (
            "spec.template.spec.containers[0].resources.requests",
            'Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            "spec.template.spec.ephemeralContainers",
            "Forbidden: ephemeral containers not allowed in pod template",
        ),
        (
            "spec.template.spec.tolerations[0].operator",
            'Unsupported value: "In": supported values: "Equal", "Exists"',
        ),
    ]


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        pytest.param("two", QUANTITY_FORMAT, id="not-a-number"),
        pytest.param("1Qi", QUANTITY_FORMAT, id="unknown-suffix-letters"),
        pytest.param("1e", "unable to parse quantity's suffix", id="bad-suffix"),
        pytest.param(True, QUANTITY_FORMAT, id="boolean"),
    ],
)
def test_pod_spec_quantity_that_does_not_parse_is_a_400(
    store: Store, amount: Any, message: str
) -> None:
    body = pod(containers=[container(resources={"limits": {"cpu": amount}})])
    with pytest.raises(APIError) as err:
        store.create(store.resource("pods"), body, "default")
    assert err.value.code == 400
    assert (
        err.value.status()["message"]
        == f'Pod in version "v1" cannot be handled as a Pod: {message}'
    )
    spec = {"containers": [container(resources={"requests": {"memory": amount}})]}
    with pytest.raises(APIError) as err:
        store.create(store.resource("deployments", "apps"), deployment(spec), "default")
    assert err.value.status()["message"] == (
        f'Deployment in version "v1" cannot be handled as a Deployment: {message}'
    )


def test_pod_spec_quantities_are_stored_in_kubes_canonical_form(store: Store) -> None:
    resources = {
        "limits": {"cpu": 0.5, "memory": "1.5Gi", "ephemeral-storage": "2000"},
        "requests": {"cpu": "250m", "memory": 1073741824, "ephemeral-storage": "1e3"},
    }
    created = store.create(
        store.resource("pods"), pod(containers=[container(resources=resources)]), "default"
    )
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "2k"},
        # (a number without a binary suffix stays decimal: kube writes 1073741824, not 1Gi)
        "requests": {"cpu": "250m", "memory": "1073741824", "ephemeral-storage": "1e3"},
    }
    assert created["status"]["qosClass"] == "Burstable"


def test_pod_spec_probes_and_http_checks_are_defaulted(store: Store) -> None:
    body = pod(
        containers=[
            container(
                livenessProbe={"httpGet": {"port": 80}},
                readinessProbe={**EXEC, "periodSeconds": 5},
                lifecycle={"preStop": {"httpGet": {"port": 80, "path": "/quit"}}},
            )
        ]
    )
    created = store.create(store.resource("pods"), body, "default")["spec"]["containers"][0]
    assert created["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert created["readinessProbe"]["periodSeconds"] == 5
    assert created["lifecycle"]["preStop"]["httpGet"] == {
        "port": 80,
        "path": "/quit",
        "scheme": "HTTP",
    }


def test_pod_spec_pods_request_their_limits_but_templates_do_not(store: Store) -> None:
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    created = store.create(
        store.resource("pods"), pod(containers=[container(resources=resources)]), "default"
    )
    assert created["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }
    only_limits = pod(containers=[container(resources={"limits": {"cpu": "1", "memory": "1Gi"}})])
    only_limits["metadata"]["name"] = "guaranteed"
    assert store.create(store.resource("pods"), only_limits, "default")["status"]["qosClass"] == (
        "Guaranteed"
    )
    spec = {"containers": [container(resources={"limits": {"cpu": "1"}})]}
    made = store.create(store.resource("deployments", "apps"), deployment(spec), "default")
    assert made["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1"}
    }


def test_pod_spec_volumes_field_refs_and_service_links_are_defaulted(store: Store) -> None:
    field_ref = {"fieldRef": {"fieldPath": "metadata.name"}}
    token = {"serviceAccountToken": {"path": "token"}}
    spec = {
        "volumes": [
            {"name": "conf", "configMap": {"name": "c"}},
            {"name": "keys", "secret": {"secretName": "s", "defaultMode": 0o400}},
            {"name": "host", "hostPath": {"path": "/var/log"}},
            {"name": "info", "downwardAPI": {"items": [{"path": "name", **field_ref}]}},
            {"name": "all", "projected": {"sources": [token]}},
        ],
        "containers": [container(env=[{"name": "POD", "valueFrom": field_ref}])],
    }
    created = store.create(store.resource("pods"), pod(**spec), "default")["spec"]
    assert created["volumes"] == [
        {"name": "conf", "configMap": {"name": "c", "defaultMode": 420}},
        {"name": "keys", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
        {
            "name": "info",
            "downwardAPI": {
                "items": [
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}
                ],
                "defaultMode": 420,
            },
        },
        {
            "name": "all",
            "projected": {
                "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}],
                "defaultMode": 420,
            },
        },
    ]
    assert created["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert created["enableServiceLinks"] is True
    made = store.create(store.resource("deployments", "apps"), deployment(spec), "default")
    template = made["spec"]["template"]["spec"]
    assert "enableServiceLinks" not in template  # (SetDefaults_Pod's, not a template's)
    assert template["volumes"][0]["configMap"]["defaultMode"] == 420


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("0.5", "500m"),
        ("1.1", "1100m"),
        ("100m", "100m"),
        ("2000", "2k"),
        ("1200", "1200"),
        ("1G", "1G"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),  # a binary amount under 1Ki is written decimal
        ("1536", "1536"),  # no suffix: decimal, however round in binary
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("0.0000000001", "1n"),  # finer than a nano rounds up
        ("-0.5", "-500m"),
        ("0", "0"),
    ],
)
def test_pod_spec_quantity_canonical_form_is_kubes(written: str, stored: str) -> None:
    assert canonical_quantity(written) == stored
