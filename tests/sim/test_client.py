"""The emulator through the official ``kubernetes`` client (a ``pycm sim`` process)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.sim.conftest import deployment, pod, replicaset, start_sim, stop_sim


def test_fresh_cluster_has_namespaces_and_ready_nodes(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == ["sim-node-0", "sim-node-1"]
    for node in nodes:
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready[0].status == "True"


def test_pod_crud_round_trip(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_pod(namespace, pod("web", {"app": "web"}))
    assert created.metadata.uid
    assert created.metadata.namespace == namespace
    assert int(created.metadata.resource_version) > 0
    assert isinstance(created.metadata.creation_timestamp, dt.datetime)
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"  # defaulted
    got = core.read_namespaced_pod("web", namespace)
    assert got.metadata.uid == created.metadata.uid
    got.metadata.labels["tier"] = "front"
    updated = core.replace_namespaced_pod("web", namespace, got)
    assert updated.metadata.labels == {"app": "web", "tier": "front"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    core.delete_namespaced_pod("web", namespace)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("web", namespace)
    assert err.value.status == 404


def test_configmap_event_lease_crud(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}
    )
    assert cm.data == {"a": "1"}
    core.patch_namespaced_config_map("cfg", namespace, {"data": {"b": "2"}})
    assert core.read_namespaced_config_map("cfg", namespace).data == {"a": "1", "b": "2"}
    core.delete_namespaced_config_map("cfg", namespace)
    assert core.list_namespaced_config_map(namespace).items == []

    event = core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "ev1"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": namespace},
            "reason": "Started",
            "message": "started",
            "type": "Normal",
        },
    )
    assert event.reason == "Started"
    listed = core.list_namespaced_event(namespace, field_selector="involvedObject.name=web")
    assert [e.metadata.name for e in listed.items] == ["ev1"]
    assert core.list_namespaced_event(namespace, field_selector="reason=Other").items == []

    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease(
        namespace,
        {
            "metadata": {"name": "leader"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
        },
    )
    lease.spec.holder_identity = "b"
    renewed = coord.replace_namespaced_lease("leader", namespace, lease)
    assert renewed.spec.holder_identity == "b"
    coord.delete_namespaced_lease("leader", namespace)
    assert coord.list_namespaced_lease(namespace).items == []


def test_stale_resource_version_update_conflicts(api: client.ApiClient, namespace: str) -> None:
    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease(namespace, {"metadata": {"name": "l"}, "spec": {}})
    lease.spec.holder_identity = "first"
    coord.replace_namespaced_lease("l", namespace, lease)  # lease's rv is now stale
    lease.spec.holder_identity = "second"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("l", namespace, lease)
    assert err.value.status == 409
    assert "the object has been modified" in err.value.body
    # An empty resourceVersion is an unconditional update.
    lease.metadata.resource_version = None
    assert coord.replace_namespaced_lease("l", namespace, lease).spec.holder_identity == "second"


def test_create_twice_is_already_exists(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
    assert err.value.status == 409
    assert '"reason":"AlreadyExists"' in err.value.body.replace(" ", "")


def test_deployment_generation_bumps_on_spec_change_only(
    api: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_deployment(namespace, deployment("d"))
    assert created.metadata.generation == 1
    assert created.spec.strategy.type == "RollingUpdate"
    labelled = apps.patch_namespaced_deployment(
        "d", namespace, {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("d", namespace, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2


def test_status_subresource_semantics(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment("d"))
    status = apps.patch_namespaced_deployment_status(
        "d", namespace, {"status": {"replicas": 1, "observedGeneration": 1}}
    )
    assert status.status.replicas == 1
    assert status.metadata.generation == 1  # a status write is not a spec change
    # PUT to the main resource ignores status changes...
    current = apps.read_namespaced_deployment("d", namespace)
    current.status.replicas = 99
    current.spec.replicas = 2
    replaced = apps.replace_namespaced_deployment("d", namespace, current)
    assert replaced.status.replicas == 1
    assert replaced.spec.replicas == 2
    # ...and PUT /status changes only the status.
    replaced.spec.replicas = 7
    replaced.status.replicas = 5
    after = apps.replace_namespaced_deployment_status("d", namespace, replaced)
    assert after.status.replicas == 5
    assert after.spec.replicas == 2


def test_scale_subresource(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_replica_set(namespace, replicaset("rs", 2))
    scale = apps.read_namespaced_replica_set_scale("rs", namespace)
    assert scale.spec.replicas == 2
    assert scale.status.selector == "app=rs"
    apps.patch_namespaced_replica_set_scale("rs", namespace, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_replica_set("rs", namespace).spec.replicas == 4
    apps.create_namespaced_deployment(namespace, deployment("d"))
    scale = apps.read_namespaced_deployment_scale("d", namespace)
    scale.spec.replicas = 0
    apps.replace_namespaced_deployment_scale("d", namespace, scale)
    assert apps.read_namespaced_deployment("d", namespace).spec.replicas == 0


def test_validation_errors_are_422_with_causes(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    bad = deployment("Bad_Name")
    bad["spec"]["replicas"] = -1
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_deployment(namespace, bad)
    assert err.value.status == 422
    body = json.loads(err.value.body)
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"metadata.name", "spec.replicas", "spec.template.metadata.labels"} <= fields
    assert body["reason"] == "Invalid"


def test_selector_is_immutable(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment(namespace, deployment("d"))
    patch = {
        "spec": {
            "selector": {"matchLabels": {"app": "d", "v": "2"}},
            "template": {"metadata": {"labels": {"app": "d", "v": "2"}}},
        }
    }
    with pytest.raises(ApiException) as err:
        apps.patch_namespaced_deployment("d", namespace, patch)
    assert err.value.status == 422
    assert "field is immutable" in err.value.body


def test_strategic_merge_patch_merges_containers_by_name(
    api: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    body = deployment("d")
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    apps.create_namespaced_deployment(namespace, body)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}
    # The python client sends a dict patch as strategic merge for these kinds.
    patched = apps.patch_namespaced_deployment("d", namespace, patch)
    images = {c.name: c.image for c in patched.spec.template.spec.containers}
    assert images == {"app": "nginx:2", "side": "busybox"}
    assert patched.metadata.generation == 2


def test_label_and_field_selectors(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(
        namespace, pod("a", {"app": "web", "tier": "front"}, nodeName="sim-node-0")
    )
    core.create_namespaced_pod(namespace, pod("b", {"app": "web", "tier": "back"}))
    core.create_namespaced_pod(namespace, pod("c", {"app": "db"}))

    def names(**kw: str) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod(namespace, **kw).items]

    assert names(label_selector="app=web") == ["a", "b"]
    assert names(label_selector="app==web,tier!=front") == ["b"]
    assert names(label_selector="tier in (front,back)") == ["a", "b"]
    assert names(label_selector="tier notin (front)") == ["b", "c"]
    assert names(label_selector="tier") == ["a", "b"]
    assert names(label_selector="!tier") == ["c"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="spec.nodeName=sim-node-0") == ["a"]
    assert names(field_selector="spec.nodeName!=sim-node-0,status.phase=Pending") == ["b", "c"]
    cluster_wide = core.list_pod_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace}"
    )
    assert [p.metadata.name for p in cluster_wide.items] == ["a", "b", "c"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod(namespace, field_selector="spec.bogus=1")
    assert err.value.status == 400


def test_pagination_with_limit_and_continue(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    first = core.list_namespaced_config_map(namespace, limit=2)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1"]
    assert first.metadata._continue
    assert first.metadata.remaining_item_count == 3
    second = core.list_namespaced_config_map(namespace, limit=2, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["cm-2", "cm-3"]
    third = core.list_namespaced_config_map(namespace, limit=2, _continue=second.metadata._continue)
    assert [c.metadata.name for c in third.items] == ["cm-4"]
    assert not third.metadata._continue


def test_deletecollection_by_label(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name, "labels": {"app": app}}}
        )
    core.delete_collection_namespaced_config_map(namespace, label_selector="app=x")
    left = core.list_namespaced_config_map(namespace).items
    assert [c.metadata.name for c in left] == ["c"]


def test_watch_from_resource_version(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    listed = core.list_namespaced_config_map(namespace)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "w"}})
    core.patch_namespaced_config_map("w", namespace, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("w", namespace)
    w = watch.Watch()
    seen = []
    for event in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=5,
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_cascading_background_deletion(api: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    rs = apps.create_namespaced_replica_set(namespace, replicaset("rs"))
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": rs.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    child = pod("rs-1", {"app": "rs"})
    child["metadata"]["ownerReferences"] = [owner]
    core.create_namespaced_pod(namespace, child)
    apps.delete_namespaced_replica_set("rs", namespace, propagation_policy="Background")
    assert core.list_namespaced_pod(namespace).items == []


def test_cascading_orphan_deletion(api: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    rs = apps.create_namespaced_replica_set(namespace, replicaset("rs"))
    child = pod("rs-1", {"app": "rs"})
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": rs.metadata.uid}
    ]
    core.create_namespaced_pod(namespace, child)
    apps.delete_namespaced_replica_set("rs", namespace, propagation_policy="Orphan")
    left = core.read_namespaced_pod("rs-1", namespace)
    assert left.metadata.owner_references is None


def test_token_review_and_subject_access_review(api: client.ApiClient) -> None:
    authn = client.AuthenticationV1Api(api)
    review = authn.create_token_review({"spec": {"token": "alice-token"}})
    assert review.status.authenticated is True
    assert review.status.user.username == "alice"
    assert review.status.user.uid == "u-alice"
    assert set(review.status.user.groups) == {"devs", "readers", "system:authenticated"}
    assert authn.create_token_review({"spec": {"token": "nope"}}).status.authenticated is False

    authz = client.AuthorizationV1Api(api)
    attrs = {"verb": "get", "resource": "pods", "namespace": "default"}
    masters = authz.create_subject_access_review(
        {"spec": {"user": "root", "groups": ["system:masters"], "resourceAttributes": attrs}}
    )
    assert masters.status.allowed is True
    # No policy file: only system:masters is allowed.
    alice = authz.create_subject_access_review(
        {"spec": {"user": "alice", "groups": ["devs"], "resourceAttributes": attrs}}
    )
    assert alice.status.allowed is False


def test_watch_too_old_version_raises_410_through_the_client(tmp_path: Path) -> None:
    sim = start_sim(["--tls=false", "--kubelet=off", "--watch-window", "3"], tmp_path)
    api = config.new_client_from_config(config_file=str(sim.kubeconfig))
    try:
        core = client.CoreV1Api(api)
        rv = core.list_namespaced_config_map("default").metadata.resource_version
        for i in range(5):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
            ):
                pass
        assert err.value.status == 410
    finally:
        api.close()
        assert stop_sim(sim) == 0


def test_watch_bookmarks_and_generate_name_through_the_client(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    made = core.create_namespaced_pod(
        namespace, {"metadata": {"generateName": "gen-"}, "spec": pod("x")["spec"]}
    )
    assert made.metadata.name.startswith("gen-") and len(made.metadata.name) == 9
    # A watch that allows bookmarks still delivers normal events in order.
    w = watch.Watch()
    types = []
    for event in w.stream(
        core.list_namespaced_pod, namespace, allow_watch_bookmarks=True, timeout_seconds=5
    ):
        types.append(event["type"])
        w.stop()
    assert types == ["ADDED"]
