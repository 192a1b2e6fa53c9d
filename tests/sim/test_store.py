"""The store as the simulated kubelet and the tests use it in-process."""

from __future__ import annotations

import pytest

from pycm.sim.errors import APIError
from pycm.sim.seed import seed_cluster
from pycm.sim.selectors import parse_field_selector, parse_label_selector
from pycm.sim.store import DeleteOptions, Store
from pycm.util.clock import FakeClock
from tests.sim.conftest import deployment, pod, replicaset


@pytest.fixture
def store() -> Store:
    s = Store(clock=FakeClock(), watch_window=20, watch_queue_size=5)
    seed_cluster(s, 1)
    return s


def _owned(child: dict, owner: dict) -> dict:
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return child


def test_store_create_sets_metadata(store: Store) -> None:
    pods = store.resource("pods")
    before = store.resource_version
    created = store.create(
        pods, {"metadata": {"generateName": "web-"}, "spec": pod("x")["spec"]}, "default"
    )
    m = created["metadata"]
    assert m["name"].startswith("web-") and len(m["name"]) == len("web-") + 5
    assert m["resourceVersion"] == str(before + 1)
    assert m["creationTimestamp"] == "2023-11-14T22:13:20Z"  # FakeClock's wall start, RFC 3339 Z
    assert len(m["uid"]) == 36
    assert "generation" not in m
    d = store.create(store.resource("deployments", "apps"), deployment("d"), "default")
    assert d["metadata"]["generation"] == 1


def test_store_create_in_missing_namespace_is_not_found(store: Store) -> None:
    with pytest.raises(APIError) as err:
        store.create(store.resource("configmaps"), {"metadata": {"name": "c"}}, "nope")
    assert err.value.code == 404


def test_store_noop_update_keeps_resource_version(store: Store) -> None:
    cms = store.resource("configmaps")
    created = store.create(cms, {"metadata": {"name": "c"}, "data": {"a": "1"}}, "default")
    again = store.update(cms, created, "default")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_store_finalizers_delay_removal_until_cleared(store: Store) -> None:
    cms = store.resource("configmaps")
    store.create(cms, {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}, "default")
    obj, removed = store.delete(cms, "default", "c")
    assert not removed
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    store.patch(
        cms, "default", "c", "application/merge-patch+json", {"metadata": {"finalizers": None}}
    )
    assert store.peek(cms, "default", "c") is None


def test_store_delete_preconditions(store: Store) -> None:
    cms = store.resource("configmaps")
    store.create(cms, {"metadata": {"name": "c"}}, "default")
    with pytest.raises(APIError) as err:
        store.delete(cms, "default", "c", DeleteOptions(precondition_uid="other"))
    assert err.value.code == 409
    with pytest.raises(APIError) as err:
        store.delete(cms, "default", "c", DeleteOptions(precondition_resource_version="1"))
    assert err.value.code == 409
    assert store.peek(cms, "default", "c") is not None


def test_store_graceful_pod_deletion_waits_for_kubelet() -> None:
    store = Store(clock=FakeClock(), graceful_pod_deletion=True)
    seed_cluster(store, 1)
    pods = store.resource("pods")
    store.create(pods, pod("p", nodeName="sim-node-0"), "default")
    obj, removed = store.delete(pods, "default", "p", DeleteOptions(grace_period_seconds=30))
    assert not removed
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    assert store.finalize_pod_deletion("default", "p") is True
    assert store.peek(pods, "default", "p") is None
    # Unscheduled pods and grace 0 go at once.
    store.create(pods, pod("q"), "default")
    assert store.delete(pods, "default", "q")[1] is True


def test_store_default_pod_deletion_is_immediate(store: Store) -> None:
    pods = store.resource("pods")
    store.create(pods, pod("p", nodeName="sim-node-0"), "default")
    assert store.delete(pods, "default", "p")[1] is True


def test_store_foreground_deletion_waits_for_dependents(store: Store) -> None:
    rss, pods = store.resource("replicasets", "apps"), store.resource("pods")
    deps = store.resource("deployments", "apps")
    d = store.create(deps, deployment("d"), "default")
    rs = store.create(rss, _owned(replicaset("d-1"), d), "default")
    held = _owned(pod("d-1-a"), rs)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(pods, held, "default")
    store.create(pods, _owned(pod("d-1-b"), rs), "default")
    obj, removed = store.delete(deps, "default", "d", DeleteOptions("Foreground"))
    assert not removed
    assert "foregroundDeletion" in obj["metadata"]["finalizers"]
    assert store.peek(pods, "default", "d-1-b") is None
    assert store.peek(rss, "default", "d-1") is not None  # waits for the held pod
    store.patch(
        pods, "default", "d-1-a", "application/merge-patch+json", {"metadata": {"finalizers": []}}
    )
    assert store.peek(pods, "default", "d-1-a") is None
    assert store.peek(rss, "default", "d-1") is None
    assert store.peek(deps, "default", "d") is None


