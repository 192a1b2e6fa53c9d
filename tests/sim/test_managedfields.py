"""metadata.managedFields as kube-apiserver records them for create, update and patch.

Over HTTP (httpx against an in-process emulator, the official client against a process), plus
the set algebra and the time rule in process with a fake clock.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from kubernetes import client

from pycm.sim import fieldcompare, fieldset, managedfields
from pycm.sim.objects import rfc3339
from pycm.sim.seed import seed_cluster
from pycm.sim.server import Emulator
from pycm.sim.store import Store
from pycm.util.clock import FakeClock
from tests.sim.conftest import deployment

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
KUBECTL_UA = "kubectl-create/v1.30.0 (linux/amd64) kubernetes/7c48c2b"

MERGE = {"Content-Type": "application/merge-patch+json"}
DEPLOYMENT_CREATE_FIELDS: dict[str, Any] = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:progressDeadlineSeconds": {},
        "f:replicas": {},
        "f:revisionHistoryLimit": {},
        "f:selector": {},
        "f:strategy": {
            "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
            "f:type": {},
        },
        "f:template": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {
                        ".": {},
                        "f:image": {},
                        "f:imagePullPolicy": {},
                        "f:name": {},
                        "f:resources": {},
                        "f:terminationMessagePath": {},
                        "f:terminationMessagePolicy": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            },
        },
    },
}


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = obj["metadata"].get("managedFields", [])
    return found


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """(manager, subresource) -> fieldsV1."""
    return {(e["manager"], e.get("subresource", "")): e["fieldsV1"] for e in entries(obj)}


# ---------------------------------------------------------------- over HTTP


@pytest.mark.asyncio
async def test_managedfields_create_with_field_manager_owns_every_field_of_the_body(
    http: httpx.AsyncClient,
) -> None:
    r = await http.post(f"{NS}/configmaps?fieldManager=x", json=configmap("a", app="web"))
    assert r.status_code == 201, r.text
    created = r.json()
    assert entries(created) == [
        {
            "manager": "x",
            "operation": "Update",
            "apiVersion": "v1",
            "time": created["metadata"]["creationTimestamp"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {".": {}, "f:k": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            },
        }
    ]
    assert (await http.get(f"{NS}/configmaps/a")).json() == created


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        pytest.param(KUBECTL_UA, "kubectl-create", id="kubectl"),
        pytest.param(
            "kubectl-client-side-apply/v1.30.0 (linux/amd64)", "kubectl-client-side-apply", id="csa"
        ),
        pytest.param("python-requests/2.31.0", "python-requests", id="requests"),
        pytest.param("no-slash", "no-slash", id="no-version"),
        pytest.param("", "unknown", id="empty"),
        pytest.param("a" * 200 + "/1", "a" * 128, id="truncated-to-128-bytes"),
    ],
)
async def test_managedfields_manager_is_the_user_agents_product(
    http: httpx.AsyncClient, user_agent: str, manager: str
) -> None:
    r = await http.post(
        f"{NS}/configmaps", json=configmap("ua"), headers={"User-Agent": user_agent}
    )
    assert r.status_code == 201, r.text
    assert [e["manager"] for e in entries(r.json())] == [manager]


@pytest.mark.asyncio
async def test_managedfields_field_manager_wins_over_the_user_agent(
    http: httpx.AsyncClient,
) -> None:
    r = await http.post(
        f"{NS}/configmaps?fieldManager=mine",
        json=configmap("fm"),
        headers={"User-Agent": KUBECTL_UA},
    )
    assert [e["manager"] for e in entries(r.json())] == ["mine"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "path", "options", "manager", "cause"),
    [
        pytest.param(
            "POST",
            f"{NS}/configmaps",
            "CreateOptions",
            "m" * 129,
            {
                "reason": "FieldValueTooLong",
                "message": "Too long: may not be more than 128 bytes",
                "field": "fieldManager",
            },
            id="create-too-long",
        ),
        pytest.param(
            "PATCH",
            f"{NS}/configmaps/bad",
            "PatchOptions",
            "a\tb",
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "a\tb": invalid character U+0009 (at position 1)',
                "field": "fieldManager",
            },
            id="patch-unprintable",
        ),
        pytest.param(
            "PUT",
            f"{NS}/configmaps/bad",
            "UpdateOptions",
            "m" * 129,
            {
                "reason": "FieldValueTooLong",
                "message": "Too long: may not be more than 128 bytes",
                "field": "fieldManager",
            },
            id="update-too-long",
        ),
    ],
)
async def test_managedfields_invalid_field_manager_is_422(
    http: httpx.AsyncClient,
    method: str,
    path: str,
    options: str,
    manager: str,
    cause: dict[str, str],
) -> None:
    assert (await http.post(f"{NS}/configmaps", json=configmap("bad"))).status_code == 201
    body: Any = {"data": {"k": "w"}} if method == "PATCH" else configmap("bad")
    headers = MERGE if method == "PATCH" else {}
    r = await http.request(
        method, path, params={"fieldManager": manager}, json=body, headers=headers
    )
    assert r.status_code == 422, r.text
    status = r.json()
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == options
    assert status["details"]["group"] == "meta.k8s.io"
    assert status["details"]["causes"] == [cause]
    assert status["message"].startswith(f'{options}.meta.k8s.io "" is invalid: fieldManager: ')


@pytest.mark.asyncio
async def test_managedfields_update_moves_changed_fields_to_the_new_manager(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("own", app="web"))
    current = (await http.get(f"{NS}/configmaps/own")).json()
    current["metadata"]["labels"] = {"app": "web2", "tier": "db"}
    r = await http.put(f"{NS}/configmaps/own?fieldManager=b", json=current)
    assert r.status_code == 200, r.text
    assert owners(r.json()) == {
        # a keeps the labels map itself and the data; app moved to b
        ("a", ""): {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {}}},
        ("b", ""): {"f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}},
    }
    # removing a field drops it from every entry; an entry left empty goes
    current = r.json()
    current["metadata"]["labels"] = {}
    current["data"] = {"k": "v"}
    r = await http.put(f"{NS}/configmaps/own?fieldManager=c", json=current)
    assert owners(r.json()) == {("a", ""): {"f:data": {".": {}, "f:k": {}}}}


@pytest.mark.asyncio
async def test_managedfields_patches_of_each_type_record_what_they_changed(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("p", app="web"))
    await http.patch(
        f"{NS}/configmaps/p?fieldManager=merge", json={"data": {"m": "1"}}, headers=MERGE
    )
    await http.patch(
        f"{NS}/configmaps/p?fieldManager=smp",
        json={"metadata": {"annotations": {"n": "1"}}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    r = await http.patch(
        f"{NS}/configmaps/p?fieldManager=json",
        json=[{"op": "replace", "path": "/data/k", "value": "w"}],
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert owners(r.json()) == {
        ("a", ""): {"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        ("merge", ""): {"f:data": {"f:m": {}}},
        ("smp", ""): {"f:metadata": {"f:annotations": {".": {}, "f:n": {}}}},
        ("json", ""): {"f:data": {"f:k": {}}},
    }


@pytest.mark.asyncio
async def test_managedfields_a_second_write_by_the_same_manager_merges_into_its_entry(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("m"))
    r = await http.patch(
        f"{NS}/configmaps/m?fieldManager=a", json={"data": {"j": "2"}}, headers=MERGE
    )
    assert owners(r.json()) == {("a", ""): {"f:data": {".": {}, "f:j": {}, "f:k": {}}}}
    # a write that changes nothing changes no entry (and no resourceVersion)
    same = await http.patch(
        f"{NS}/configmaps/m?fieldManager=other", json={"data": {"j": "2"}}, headers=MERGE
    )
    assert same.json() == r.json()


@pytest.mark.asyncio
async def test_managedfields_scale_subresource_entry_owns_spec_replicas(
    http: httpx.AsyncClient,
) -> None:
    r = await http.post(
        f"{APPS}/deployments", json=deployment("web"), headers={"User-Agent": KUBECTL_UA}
    )
    assert owners(r.json()) == {("kubectl-create", ""): DEPLOYMENT_CREATE_FIELDS}
    r = await http.patch(
        f"{APPS}/deployments/web/scale",
        json={"spec": {"replicas": 3}},
        headers={**MERGE, "User-Agent": "kubectl-scale/v1.30.0 (linux/amd64) kubernetes/x"},
    )
    assert r.status_code == 200, r.text
    got = (await http.get(f"{APPS}/deployments/web")).json()
    scale = [e for e in entries(got) if e["manager"] == "kubectl-scale"]
    assert scale == [
        {
            "manager": "kubectl-scale",
            "operation": "Update",
            "apiVersion": "apps/v1",  # the main resource's, not autoscaling/v1
            "time": scale[0]["time"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale",
        }
    ]
    assert "f:replicas" not in owners(got)[("kubectl-create", "")]["f:spec"]


@pytest.mark.asyncio
async def test_managedfields_status_subresource_writes_own_only_status(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{APPS}/deployments?fieldManager=creator", json=deployment("st"))
    current = (await http.get(f"{APPS}/deployments/st")).json()
    current["status"] = {"replicas": 1, "readyReplicas": 1}
    current["spec"]["replicas"] = 7  # ignored by a status write
    r = await http.put(f"{APPS}/deployments/st/status?fieldManager=ctrl", json=current)
    assert r.status_code == 200, r.text
    got = owners(r.json())
    assert got[("ctrl", "status")] == {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}
    assert got[("creator", "")] == DEPLOYMENT_CREATE_FIELDS
    # a status patch by the same manager merges into its status entry, not a main one
    r = await http.patch(
        f"{APPS}/deployments/st/status?fieldManager=ctrl",
        json={"status": {"observedGeneration": 1}},
        headers=MERGE,
    )
    assert owners(r.json())[("ctrl", "status")] == {
        "f:status": {"f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}}
    }
    # a main-resource write owns nothing of the status it cannot change
    current = r.json()
    current["status"] = {"replicas": 9}
    current["spec"]["paused"] = True
    r = await http.put(f"{APPS}/deployments/st?fieldManager=editor", json=current)
    assert owners(r.json())[("editor", "")] == {"f:spec": {"f:paused": {}}}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "sent",
    [pytest.param([], id="empty-list"), pytest.param([{}], id="one-empty-entry")],
)
async def test_managedfields_an_update_sending_the_reset_value_clears_them(
    http: httpx.AsyncClient, sent: list[Any]
) -> None:
    await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("r", app="web"))
    current = (await http.get(f"{NS}/configmaps/r")).json()
    current["metadata"]["managedFields"] = sent
    r = await http.put(f"{NS}/configmaps/r?fieldManager=b", json=current)
    assert r.status_code == 200, r.text
    assert "managedFields" not in r.json()["metadata"]
    # the reset itself changed nothing else; the next write starts a fresh list
    r = await http.patch(
        f"{NS}/configmaps/r?fieldManager=b", json={"data": {"k": "w"}}, headers=MERGE
    )
    assert owners(r.json()) == {("b", ""): {"f:data": {"f:k": {}}}}


@pytest.mark.asyncio
async def test_managedfields_sent_entries_are_kept_unreadable_ones_ignored_invalid_ones_422(
    http: httpx.AsyncClient,
) -> None:
    r = await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("s"))
    stored = entries(r.json())
    current = r.json()
    mine = {
        "manager": "imported",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2020-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}},
    }
    current["metadata"]["managedFields"] = [mine]
    r = await http.put(f"{NS}/configmaps/s", json=current)
    assert entries(r.json()) == [mine]  # kept as sent (a valid, non-empty list)
    # one kube's decoder cannot read (an unknown operation) leaves the stored ones
    current = r.json()
    current["metadata"]["managedFields"] = [{**mine, "operation": "Bogus"}]
    r = await http.put(f"{NS}/configmaps/s", json=current)
    assert entries(r.json()) == [mine]
    # one it reads but validation refuses is 422
    current["metadata"]["managedFields"] = [{**mine, "manager": "x" * 129}]
    r = await http.put(f"{NS}/configmaps/s", json=current)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 128 bytes",
            "field": "metadata.managedFields[0].manager",
        }
    ]
    assert entries((await http.get(f"{NS}/configmaps/s")).json()) == [mine]
    assert stored != [mine]


@pytest.mark.asyncio
async def test_managedfields_are_in_list_and_watch_responses(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    r = await http.post(f"{NS}/configmaps?fieldManager=a", json=configmap("lw"))
    listed = (await http.get(f"{NS}/configmaps")).json()["items"]
    assert [entries(o) for o in listed if o["metadata"]["name"] == "lw"] == [entries(r.json())]
    async with asyncio.timeout(5):
        async with http.stream("GET", f"{NS}/configmaps?watch=1&resourceVersion=0") as watch:
            async for line in watch.aiter_lines():
                event = json.loads(line)
                if event["object"]["metadata"]["name"] == "lw":
                    assert entries(event["object"]) == entries(r.json())
                    break


def test_managedfields_official_client_create_is_recorded_as_openapi_generator(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"k": "v"}})
    got = core.read_namespaced_config_map("c", namespace)
    (entry,) = got.metadata.managed_fields
    assert entry.manager == "OpenAPI-Generator"
    assert (entry.operation, entry.api_version, entry.fields_type) == ("Update", "v1", "FieldsV1")
    assert entry.fields_v1 == {"f:data": {".": {}, "f:k": {}}}
    assert entry.subresource is None


# ---------------------------------------------------------------- in process


def test_managedfields_time_moves_only_when_the_manager_takes_a_field() -> None:
    clock = FakeClock()
    store = Store(clock=clock)
    seed_cluster(store, 0)
    cms = store.resource("configmaps")
    store.create(cms, configmap("t"), "default", manager="a")
    created = rfc3339(clock.wall_ns())
    clock.advance(10)
    store.patch(
        cms, "default", "t", "application/merge-patch+json", {"data": {"j": "1"}}, manager="b"
    )
    clock.advance(10)
    # b removes k's owner's field: a's entry shrinks but keeps its time
    got = store.patch(
        cms, "default", "t", "application/merge-patch+json", {"data": {"k": None}}, manager="b"
    )
    assert [(e["manager"], e["time"], e["fieldsV1"]) for e in entries(got)] == [
        ("a", created, {"f:data": {}}),
        ("b", rfc3339(clock.wall_ns() - 10_000_000_000), {"f:data": {"f:j": {}}}),
    ]


def test_managedfields_the_kubelet_and_the_collector_write_under_their_cluster_names() -> None:
    store = Store()
    seed_cluster(store, 1)
    node = store.get(store.resource("nodes"), None, "sim-node-0")
    assert [(e["manager"], e.get("subresource")) for e in entries(node)] == [("kubelet", None)]
    pods, cms = store.resource("pods"), store.resource("configmaps")
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": c["metadata"]["uid"]}
        for n in ("one", "two")
        for c in [store.create(cms, configmap(n), "default")]
    ]
    pod = {
        "metadata": {"name": "p", "ownerReferences": refs},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    created = store.create(pods, pod, "default", manager="creator")
    item = {".": {}, "f:apiVersion": {}, "f:kind": {}, "f:name": {}, "f:uid": {}}
    keys = [f'k:{{"uid":"{r["uid"]}"}}' for r in refs]
    assert owners(created)[("creator", "")]["f:metadata"] == {
        "f:ownerReferences": {".": {}, **dict.fromkeys(sorted(keys), item)}
    }
    # the kubelet's status write
    live = store.peek(pods, "default", "p")
    assert live is not None
    new = json.loads(json.dumps(live))
    new["status"]["phase"] = "Running"
    store.replace(pods, new, live, manager="kubelet", subresource="status")
    assert owners(store.get(pods, "default", "p"))[("kubelet", "status")] == {
        "f:status": {"f:phase": {}}
    }
    # the collector drops the reference to an owner gone: it leaves the creator's entry, and
    # the collector owns nothing (it only removed)
    store.delete(cms, "default", "one")
    got = store.get(pods, "default", "p")
    assert [r["name"] for r in got["metadata"]["ownerReferences"]] == ["two"]
    assert set(owners(got)) == {("creator", ""), ("kubelet", "status")}
    assert owners(got)[("creator", "")]["f:metadata"] == {
        "f:ownerReferences": {".": {}, keys[1]: item}
    }


# ---------------------------------------------------------------- the set algebra


@pytest.mark.parametrize(
    ("a", "b", "union", "difference"),
    [
        pytest.param({"f:x": {}}, {"f:y": {}}, {"f:x": {}, "f:y": {}}, {"f:x": {}}, id="siblings"),
        pytest.param(
            {"f:m": {}},
            {"f:m": {"f:k": {}}},
            {"f:m": {".": {}, "f:k": {}}},
            {"f:m": {}},
            id="member-and-child",
        ),
        pytest.param(
            {"f:m": {".": {}, "f:k": {}}},
            {"f:m": {}},
            {"f:m": {".": {}, "f:k": {}}},
            {"f:m": {"f:k": {}}},
            id="remove-the-member-keep-the-child",
        ),
        pytest.param({"f:x": {}}, {"f:x": {}}, {"f:x": {}}, {}, id="same"),
    ],
)
def test_managedfields_set_union_and_difference(
    a: dict[str, Any], b: dict[str, Any], union: dict[str, Any], difference: dict[str, Any]
) -> None:
    assert fieldset.union(a, b) == union
    assert fieldset.difference(a, b) == difference


# ---------------------------------------------------------------- the set algebra apply uses


@pytest.mark.parametrize(
    ("a", "b", "both"),
    [
        pytest.param({"f:x": {}}, {"f:x": {}}, {"f:x": {}}, id="same leaf"),
        pytest.param({"f:x": {}}, {"f:y": {}}, {}, id="disjoint"),
        pytest.param(
            {"f:s": {".": {}, "f:a": {}, "f:b": {}}},
            {"f:s": {"f:b": {}, "f:c": {}}},
            {"f:s": {"f:b": {}}},
            id="a member only on one side is not shared",
        ),
        pytest.param(
            {"f:s": {".": {}}}, {"f:s": {".": {}, "f:a": {}}}, {"f:s": {}}, id="shared member"
        ),
    ],
)
def test_managedfields_intersection(a: Any, b: Any, both: Any) -> None:
    assert fieldset.intersection(a, b) == both
    assert fieldset.intersection(b, a) == both


def test_managedfields_paths_print_as_kube_does() -> None:
    fields = {
        "f:spec": {
            "f:replicas": {},
            "f:containers": {
                'k:{"name":"web"}': {".": {}, "f:image": {}},
                'k:{"containerPort":80,"protocol":"TCP"}': {".": {}},
            },
            "f:strategy": {".": {}, "f:type": {}},
        },
        "f:metadata": {"f:finalizers": {'v:"a"': {}}},
    }
    # structured-merge-diff's Set.Iterate: a level's members, then its children's paths.
    assert list(fieldset.paths(fields)) == [
        '.metadata.finalizers[="a"]',
        ".spec.replicas",
        ".spec.strategy",
        '.spec.containers[containerPort=80,protocol="TCP"]',
        '.spec.containers[name="web"]',
        '.spec.containers[name="web"].image',
        ".spec.strategy.type",
    ]


def test_managedfields_applied_fields_own_leaves_and_list_items_not_maps() -> None:
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
        "status": {"replicas": 9},
    }
    assert fieldcompare.applied_fields(config, "status") == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:strategy": {"f:type": {}},
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            },
        },
    }


def test_managedfields_preset_entries_apply_to_one_write_of_one_object() -> None:
    preset = [{"manager": "p", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:data": {"f:k": {}}}}]  # fmt: skip

    def write(name: str) -> list[Any]:
        new = {"metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}}
        managedfields.record_write(
            None, new, manager="w", api_version="v1", time="t", status_reset=False
        )
        return list(new["metadata"].get("managedFields") or [])

    with managedfields.preset_entries("ns", "target", preset):
        assert [e["manager"] for e in write("other")] == ["w"]  # another object: recorded
        assert write("target") == preset
        assert [e["manager"] for e in write("target")] == ["w"]  # one write only
    assert [e["manager"] for e in write("target")] == ["w"]
