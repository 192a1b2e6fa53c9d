"""Validation of the kinds operators own, case by case as kube's ``validation_test.go``
tables: each valid case is created, each invalid one is refused with exactly kube's causes
(field path and message), every cause at once."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.store import Store

LABELS = {"app": "web"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def template(restart: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.25"}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": dict(LABELS if labels is None else labels)}, "spec": spec}


def obj(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x"}, **fields}


def statefulset(**spec: Any) -> dict[str, Any]:
    base = {"selector": {"matchLabels": LABELS}, "serviceName": "web", "template": template()}
    return obj(spec={**base, **spec})


def daemonset(**spec: Any) -> dict[str, Any]:
    return obj(spec={"selector": {"matchLabels": LABELS}, "template": template(), **spec})


def job(**spec: Any) -> dict[str, Any]:
    return obj(spec={"template": template("Never"), **spec})


def cronjob(**spec: Any) -> dict[str, Any]:
    job_template = {"spec": {"template": template("OnFailure")}}
    return obj(spec={"schedule": "*/5 * * * *", "jobTemplate": job_template, **spec})


def claim(**spec: Any) -> dict[str, Any]:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return obj(spec={**base, **spec})


def ingress_path(**path: Any) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    return {"path": "/", "pathType": "Prefix", "backend": backend, **path}


def ingress(*paths: dict[str, Any], host: str = "example.com", **spec: Any) -> dict[str, Any]:
    rules = [{"host": host, "http": {"paths": list(paths) or [ingress_path()]}}]
    return obj(spec={"rules": rules, **spec})


def slice_(address_type: str = "IPv4", *addresses: str, **fields: Any) -> dict[str, Any]:
    endpoints = [{"addresses": list(addresses or ("10.0.0.1",))}]
    return obj(addressType=address_type, endpoints=endpoints, **fields)


RESOURCES = {
    "Secret": ("secrets", ""),
    "ConfigMap": ("configmaps", ""),
    "StatefulSet": ("statefulsets", "apps"),
    "DaemonSet": ("daemonsets", "apps"),
    "Job": ("jobs", "batch"),
    "CronJob": ("cronjobs", "batch"),
    "PersistentVolumeClaim": ("persistentvolumeclaims", ""),
    "Ingress": ("ingresses", "networking.k8s.io"),
    "EndpointSlice": ("endpointslices", "discovery.k8s.io"),
    "PodDisruptionBudget": ("poddisruptionbudgets", "policy"),
    "Service": ("services", ""),
    "HorizontalPodAutoscaler": ("horizontalpodautoscalers", "autoscaling"),
}


def create(store: Store, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    plural, group = RESOURCES[kind]
    return store.create(store.resource(plural, group), copy.deepcopy(body), "default")


def causes(store: Store, kind: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(APIError) as err:
        create(store, kind, body)
    assert err.value.code == 422, err.value.status()
    return [(c["field"], c["message"]) for c in err.value.status()["details"]["causes"]]


VALID = [
    pytest.param("Secret", obj(data={"a.b_C-1": b64("x")}), id="secret-opaque"),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")}),
        id="secret-tls",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": b64('{"auths":{}}')}),
        id="secret-dockerconfigjson",
    ),
    pytest.param("Secret", obj(type="kubernetes.io/basic-auth", data={"password": ""}), id="basic"),
    pytest.param(
        "Secret",
        {
            "metadata": {
                "name": "t",
                "annotations": {"kubernetes.io/service-account.name": "default"},
            },
            "type": "kubernetes.io/service-account-token",
        },
        id="secret-sa-token",
    ),
    pytest.param("Secret", obj(type="example.com/custom", data={"any": ""}), id="secret-custom"),
    pytest.param("StatefulSet", statefulset(), id="statefulset"),
    pytest.param(
        "StatefulSet",
        statefulset(podManagementPolicy="Parallel", updateStrategy={"type": "OnDelete"}),
        id="statefulset-parallel-ondelete",
    ),
    pytest.param("DaemonSet", daemonset(), id="daemonset"),
    pytest.param(
        "DaemonSet",
        daemonset(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0},
            }
        ),
        id="daemonset-surge",
    ),
    pytest.param("Job", job(), id="job"),
    pytest.param("Job", job(completionMode="Indexed", completions=3), id="job-indexed"),
    pytest.param(
        "Job",
        job(manualSelector=True, selector={"matchLabels": LABELS}),
        id="job-manual-selector",
    ),
    pytest.param("CronJob", cronjob(), id="cronjob"),
    pytest.param("CronJob", cronjob(schedule="@hourly"), id="cronjob-descriptor"),
    pytest.param("CronJob", cronjob(schedule="0 9 * jan-mar mon-fri"), id="cronjob-names"),
    pytest.param("PersistentVolumeClaim", claim(), id="pvc"),
    pytest.param(
        "PersistentVolumeClaim",
        claim(volumeMode="Block", storageClassName="fast.ssd"),
        id="pvc-block",
    ),
    pytest.param("Ingress", ingress(), id="ingress"),
    pytest.param("Ingress", ingress(host="*.example.com"), id="ingress-wildcard"),
    pytest.param(
        "Ingress",
        obj(spec={"defaultBackend": {"service": {"name": "web", "port": {"name": "http"}}}}),
        id="ingress-default-backend",
    ),
    pytest.param("EndpointSlice", slice_(), id="endpointslice"),
    pytest.param("EndpointSlice", slice_("FQDN", "db.example.com"), id="endpointslice-fqdn"),
    pytest.param("PodDisruptionBudget", obj(spec={"minAvailable": "50%"}), id="pdb"),
    pytest.param("Service", obj(spec={"ports": [{"port": 80}]}), id="service"),
    pytest.param(
        "HorizontalPodAutoscaler",
        obj(spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5}),
        id="hpa",
    ),
    pytest.param("Service", obj(spec={"clusterIP": "None"}), id="service-headless"),
    pytest.param(
        "Service",
        obj(spec={"type": "ExternalName", "externalName": "db.example.com"}),
        id="service-external-name",
    ),
    pytest.param(
        "Service",
        obj(
            spec={
                "type": "NodePort",
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            }
        ),
        id="service-node-port",
    ),
]


@pytest.mark.parametrize(("kind", "body"), VALID)
def test_kinds_valid_objects_are_created(store: Store, kind: str, body: dict[str, Any]) -> None:
    created = create(store, kind, body)
    assert created["kind"] == kind
    assert created["metadata"]["uid"]


CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
INVALID = [
    # ---------------------------------------------------------------- Secret
    pytest.param(
        "Secret",
        obj(data={"bad key": b64("x"), "..": b64("y")}),
        [
            ("data[bad key]", f'Invalid value: "bad key": {CONFIG_KEY}'),
            ("data[..]", "Invalid value: \"..\": must not be '..'"),
        ],
        id="secret-keys",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/tls", data={"tls.crt": b64("c")}),
        [("data[tls.key]", "Required value")],
        id="secret-tls-without-key",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/tls"),
        [("data[tls.crt]", "Required value"), ("data[tls.key]", "Required value")],
        id="secret-tls-empty",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/dockerconfigjson", data={"other": b64("{}")}),
        [("data[.dockerconfigjson]", "Required value")],
        id="secret-dockerconfigjson-missing",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": b64("{not json")}),
        [
            (
                "data[.dockerconfigjson]",
                "Invalid value: \"<secret contents redacted>\": invalid character 'n' looking "
                "for beginning of object key string",
            )
        ],
        id="secret-dockerconfigjson-not-json",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/dockercfg", data={".dockercfg": b64("[1]")}),
        [
            (
                "data[.dockercfg]",
                'Invalid value: "<secret contents redacted>": json: cannot unmarshal array '
                "into Go value of type map[string]interface {}",
            )
        ],
        id="secret-dockercfg-not-an-object",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/basic-auth", data={"user": b64("u")}),
        [("data[%s][username]", "Required value"), ("data[%s][password]", "Required value")],
        id="secret-basic-auth",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/ssh-auth"),
        [("data[%s][ssh-privatekey]", "Required value")],
        id="secret-ssh-auth",
    ),
    pytest.param(
        "Secret",
        obj(type="kubernetes.io/service-account-token"),
        [("metadata.annotations[kubernetes.io/service-account.name]", "Required value")],
        id="secret-sa-token-unnamed",
    ),
    pytest.param(
        "Secret",
        obj(data={"big": base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()}),
        [("data", "Too long: may not be more than 1048576 bytes")],
        id="secret-too-big",
    ),
    # ---------------------------------------------------------------- StatefulSet
    pytest.param(
        "StatefulSet",
        statefulset(
            podManagementPolicy="Sometimes",
            updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}},
            replicas=-1,
        ),
        [
            (
                "spec.podManagementPolicy",
                "Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
            ),
            (
                "spec.updateStrategy.rollingUpdate",
                "Invalid value: \"{'partition': 1}\": only allowed for updateStrategy "
                "'RollingUpdate'",
            ),
            ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ],
        id="statefulset-policies",
    ),
    pytest.param(
        "StatefulSet",
        statefulset(updateStrategy={"type": "Sometimes"}),
        [
            (
                "spec.updateStrategy",
                "Invalid value: \"Sometimes\": must be 'RollingUpdate' or 'OnDelete'",
            )
        ],
        id="statefulset-update-strategy",
    ),
    pytest.param(
        "StatefulSet",
        statefulset(selector={"matchLabels": {"app": "other"}}),
        [
            (
                "spec.template.metadata.labels",
                'Invalid value: "app=web": `selector` does not match template `labels`',
            )
        ],
        id="statefulset-selector-mismatch",
    ),
    pytest.param(
        "StatefulSet",
        statefulset(selector={}),
        [("spec.selector", 'Invalid value: "{}": empty selector is invalid for statefulset')],
        id="statefulset-empty-selector",
    ),
    pytest.param(
        "StatefulSet",
        statefulset(template=template("Never")),
        [
            (
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            )
        ],
        id="statefulset-restart-policy",
    ),
    # ---------------------------------------------------------------- DaemonSet
    pytest.param(
        "DaemonSet",
        daemonset(updateStrategy={"type": "Sometimes"}),
        [
            (
                "spec.updateStrategy",
                'Unsupported value: "Sometimes": supported values: "RollingUpdate", "OnDelete"',
            )
        ],
        id="daemonset-update-strategy",
    ),
    pytest.param(
        "DaemonSet",
        daemonset(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0},
            }
        ),
        [
            (
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
                "Invalid value: 0: may not be 0 when `maxSurge` is 0",
            )
        ],
        id="daemonset-both-zero",
    ),
    pytest.param(
        "DaemonSet",
        daemonset(selector=None),
        [("spec.selector", "Required value")],
        id="daemonset-no-selector",
    ),
    pytest.param(
        "DaemonSet",
        daemonset(
            template={**template(), "spec": {**template()["spec"], "activeDeadlineSeconds": 5}}
        ),
        [
            (
                "spec.template.spec.activeDeadlineSeconds",
                "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
            )
        ],
        id="daemonset-active-deadline",
    ),
    # ---------------------------------------------------------------- Job
    pytest.param(
        "Job",
        job(template=template()),
        [
            (
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Always": supported values: "OnFailure", "Never"',
            )
        ],
        id="job-restart-policy-defaulted-always",
    ),
    pytest.param(
        "Job",
        job(parallelism=-1, backoffLimit=-2, completionMode="Sometimes"),
        [
            ("spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
            ("spec.backoffLimit", "Invalid value: -2: must be greater than or equal to 0"),
            (
                "spec.completionMode",
                'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
            ),
        ],
        id="job-numbers-and-mode",
    ),
    pytest.param(
        "Job",
        job(completionMode="Indexed", parallelism=2),
        [("spec.completions", "Required value: when completion mode is Indexed")],
        id="job-indexed-without-completions",
    ),
    # ---------------------------------------------------------------- CronJob
    pytest.param(
        "CronJob",
        cronjob(schedule="every minute"),
        [
            (
                "spec.schedule",
                'Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]',
            )
        ],
        id="cronjob-schedule-fields",
    ),
    pytest.param(
        "CronJob",
        cronjob(schedule="61 * * * *"),
        [
            (
                "spec.schedule",
                'Invalid value: "61 * * * *": end of range (61) above maximum (59): 61',
            )
        ],
        id="cronjob-schedule-range",
    ),
    pytest.param(
        "CronJob",
        cronjob(schedule="TZ=UTC 0 * * * *"),
        [
            (
                "spec.schedule",
                'Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use '
                "timeZone field instead",
            )
        ],
        id="cronjob-tz-in-schedule",
    ),
    pytest.param(
        "CronJob",
        cronjob(concurrencyPolicy="Sometimes", successfulJobsHistoryLimit=-1),
        [
            (
                "spec.concurrencyPolicy",
                'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
            ),
            (
                "spec.successfulJobsHistoryLimit",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
        ],
        id="cronjob-policy-and-limit",
    ),
    pytest.param(
        "CronJob",
        cronjob(jobTemplate={"spec": {"template": template("OnFailure"), "selector": {}}}),
        [
            (
                "spec.jobTemplate.spec.selector",
                'Invalid value: "{}": `selector` will be auto-generated',
            )
        ],
        id="cronjob-template-selector",
    ),
    pytest.param(
        "CronJob",
        {**cronjob(), "metadata": {"name": "c" * 53}},
        [("metadata.name", f'Invalid value: "{"c" * 53}": must be no more than 52 characters')],
        id="cronjob-name-too-long",
    ),
    # ---------------------------------------------------------------- PersistentVolumeClaim
    pytest.param(
        "PersistentVolumeClaim",
        obj(spec={}),
        [
            ("spec.accessModes", "Required value: at least 1 access mode is required"),
            ("spec.resources[storage]", "Required value"),
        ],
        id="pvc-empty",
    ),
    pytest.param(
        "PersistentVolumeClaim",
        claim(accessModes=["ReadWriteSometimes"], volumeMode="Tape"),
        [
            (
                "spec.accessModes",
                'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
                '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
            ),
            (
                "spec.volumeMode",
                'Unsupported value: "Tape": supported values: "Block", "Filesystem"',
            ),
        ],
        id="pvc-modes",
    ),
    pytest.param(
        "PersistentVolumeClaim",
        claim(resources={"requests": {"storage": "0"}}),
        [("spec.resources[storage]", 'Invalid value: "0": must be greater than zero')],
        id="pvc-zero-storage",
    ),
    # ---------------------------------------------------------------- Ingress
    pytest.param(
        "Ingress",
        obj(spec={}),
        [
            (
                "spec",
                'Invalid value: "[]networking.IngressRule(nil)": either `defaultBackend` or '
                "`rules` must be specified",
            )
        ],
        id="ingress-empty",
    ),
    pytest.param(
        "Ingress",
        ingress(host="10.0.0.1"),
        [
            (
                "spec.rules[0].host",
                'Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
            )
        ],
        id="ingress-ip-host",
    ),
    pytest.param(
        "Ingress",
        ingress(
            ingress_path(pathType=None),
            ingress_path(path="api", pathType="Exact"),
            ingress_path(pathType="Regex"),
        ),
        [
            ("spec.rules[0].http.paths[0].pathType", "Required value: pathType must be specified"),
            ("spec.rules[0].http.paths[1].path", 'Invalid value: "api": must be an absolute path'),
            (
                "spec.rules[0].http.paths[2].pathType",
                'Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", '
                '"Prefix"',
            ),
        ],
        id="ingress-paths",
    ),
    pytest.param(
        "Ingress",
        ingress(
            ingress_path(backend={"service": {"name": "Web", "port": {"number": 80}}}),
            ingress_path(backend={"service": {"name": "web", "port": {}}}),
            ingress_path(backend={}),
        ),
        [
            (
                "spec.rules[0].http.paths[0].backend.service.name",
                f'Invalid value: "Web": {DNS1035}',
            ),
            (
                "spec.rules[0].http.paths[1].backend",
                "Required value: port name or number is required",
            ),
            (
                "spec.rules[0].http.paths[2].backend",
                'Invalid value: "": resource or service backend is required',
            ),
        ],
        id="ingress-backends",
    ),
    # ---------------------------------------------------------------- EndpointSlice
    pytest.param(
        "EndpointSlice",
        slice_("IPv5"),
        [
            (
                "addressType",
                'Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"',
            )
        ],
        id="endpointslice-address-type",
    ),
    pytest.param(
        "EndpointSlice",
        slice_("IPv4", "10.0.0.300", "127.0.0.1", "::1"),
        [
            (
                "endpoints[0].addresses[0]",
                'Invalid value: "10.0.0.300": must be a valid IPv4 address',
            ),
            (
                "endpoints[0].addresses[1]",
                'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, '
                "::1/128)",
            ),
            ("endpoints[0].addresses[2]", 'Invalid value: "::1": must be a valid IPv4 address'),
        ],
        id="endpointslice-addresses",
    ),
    pytest.param(
        "EndpointSlice",
        slice_(ports=[{"name": "http", "port": 80}, {"name": "http", "protocol": "ICMP"}]),
        [
            ("ports[1].name", 'Duplicate value: "http"'),
            (
                "ports[1].protocol",
                'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            ),
        ],
        id="endpointslice-ports",
    ),
    pytest.param(
        "EndpointSlice",
        obj(addressType="IPv4", endpoints=[{"addresses": []}]),
        [("endpoints[0].addresses", "Required value: must contain at least 1 address")],
        id="endpointslice-no-address",
    ),
    # ---------------------------------------------------------------- Service
    pytest.param(
        "Service",
        obj(spec={"type": "Magic"}),
        [
            (
                "spec.type",
                'Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
                '"LoadBalancer", "NodePort"',
            ),
            ("spec.ports", "Required value"),
        ],
        id="service-type",
    ),
    pytest.param(
        "Service",
        obj(spec={"ports": [{"port": 80}, {"name": "b", "port": 0, "protocol": "ICMP"}]}),
        [
            ("spec.ports[0].name", "Required value"),
            ("spec.ports[1].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
            (
                "spec.ports[1].protocol",
                'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            ),
            # (defaulted from the port, as kube defaults it, then refused as kube refuses it)
            (
                "spec.ports[1].targetPort",
                "Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
        ],
        id="service-ports",
    ),
    pytest.param(
        "Service",
        {"metadata": {"name": "9lives"}, "spec": {"type": "ExternalName"}},
        [
            ("metadata.name", f'Invalid value: "9lives": {DNS1035}'),
            ("spec.externalName", "Required value"),
        ],
        id="service-name-and-external-name",
    ),
    # ---------------------------------------------------------------- HorizontalPodAutoscaler
    pytest.param(
        "HorizontalPodAutoscaler",
        obj(spec={"scaleTargetRef": {}, "minReplicas": 3, "maxReplicas": 2}),
        [
            ("spec.scaleTargetRef.kind", "Required value"),
            ("spec.scaleTargetRef.name", "Required value"),
            (
                "spec.maxReplicas",
                "Invalid value: 2: must be greater than or equal to `minReplicas`",
            ),
        ],
        id="hpa-target-and-bounds",
    ),
    pytest.param(
        "HorizontalPodAutoscaler",
        obj(
            spec={
                "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 0,
                "maxReplicas": 0,
                "metrics": [{"type": "Vibes"}],
            }
        ),
        [
            ("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
            ("spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
            (
                "spec.metrics[0].type",
                'Unsupported value: "Vibes": supported values: "ContainerResource", "External", '
                '"Object", "Pods", "Resource"',
            ),
        ],
        id="hpa-zero-and-metric-type",
    ),
    # ---------------------------------------------------------------- PodDisruptionBudget
    pytest.param(
        "PodDisruptionBudget",
        obj(spec={"minAvailable": 1, "maxUnavailable": "150%"}),
        [
            (
                "spec",
                "Invalid value: \"{'minAvailable': 1, 'maxUnavailable': '150%'}\": minAvailable "
                "and maxUnavailable cannot be both set",
            ),
            ("spec.maxUnavailable", 'Invalid value: "150%": must not be greater than 100%'),
        ],
        id="pdb-both",
    ),
]


@pytest.mark.parametrize(("kind", "body", "expected"), INVALID)
def test_kinds_invalid_objects_are_refused_with_kubes_causes(
    store: Store, kind: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert causes(store, kind, body) == expected


def test_kinds_job_selector_set_without_manual_selector_is_not_auto_generated(
    store: Store,
) -> None:
    # kube adds the uid to the client's selector before it judges it: the message shows both.
    found = causes(store, "Job", job(selector={"matchLabels": LABELS}))
    assert [field for field, _ in found] == ["spec.selector"]
    assert found[0][1].startswith("Invalid value: \"{'matchLabels': {'app': 'web', ")
    assert found[0][1].endswith('}}": `selector` not auto-generated')


def test_kinds_job_selector_is_generated_from_the_uid(store: Store) -> None:
    created = create(store, "Job", job())
    uid, spec = created["metadata"]["uid"], created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        **LABELS,
        "batch.kubernetes.io/job-name": "x",
        "job-name": "x",
        "batch.kubernetes.io/controller-uid": uid,
        "controller-uid": uid,
    }
    assert created["metadata"]["labels"] == LABELS  # the template's, as the Job had none
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert created["status"] == {}


def _update_causes(
    store: Store, kind: str, body: dict[str, Any], change: Any
) -> list[tuple[str, str]]:
    plural, group = RESOURCES[kind]
    res = store.resource(plural, group)
    created = create(store, kind, body)
    change(created)
    with pytest.raises(APIError) as err:
        store.update(res, created)
    assert err.value.code == 422
    return [(c["field"], c["message"]) for c in err.value.status()["details"]["causes"]]


IMMUTABLE = "field is immutable when `immutable` is set"
UPDATES = [
    pytest.param(
        "Secret",
        obj(data={"a": b64("1")}, immutable=True),
        lambda o: o.update(data={"a": b64("2")}),
        [("data", f"Forbidden: {IMMUTABLE}")],
        id="secret-immutable-data",
    ),
    pytest.param(
        "Secret",
        obj(data={"a": b64("1")}, immutable=True),
        lambda o: o.update(immutable=False),
        [("immutable", f"Forbidden: {IMMUTABLE}")],
        id="secret-immutable-flag",
    ),
    pytest.param(
        "Secret",
        obj(data={"a": b64("1")}),
        lambda o: o.update(type="kubernetes.io/basic-auth", data={"username": b64("u")}),
        [("type", 'Invalid value: "kubernetes.io/basic-auth": field is immutable')],
        id="secret-type",
    ),
    pytest.param(
        "ConfigMap",
        obj(data={"a": "1"}, immutable=True),
        lambda o: o.update(data={"a": "2"}),
        [("data", f"Forbidden: {IMMUTABLE}")],
        id="configmap-immutable-data",
    ),
    pytest.param(
        "StatefulSet",
        statefulset(),
        lambda o: o["spec"].update(serviceName="other"),
        [
            (
                "spec",
                "Forbidden: updates to statefulset spec for fields other than 'replicas', "
                "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
                "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            )
        ],
        id="statefulset-service-name",
    ),
    pytest.param(
        "DaemonSet",
        daemonset(),
        lambda o: o["spec"].update(
            selector={"matchLabels": {**LABELS, "tier": "a"}},
            template=template(labels={**LABELS, "tier": "a"}),
        ),
        [
            (
                "spec.selector",
                "Invalid value: \"{'matchLabels': {'app': 'web', 'tier': 'a'}}\": field is "
                "immutable",
            )
        ],
        id="daemonset-selector",
    ),
    pytest.param(
        "Job",
        job(),
        lambda o: o["spec"].update(completions=5),
        [("spec.completions", "Invalid value: 5: field is immutable")],
        id="job-completions",
    ),
    pytest.param(
        "PersistentVolumeClaim",
        claim(),
        lambda o: o["spec"].update(resources={"requests": {"storage": "2Gi"}}),
        [
            (
                "spec",
                "Forbidden: spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        ],
        id="pvc-unbound-resize",
    ),
    pytest.param(
        "Service",
        obj(spec={"ports": [{"port": 80}]}),
        lambda o: o["spec"].update(clusterIP="10.96.0.99", clusterIPs=["10.96.0.99"]),
        [("spec.clusterIPs[0]", "Invalid value: \"['10.96.0.99']\": may not change once set")],
        id="service-cluster-ip",
    ),
    pytest.param(
        "EndpointSlice",
        slice_(),
        lambda o: o.update(addressType="IPv6", endpoints=[{"addresses": ["fd00::1"]}]),
        [("addressType", 'Invalid value: "IPv6": field is immutable')],
        id="endpointslice-address-type",
    ),
]


@pytest.mark.parametrize(("kind", "body", "change", "expected"), UPDATES)
def test_kinds_invalid_updates_are_refused_with_kubes_causes(
    store: Store, kind: str, body: dict[str, Any], change: Any, expected: list[tuple[str, str]]
) -> None:
    assert _update_causes(store, kind, body, change) == expected


def test_kinds_service_allocations_are_defaulted_and_kept_on_update(store: Store) -> None:
    body = obj(spec={"type": "NodePort", "selector": LABELS, "ports": [{"port": 80}]})
    created = create(store, "Service", body)
    spec = created["spec"]
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["clusterIP"].startswith("10.") and spec["clusterIP"] != "10.96.0.0"
    port = spec["ports"][0]
    assert (port["protocol"], port["targetPort"]) == ("TCP", 80)
    assert 30000 <= port["nodePort"] <= 32767
    assert (spec["sessionAffinity"], spec["externalTrafficPolicy"]) == ("None", "Cluster")
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert created["status"] == {"loadBalancer": {}}
    # A PUT without the allocations (as a client that never read them sends) keeps them.
    sent = copy.deepcopy(created)
    for key in ("clusterIP", "clusterIPs"):
        del sent["spec"][key]
    del sent["spec"]["ports"][0]["nodePort"]
    sent["spec"]["selector"] = {"app": "other"}
    updated = store.update(store.resource("services"), sent)
    assert updated["spec"]["clusterIP"] == spec["clusterIP"]
    assert updated["spec"]["ports"][0]["nodePort"] == port["nodePort"]
    assert updated["spec"]["selector"] == {"app": "other"}


def test_kinds_hpa_defaults_cpu_at_80_percent(store: Store) -> None:
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    created = create(
        store, "HorizontalPodAutoscaler", obj(spec={"scaleTargetRef": ref, "maxReplicas": 4})
    )
    assert created["spec"]["minReplicas"] == 1
    assert created["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80},
            },
        }
    ]
    assert created["status"] == {"desiredReplicas": 0}