def test_store_background_deletion_is_recursive_and_spares_co_owned(store: Store) -> None:
    rss, pods = store.resource("replicasets", "apps"), store.resource("pods")
    deps, cms = store.resource("deployments", "apps"), store.resource("configmaps")
    d = store.create(deps, deployment("d"), "default")
    rs = store.create(rss, _owned(replicaset("d-1"), d), "default")
    store.create(pods, _owned(pod("d-1-a"), rs), "default")
    other = store.create(cms, {"metadata": {"name": "other"}}, "default")
    shared = _owned({"metadata": {"name": "shared"}}, rs)
    shared["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": other["metadata"]["uid"]}
    )
    store.create(cms, shared, "default")
    assert store.delete(deps, "default", "d")[1] is True
    assert store.peek(rss, "default", "d-1") is None
    assert store.peek(pods, "default", "d-1-a") is None
    survivor = store.peek(cms, "default", "shared")
    assert survivor is not None
    assert [r["name"] for r in survivor["metadata"]["ownerReferences"]] == ["other"]


def test_store_namespace_deletion_removes_contents(store: Store) -> None:
    nss, cms = store.resource("namespaces"), store.resource("configmaps")
    store.create(nss, {"metadata": {"name": "gone"}})
    store.create(cms, {"metadata": {"name": "c"}}, "gone")
    assert store.delete(nss, None, "gone")[1] is True
    assert store.list(cms, "gone")[0] == []
    with pytest.raises(APIError) as err:
        store.get(nss, None, "gone")
    assert err.value.code == 404


@pytest.mark.asyncio
async def test_store_watch_replays_from_version_and_expires_after_compaction(store: Store) -> None:
    cms = store.resource("configmaps")
    since = str(store.resource_version)
    store.create(cms, {"metadata": {"name": "a"}}, "default")
    store.create(cms, {"metadata": {"name": "b"}}, "default")
    watcher = store.watch(cms, "default", resource_version=since)
    got = [await watcher.next(1), await watcher.next(1)]
    assert [(t, o["metadata"]["name"]) for t, o in got if t] == [("ADDED", "a"), ("ADDED", "b")]
    watcher.stop()
    store.compact()
    with pytest.raises(APIError) as err:
        store.watch(cms, "default", resource_version=since)
    assert err.value.code == 410
    # Exactly at the compacted version is still servable.
    store.watch(cms, "default", resource_version=str(store.resource_version)).stop()
    assert store.watcher_count == 0


@pytest.mark.asyncio
async def test_store_history_window_expires_old_versions(store: Store) -> None:
    cms = store.resource("configmaps")
    since = str(store.resource_version)
    for i in range(25):  # the window is 20 events
        store.create(cms, {"metadata": {"name": f"c{i}"}}, "default")
    with pytest.raises(APIError) as err:
        store.watch(cms, None, resource_version=since)
    assert err.value.code == 410
    assert "too old resource version" in err.value.message


@pytest.mark.asyncio
async def test_store_slow_watcher_is_ended_not_buffered(store: Store) -> None:
    cms = store.resource("configmaps")
    watcher = store.watch(cms, "default", resource_version=str(store.resource_version))
    for i in range(6):  # capacity is 5
        store.create(cms, {"metadata": {"name": f"c{i}"}}, "default")
    assert watcher.overflowed and watcher.closed
    assert await watcher.next(0.1) is None
    assert store.watcher_count == 0


@pytest.mark.asyncio
async def test_store_selector_transitions_become_added_and_deleted(store: Store) -> None:
    cms = store.resource("configmaps")
    store.create(cms, {"metadata": {"name": "c", "labels": {"on": "no"}}}, "default")
    watcher = store.watch(
        cms,
        "default",
        labels=parse_label_selector("on=yes"),
        resource_version=str(store.resource_version),
    )
    merge = "application/merge-patch+json"
    store.patch(cms, "default", "c", merge, {"metadata": {"labels": {"on": "yes"}}})
    store.patch(cms, "default", "c", merge, {"data": {"x": "1"}})
    store.patch(cms, "default", "c", merge, {"metadata": {"labels": {"on": "no"}}})
    store.patch(cms, "default", "c", merge, {"data": {"x": "2"}})  # not seen
    events = []
    while (item := await watcher.next(0.05)) is not None:
        events.append((item[0], item[1]["metadata"]["labels"]["on"]))
    assert events == [("ADDED", "yes"), ("MODIFIED", "yes"), ("DELETED", "no")]
    watcher.stop()


