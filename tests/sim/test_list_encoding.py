"""A typed list page is the stored objects' commit encodings joined in their envelope: byte for
byte what encoding the list again would write, whatever was created, changed or deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio

from pycm.sim.gc import DeleteOptions
from pycm.sim.reads import list_body
from pycm.sim.seed import seed_cluster
from pycm.sim.selectors import FieldSelector, LabelSelector
from pycm.sim.server import Emulator, run_emulator
from pycm.sim.store import Store
from pycm.sim.table import Table
from pycm.util.clock import FakeClock

CMS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    # (The folder's ``http`` fixture is a client of this one.)
    async with run_emulator(tls=False, kubelet=False, nodes=1) as emulator:
        yield emulator


def _reencoded(body: bytes) -> bytes:
    return orjson.dumps(orjson.loads(body))


def _stored_list(emu: Emulator, names: list[str], meta: dict[str, Any]) -> bytes:
    res = emu.store.resource("configmaps")
    items = [emu.store.peek(res, "default", n) for n in names]
    return orjson.dumps(
        {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}
    )


@pytest.mark.asyncio
async def test_list_pages_are_the_stored_objects_encoded_again(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    store, res = emu.store, emu.store.resource("configmaps")
    for name in ("a", "b", "c", "d"):
        store.create(res, {"metadata": {"name": name}, "data": {"k": "é\n" + name}}, "default")
    store.patch(res, "default", "b", MERGE, {"data": {"k": "changed"}})
    store.delete(res, "default", "c")
    first = await http.get(CMS, params={"limit": 2})
    assert first.status_code == 200
    token = first.json()["metadata"]["continue"]
    rv = str(store.resource_version)
    meta = {"resourceVersion": rv, "continue": token, "remainingItemCount": 1}
    assert first.content == _stored_list(emu, ["a", "b"], meta)
    assert first.json()["items"][1]["data"] == {"k": "changed"}  # the change, not the create
    last = await http.get(CMS, params={"limit": 2, "continue": token})
    assert last.content == _stored_list(emu, ["d"], {"resourceVersion": rv})
    whole = await http.get(CMS)
    assert whole.content == _stored_list(emu, ["a", "b", "d"], {"resourceVersion": rv})
    assert whole.content == _reencoded(whole.content)  # compact, as orjson writes


@pytest.mark.asyncio
async def test_an_empty_list_is_an_empty_items_array(http: httpx.AsyncClient) -> None:
    answer = await http.get(CMS, params={"labelSelector": "none=here"})
    assert answer.status_code == 200
    assert answer.json()["items"] == []
    assert answer.content == _reencoded(answer.content)


@pytest.mark.asyncio
async def test_initial_watch_events_are_the_stored_encodings(emu: Emulator) -> None:
    store, res = emu.store, emu.store.resource("configmaps")
    store.create(res, {"metadata": {"name": "a"}, "data": {"k": "1"}}, "default")
    store.patch(res, "default", "a", MERGE, {"data": {"k": "2"}})
    watcher = store.watch(res, "default")
    try:
        entry = watcher.pop_entry()
        assert entry is not None
        type_, obj, encoded = entry
        assert (type_, obj["data"]) == ("ADDED", {"k": "2"})
        assert encoded == orjson.dumps(obj)
    finally:
        watcher.stop()


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param({"resourceVersion": "7"}, id="last-page"),
        pytest.param({"resourceVersion": "7", "continue": "x", "remainingItemCount": 3}, id="more"),
    ],
)
@pytest.mark.parametrize("count", [0, 1, 3])
def test_list_body_writes_what_orjson_writes(meta: dict[str, Any], count: int) -> None:
    items = [{"metadata": {"name": f"n{i}"}, "data": {"é": "\u2028"}} for i in range(count)]
    expected = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}
    encoded = [orjson.dumps(i) for i in items]
    assert list_body("ConfigMapList", "v1", meta, encoded) == orjson.dumps(expected)


def test_table_keeps_each_objects_encoding_with_it() -> None:
    table = Table()
    a, b = {"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "data": {"x": "1"}}
    table.put(("ns", "a"), a)  # encoded by the table
    table.put(("ns", "b"), b, b"given")  # the caller's encoding is taken as it is
    assert table.encoded(("ns", "a")) == orjson.dumps(a)
    assert table.encoded(("ns", "b")) == b"given"
    page = table.page("ns", LabelSelector(), FieldSelector(), None, None, 5)
    assert page.items == [a, b] and page.encoded == [orjson.dumps(a), b"given"]
    table.pop(("ns", "a"))
    assert table.encoded(("ns", "a")) is None
    assert table.page("ns", LabelSelector(), FieldSelector(), 1, None, 5).encoded == [b"given"]


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_every_stored_encoding_stays_its_objects_through_writes_of_every_kind() -> None:
    store = Store(clock=FakeClock(), watch_window=5)  # (a short history: the table must hold)
    seed_cluster(store, 1)
    pods, deps = store.resource("pods"), store.resource("deployments", "apps")
    dep = store.create(deps, _deployment("d"), "default")
    owner = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "d",
        "uid": dep["metadata"]["uid"],
    }
    for i in range(3):
        pod = {
            "metadata": {"name": f"p{i}", "finalizers": ["x/y"], "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        store.create(pods, pod, "default")
    status = {**store.get(pods, "default", "p0"), "status": {"phase": "Running"}}
    store.update_status(pods, status, "default")
    store.patch(pods, "default", "p1", MERGE, {"metadata": {"labels": {"l": "v"}}})
    store.update_scale(deps, "default", "d", {"spec": {"replicas": 3}})
    store.delete(pods, "default", "p2")  # a finalizer holds it: deletionTimestamp set
    store.delete(deps, "default", "d", DeleteOptions(propagation_policy="Background"))
    store.patch(pods, "default", "p2", MERGE, {"metadata": {"finalizers": None}})
    checked = 0
    for table in store._objects.values():
        for key in table:
            assert table.encoded(key) == orjson.dumps(table.get(key)), key
            checked += 1
    assert checked >= 4 and store.peek(pods, "default", "p2") is None
