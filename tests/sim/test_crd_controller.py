"""The CRD controller inside the store: serving follows every change of the definition, and
the served versions are listed for the OpenAPI documents."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from pycm.sim.crd.served import served_versions
from pycm.sim.errors import APIError
from pycm.sim.store import Store
from tests.sim.test_crd_serving import body, website_crd

GROUP = "ctl.example.com"


@pytest.fixture
def store() -> Store:
    s = Store()
    s.create(s.resource("namespaces"), {"metadata": {"name": "default"}})
    return s


def _crds(store: Store) -> Any:
    return store.resource("customresourcedefinitions", "apiextensions.k8s.io")


def _update_crd(store: Store, change: Any) -> None:
    crd = store.get(_crds(store), None, f"websites.{GROUP}")
    change(crd["spec"])
    store.update(_crds(store), crd)


def test_crd_update_serves_the_new_definition_over_the_same_objects(store: Store) -> None:
    store.create(_crds(store), website_crd(GROUP))
    v1 = store.registry.get(GROUP, "v1", "websites")
    assert v1 is not None
    store.create(v1, body(GROUP, "kept"), "default")

    def add_column_and_version(spec: dict[str, Any]) -> None:
        spec["versions"][0]["additionalPrinterColumns"].append(
            {"name": "Tier", "type": "string", "jsonPath": ".spec.tier"}
        )
        beta = copy.deepcopy(spec["versions"][0])
        beta.update({"name": "v1beta1", "storage": False})
        spec["versions"].append(beta)

    _update_crd(store, add_column_and_version)
    served = store.registry.get(GROUP, "v1", "websites")
    assert served is not None and served is not v1
    assert [c["name"] for c in served.strategy.printer.columns][-1] == "Tier"
    assert store.registry.get(GROUP, "v1beta1", "websites") is not None
    assert [o["metadata"]["name"] for o in store.list(served, "default")[0]] == ["kept"]

    def stop_serving_beta(spec: dict[str, Any]) -> None:
        spec["versions"][1]["served"] = False

    _update_crd(store, stop_serving_beta)
    assert store.registry.get(GROUP, "v1beta1", "websites") is None
    assert store.registry.get(GROUP, "v1", "websites") is not None


def test_crd_served_versions_for_openapi(store: Store) -> None:
    assert served_versions(store.registry) == []
    store.create(_crds(store), website_crd(GROUP))
    listed = served_versions(store.registry)
    assert [(v.group, v.version, v.kind, v.plural, v.scope, v.storage) for v in listed] == [
        (GROUP, "v1", "Website", "websites", "Namespaced", True)
    ]
    assert listed[0].schema["properties"]["spec"]["required"] == ["host"]
    assert listed[0].subresources == ("status", "scale")
    listed[0].schema.clear()  # a copy: the served schema is untouched
    assert served_versions(store.registry)[0].schema["type"] == "object"


def test_crd_delete_removes_objects_and_watchers_see_them_deleted(store: Store) -> None:
    store.create(_crds(store), website_crd(GROUP))
    res = store.registry.get(GROUP, "v1", "websites")
    assert res is not None
    store.create(res, body(GROUP, "a"), "default")
    watcher = store.watch(res, "default", resource_version=str(store.resource_version))
    store.delete(_crds(store), None, f"websites.{GROUP}")
    events = []
    while (entry := watcher.pop_entry()) is not None:
        events.append((entry[0], entry[1]["metadata"]["name"]))
    assert events == [("DELETED", "a")]
    watcher.stop()
    assert store.registry.get(GROUP, "v1", "websites") is None
    with pytest.raises(APIError) as err:
        store.get(_crds(store), None, f"websites.{GROUP}")
    assert err.value.code == 404


def test_crd_with_a_built_in_kinds_names_does_not_take_it_over(store: Store) -> None:
    crd = website_crd("rbac.authorization.k8s.io")
    crd["metadata"] = {
        "name": "roles.rbac.authorization.k8s.io",
        "annotations": {"api-approved.kubernetes.io": "unapproved, test"},
    }
    crd["spec"]["names"] = {"plural": "roles", "kind": "Role"}
    store.create(_crds(store), crd)
    served = store.registry.get("rbac.authorization.k8s.io", "v1", "roles")
    assert served is not None and served.kind == "Role"
    assert type(served.strategy).__name__ != "CustomResourceStrategy"
    store.delete(_crds(store), None, "roles.rbac.authorization.k8s.io")
    assert store.registry.get("rbac.authorization.k8s.io", "v1", "roles") is served


def test_crd_delete_waits_for_its_objects_finalizers_then_goes(store: Store) -> None:
    # kube's customresourcecleanup: an operator's finalizer on a custom resource holds the CRD
    # (terminating, still served, creates refused) until the operator lets the object go.
    store.create(_crds(store), website_crd(GROUP))
    res = store.registry.get(GROUP, "v1", "websites")
    assert res is not None
    held = body(GROUP, "held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    store.create(res, held, "default")
    store.create(res, body(GROUP, "free"), "default")
    name = f"websites.{GROUP}"
    crd, removed = store.delete(_crds(store), None, name)
    assert not removed
    assert crd["metadata"]["deletionTimestamp"]
    assert crd["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    terminating = [c for c in crd["status"]["conditions"] if c["type"] == "Terminating"]
    assert [(c["status"], c["reason"]) for c in terminating] == [
        ("True", "InstanceDeletionInProgress")
    ]
    # The object without a finalizer is gone; the held one has a deletionTimestamp.
    left = store.list(res, "default")[0]
    assert [o["metadata"]["name"] for o in left] == ["held"]
    assert left[0]["metadata"]["deletionTimestamp"]
    with pytest.raises(APIError) as err:
        store.create(res, body(GROUP, "late"), "default")
    assert (err.value.code, err.value.status()["message"]) == (
        405,
        "create not allowed while custom resource definition is terminating",
    )
    assert store.registry.get(GROUP, "v1", "websites") is not None  # still served
    # The operator removes its finalizer: the object goes, then the CRD, and serving stops.
    current = store.get(res, "default", "held")
    current["metadata"]["finalizers"] = []
    store.update(res, current, "default")
    assert store.registry.get(GROUP, "v1", "websites") is None
    with pytest.raises(APIError) as err:
        store.get(_crds(store), None, name)
    assert err.value.code == 404
    # The names are free again: a new CRD of the same name serves afresh.
    store.create(_crds(store), website_crd(GROUP))
    again = store.registry.get(GROUP, "v1", "websites")
    assert again is not None
    assert store.create(again, body(GROUP, "new"), "default")["metadata"]["name"] == "new"


def test_crd_delete_without_held_objects_is_immediate(store: Store) -> None:
    store.create(_crds(store), website_crd(GROUP))
    res = store.registry.get(GROUP, "v1", "websites")
    assert res is not None
    store.create(res, body(GROUP, "a"), "default")
    _, removed = store.delete(_crds(store), None, f"websites.{GROUP}")
    assert removed
    assert store.registry.get(GROUP, "v1", "websites") is None


def test_crd_default_added_later_shows_on_objects_written_before(store: Store) -> None:
    # kube applies the storage version's defaults when it reads: an object stored before the
    # schema gained a default reads with it, at the same resourceVersion and with no event.
    crd = website_crd(GROUP)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del props["properties"]["replicas"]["default"]
    store.create(_crds(store), crd)
    res = store.registry.get(GROUP, "v1", "websites")
    assert res is not None
    before = store.create(res, body(GROUP, "old"), "default")
    assert "replicas" not in before["spec"] and "tier" not in before["spec"]
    watcher = store.watch(res, "default", resource_version=str(store.resource_version))

    def add_default(spec: dict[str, Any]) -> None:
        schema = spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        schema["properties"]["tier"]["default"] = "free"

    _update_crd(store, add_default)
    served = store.registry.get(GROUP, "v1", "websites")
    assert served is not None
    after = store.get(served, "default", "old")
    assert after["spec"]["tier"] == "free"
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    listed = store.list_page(served, "default")
    assert orjson.loads(listed.encoded[0])["spec"]["tier"] == "free"  # the served bytes too
    assert watcher.pop_entry() is None
    watcher.stop()