@pytest.mark.asyncio
async def test_store_drop_watches_closes_every_watch(store: Store) -> None:
    pods = store.resource("pods")
    fields = parse_field_selector("spec.nodeName=sim-node-0", pods.field_labels, "Pod")
    watchers = [store.watch(pods, None, fields=fields) for _ in range(3)]
    assert store.drop_watches() == 3
    assert all(w.closed for w in watchers)
    assert store.watcher_count == 0


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        pytest.param(
            {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}},
            "spec.strategy.rollingUpdate",
            id="recreate-with-rolling",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}},
            "spec.strategy.rollingUpdate.maxUnavailable",
            id="both-zero",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x"}},
            "spec.strategy.rollingUpdate.maxSurge",
            id="not-a-percent",
        ),
        pytest.param({"type": "Sideways"}, "spec.strategy.type", id="unknown-type"),
    ],
)
def test_store_deployment_strategy_validation(store: Store, strategy: dict, field: str) -> None:
    body = deployment("d")
    body["spec"]["strategy"] = strategy
    with pytest.raises(APIError) as err:
        store.create(store.resource("deployments", "apps"), body, "default")
    assert err.value.code == 422
    assert field in {c["field"] for c in (err.value.details or {})["causes"]}


def test_status_update_keeps_annotations_of_deployments_but_not_spec(store: Store) -> None:
    res = store.resource("deployments", "apps")
    created = store.create(res, deployment("web"), "default")
    changed = {
        **created,
        "metadata": {
            **created["metadata"],
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {**created["spec"], "replicas": 9},
        "status": {"observedGeneration": 1},
    }
    updated = store.update_status(res, changed, "default")
    assert updated["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "2"}
    assert updated["spec"]["replicas"] == created["spec"]["replicas"]
    assert updated["status"]["observedGeneration"] == 1


def _pages(store: Store, namespace: str | None, limit: int, **selectors: str) -> list:
    from pycm.sim.tokens import decode_continue

    pods = store.resource("pods")
    labels = parse_label_selector(selectors.get("labels", ""))
    pages, token = [], None
    while True:
        page = store.list_page(
            pods,
            namespace,
            labels=labels,
            limit=limit,
            continue_from=decode_continue(token) if token else None,
        )
        pages.append(page)
        token = page.continue_token
        if not token:
            return pages


def _names(pages: list) -> list[tuple[str, str]]:
    return [(p["metadata"]["namespace"], p["metadata"]["name"]) for pg in pages for p in pg.items]


def test_store_paged_list_walks_namespaces_in_order_with_remaining_counts(store: Store) -> None:
    pods = store.resource("pods")
    store.create(store.resource("namespaces"), {"metadata": {"name": "default-x"}})
    for ns, n in (("default", 5), ("default-x", 3), ("kube-system", 2)):
        for i in range(n):
            store.create(pods, pod(f"p{i}", {"tier": "web" if i % 2 else "db"}), ns)
    own = _pages(store, "default", 2)
    assert _names(own) == [("default", f"p{i}") for i in range(5)]
    # Counts stop at the namespace: "default-x" sorts right after "default" and is not in it.
    assert [pg.remaining for pg in own] == [3, 1, None]
    everything = _pages(store, None, 4)
    assert _names(everything) == sorted(_names(everything)) and len(_names(everything)) == 10
    assert [pg.remaining for pg in everything] == [6, 2, None]
    # With a selector kube-apiserver gives no remainingItemCount: the pages still add up.
    web = _pages(store, None, 2, labels="tier=web")
    expected = [("default", "p1"), ("default", "p3"), ("default-x", "p1"), ("kube-system", "p1")]
    assert _names(web) == expected
    assert [pg.remaining for pg in web] == [None, None]


def test_store_paged_list_sees_writes_between_pages(store: Store) -> None:
    """The sorted keys are cached between pages: a create or delete must invalidate them."""
    from pycm.sim.tokens import decode_continue

    pods = store.resource("pods")
    for i in (1, 3, 5):
        store.create(pods, pod(f"p{i}"), "default")
    first = store.list_page(pods, "default", limit=1)
    assert [p["metadata"]["name"] for p in first.items] == ["p1"]
    store.create(pods, pod("p4"), "default")
    store.delete(pods, "default", "p5")
    rest = store.list_page(
        pods, "default", limit=10, continue_from=decode_continue(first.continue_token)
    )
    assert [p["metadata"]["name"] for p in rest.items] == ["p3", "p4"]
