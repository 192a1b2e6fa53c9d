"""The kinds operators own through the official ``kubernetes`` client: each created, read
back with kube's defaults and reset status, listed, selected, and (where kube has them) its
status and scale subresources written."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

LABELS = {"app": "web"}


def template(restart: str = "Always") -> dict[str, object]:
    return {
        "metadata": {"labels": LABELS},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "app", "image": "nginx:1.25"}],
        },
    }


def test_statefulset_defaults_status_scale_and_generation(
    api: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    body = {
        "metadata": {"name": "db", "labels": {"app": "db", "sent": "status"}},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": LABELS},
            "template": template(),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
        "status": {"replicas": 9},
    }
    created = apps.create_namespaced_stateful_set(namespace, body)
    spec = created.spec
    assert (spec.replicas, spec.pod_management_policy, spec.revision_history_limit) == (
        1,
        "OrderedReady",
        10,
    )
    assert spec.update_strategy.type == "RollingUpdate"
    assert spec.update_strategy.rolling_update.partition == 0
    policy = spec.persistent_volume_claim_retention_policy
    assert (policy.when_deleted, policy.when_scaled) == ("Retain", "Retain")
    assert spec.volume_claim_templates[0].spec.volume_mode == "Filesystem"
    assert spec.template.spec.termination_grace_period_seconds == 30  # the pod defaults
    assert (created.status.replicas, created.status.available_replicas) == (0, 0)
    assert created.metadata.generation == 1

    scale = apps.patch_namespaced_stateful_set_scale("db", namespace, {"spec": {"replicas": 3}})
    assert scale.spec.replicas == 3 and scale.status.selector == "app=web"
    scaled = apps.read_namespaced_stateful_set("db", namespace)
    assert scaled.spec.replicas == 3 and scaled.metadata.generation == 2

    status = apps.patch_namespaced_stateful_set_status(
        "db", namespace, {"status": {"replicas": 3, "readyReplicas": 3}, "spec": {"replicas": 7}}
    )
    assert status.status.ready_replicas == 3 and status.spec.replicas == 3
    assert status.metadata.generation == 2


def test_daemonset_defaults_and_status(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_daemon_set(
        namespace,
        {
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": LABELS}, "template": template()},
        },
    )
    rolling = created.spec.update_strategy.rolling_update
    assert created.spec.update_strategy.type == "RollingUpdate"
    assert (rolling.max_unavailable, rolling.max_surge) == (1, 0)
    assert created.spec.revision_history_limit == 10
    status = created.status
    assert (
        status.current_number_scheduled,
        status.desired_number_scheduled,
        status.number_misscheduled,
        status.number_ready,
    ) == (0, 0, 0, 0)


def test_job_selector_is_generated_and_successful_is_selectable(
    api: client.ApiClient, namespace: str
) -> None:
    batch = client.BatchV1Api(api)
    created = batch.create_namespaced_job(
        namespace, {"metadata": {"name": "once"}, "spec": {"template": template("Never")}}
    )
    uid = created.metadata.uid
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert created.spec.template.metadata.labels["job-name"] == "once"
    assert (created.spec.completions, created.spec.parallelism, created.spec.backoff_limit) == (
        1,
        1,
        6,
    )
    assert created.spec.completion_mode == "NonIndexed" and created.spec.suspend is False
    none_yet = batch.list_namespaced_job(namespace, field_selector="status.successful=0")
    assert [j.metadata.name for j in none_yet.items] == ["once"]
    batch.patch_namespaced_job_status("once", namespace, {"status": {"succeeded": 1}})
    done = batch.list_namespaced_job(namespace, field_selector="status.successful=1")
    assert [j.metadata.name for j in done.items] == ["once"]
    with pytest.raises(ApiException) as err:
        batch.patch_namespaced_job("once", namespace, {"spec": {"parallelism": -1}})
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == (
        'Job.batch "once" is invalid: spec.parallelism: Invalid value: -1: must be greater than '
        "or equal to 0"
    )


def test_cronjob_defaults_and_bad_schedule(api: client.ApiClient, namespace: str) -> None:
    batch = client.BatchV1Api(api)
    job_template = {"spec": {"template": template("OnFailure")}}
    created = batch.create_namespaced_cron_job(
        namespace,
        {
            "metadata": {"name": "tick"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": job_template},
        },
    )
    spec = created.spec
    assert (spec.concurrency_policy, spec.suspend) == ("Allow", False)
    assert (spec.successful_jobs_history_limit, spec.failed_jobs_history_limit) == (3, 1)
    with pytest.raises(ApiException) as err:
        batch.patch_namespaced_cron_job("tick", namespace, {"spec": {"schedule": "* * *"}})
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == (
        'CronJob.batch "tick" is invalid: spec.schedule: Invalid value: "* * *": expected '
        "exactly 5 fields, found 3: [* * *]"
    )


def test_claim_stays_pending_and_quantities_are_decoded(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    created = core.create_namespaced_persistent_volume_claim(
        namespace, {"metadata": {"name": "data"}, "spec": spec}
    )
    assert created.status.phase == "Pending" and created.spec.volume_mode == "Filesystem"
    bad = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "lots"}}}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_persistent_volume_claim(
            namespace, {"metadata": {"name": "bad"}, "spec": bad}
        )
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == (
        'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: '
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_ingress_endpointslice_and_pdb_round_trip(api: client.ApiClient, namespace: str) -> None:
    networking = client.NetworkingV1Api(api)
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    ingress = networking.create_namespaced_ingress(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {
                "ingressClassName": "nginx",
                "rules": [
                    {
                        "host": "web.example.com",
                        "http": {
                            "paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]
                        },
                    }
                ],
            },
        },
    )
    assert ingress.spec.rules[0].http.paths[0].backend.service.port.number == 80
    assert ingress.metadata.generation == 1
    discovery = client.DiscoveryV1Api(api)
    sliced = discovery.create_namespaced_endpoint_slice(
        namespace,
        {
            "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}],
            "ports": [{"port": 8080}],
        },
    )
    assert (sliced.ports[0].name, sliced.ports[0].protocol) == ("", "TCP")
    listed = discovery.list_namespaced_endpoint_slice(
        namespace, label_selector="kubernetes.io/service-name=web"
    )
    assert [s.metadata.name for s in listed.items] == ["web-1"]
    policy = client.PolicyV1Api(api)
    pdb = policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": LABELS}},
        },
    )
    assert pdb.status.disruptions_allowed == 0 and pdb.status.expected_pods == 0
    autoscaling = client.AutoscalingV2Api(api)
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    hpa = autoscaling.create_namespaced_horizontal_pod_autoscaler(
        namespace, {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": ref, "maxReplicas": 3}}
    )
    assert hpa.spec.min_replicas == 1 and hpa.status.desired_replicas == 0
    assert hpa.spec.metrics[0].resource.target.average_utilization == 80
