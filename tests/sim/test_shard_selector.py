"""Sharded list and watch (KEP-5866) over real HTTP: with ``ShardedListAndWatch`` on, lists (typed,
metadata-only, Table; paged), watches and streaming lists keep a shardSelector's share and say
so in ``metadata.shardInfo``; a bad selector is kube's 400; with the gate off (the default) the
parameter is ignored."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import pytest
import pytest_asyncio
from kubernetes import client, config

from pycm.kube import BadRequest, Client, load_config
from pycm.sim import Emulator, run_emulator
from pycm.sim.command import SIM_FEATURE_GATES, _feature_gates, add_subcommand, options_from_args
from pycm.sim.shardselector import fnv1a_64

UID = "object.metadata.uid"
NS = "object.metadata.namespace"
HALF = 1 << 63
NAMESPACES = ("team-a", "team-b", "team-c")
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
METADATA = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


def _bound(value: int) -> str:
    return "0x10000000000000000" if value == 1 << 64 else f"0x{value:016x}"


def _selector(field: str, *spans: tuple[int, int]) -> str:
    return " || ".join(f"shardRange({field}, '{_bound(a)}', '{_bound(b)}')" for a, b in spans)


LOWER = _selector(UID, (0, HALF))
UPPER = _selector(UID, (HALF, 1 << 64))


def _in(value: str, *spans: tuple[int, int]) -> bool:
    h = fnv1a_64(value)
    return any(a <= h < b for a, b in spans)


def _q(selector: str) -> str:
    return "shardSelector=" + quote(selector)


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


@pytest_asyncio.fixture
async def sharded() -> AsyncIterator[Emulator]:
    async with run_emulator(
        tls=False, kubelet=False, sharded_list_and_watch=True, bookmark_interval=0.2
    ) as emulator:
        yield emulator


@pytest_asyncio.fixture
async def shttp(sharded: Emulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {sharded.admin_token}"}
    async with httpx.AsyncClient(base_url=sharded.url, headers=headers, timeout=30) as c:
        yield c


async def _seed(http: httpx.AsyncClient, per_namespace: int = 8) -> dict[str, tuple[str, str]]:
    """ConfigMaps in three namespaces: ``{"ns/name": (uid, namespace)}``."""
    made: dict[str, tuple[str, str]] = {}
    for ns in NAMESPACES:
        created = await http.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
        assert created.status_code == 201, created.text
        for i in range(per_namespace):
            response = await http.post(f"/api/v1/namespaces/{ns}/configmaps", json=_cm(f"c{i}"))
            assert response.status_code == 201, response.text
            made[f"{ns}/c{i}"] = (response.json()["metadata"]["uid"], ns)
    return made


def _keys(body: dict[str, Any]) -> set[str]:
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in body["items"]}


@pytest.mark.asyncio
async def test_sharded_list_two_halves_are_disjoint_and_cover_everything(
    shttp: httpx.AsyncClient,
) -> None:
    made = await _seed(shttp)
    shares = []
    for selector, span in ((LOWER, (0, HALF)), (UPPER, (HALF, 1 << 64))):
        response = await shttp.get(f"/api/v1/configmaps?labelSelector=&{_q(selector)}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["metadata"]["shardInfo"] == {"selector": selector}
        keys = _keys(body)
        assert keys == {k for k, (uid, _) in made.items() if _in(uid, span)}
        shares.append(keys)
    assert not shares[0] & shares[1]
    assert shares[0] | shares[1] == set(made)
    assert shares[0] and shares[1]  # 24 uids: both halves hold some (a fixed-size check)


@pytest.mark.asyncio
async def test_sharded_list_by_namespace_keeps_whole_namespaces(shttp: httpx.AsyncClient) -> None:
    made = await _seed(shttp, per_namespace=3)
    h = fnv1a_64("team-b")
    selector = _selector(NS, (h, h + 1))  # exactly team-b's hash
    body = (await shttp.get(f"/api/v1/configmaps?{_q(selector)}")).json()
    assert _keys(body) == {k for k, (_, ns) in made.items() if ns == "team-b"}
    # In its own namespace's path the same selector keeps all; elsewhere nothing.
    inside = (await shttp.get(f"/api/v1/namespaces/team-b/configmaps?{_q(selector)}")).json()
    outside = (await shttp.get(f"/api/v1/namespaces/team-a/configmaps?{_q(selector)}")).json()
    assert len(inside["items"]) == 3 and outside["items"] == []
    # A cluster-scoped kind's namespace is "": every node hashes to FNV's offset basis.
    basis = fnv1a_64("")
    nodes_in = (await shttp.get(f"/api/v1/nodes?{_q(_selector(NS, (basis, basis + 1)))}")).json()
    nodes_out = (await shttp.get(f"/api/v1/nodes?{_q(_selector(NS, (0, basis)))}")).json()
    assert len(nodes_in["items"]) == 1 and nodes_out["items"] == []


@pytest.mark.asyncio
async def test_sharded_list_pages_match_the_unpaged_share(shttp: httpx.AsyncClient) -> None:
    made = await _seed(shttp)
    selector = _selector(UID, (0, 1 << 62), (HALF, HALF + (1 << 62)))  # two ranges: || kept
    whole = (await shttp.get(f"/api/v1/configmaps?{_q(selector)}")).json()
    expected = {k for k, (uid, _) in made.items() if _in(uid, (0, 1 << 62), (HALF, 3 << 62))}
    assert _keys(whole) == expected
    paged: list[str] = []
    token = ""
    pages = 0
    while True:
        url = f"/api/v1/configmaps?limit=2&{_q(selector)}"
        if token:
            url += f"&continue={quote(token)}"
        body = (await shttp.get(url)).json()
        pages += 1
        assert body["metadata"]["shardInfo"] == {"selector": selector}
        assert "remainingItemCount" not in body["metadata"]  # a selector's count is a guess
        assert len(body["items"]) <= 2
        paged += [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in body["items"]]
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert paged == [
        f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in whole["items"]
    ]
    assert pages >= len(expected) // 2


@pytest.mark.asyncio
@pytest.mark.parametrize("accept", [TABLE, METADATA], ids=["table", "metadata"])
async def test_sharded_list_table_and_metadata_keep_the_same_share(
    shttp: httpx.AsyncClient, accept: str
) -> None:
    await _seed(shttp, per_namespace=4)
    typed = (await shttp.get(f"/api/v1/namespaces/team-a/configmaps?{_q(LOWER)}")).json()
    response = await shttp.get(
        f"/api/v1/namespaces/team-a/configmaps?{_q(LOWER)}", headers={"Accept": accept}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["metadata"]["shardInfo"] == {"selector": LOWER}
    if accept == TABLE:
        names = [row["cells"][0] for row in body["rows"]]
    else:
        names = [item["metadata"]["name"] for item in body["items"]]
    assert names == [o["metadata"]["name"] for o in typed["items"]]


async def _events(http: httpx.AsyncClient, url: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` non-BOOKMARK events of the watch at ``url``, BOOKMARKs that end the
    initial events kept (bounded by the caller's wait_for)."""
    out: list[dict[str, Any]] = []
    async with http.stream("GET", url) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if not line.strip():
                continue
            event = orjson.loads(line)
            annotations = event["object"]["metadata"].get("annotations") or {}
            if event["type"] == "BOOKMARK" and not annotations:
                continue
            out.append(event)
            if len(out) == count:
                return out
    return out


@pytest.mark.asyncio
async def test_sharded_watches_split_every_event_between_complementary_shards(
    shttp: httpx.AsyncClient,
) -> None:
    assert (await shttp.post("/api/v1/namespaces", json={"metadata": {"name": "w"}})).is_success
    rv = (await shttp.get("/api/v1/namespaces/w/configmaps")).json()["metadata"]["resourceVersion"]
    base = f"/api/v1/namespaces/w/configmaps?watch=1&resourceVersion={rv}"
    names = [f"c{i}" for i in range(10)]
    # Each object's own uid decides its shard, so the expected counts are known only after the
    # creates: the watches start from rv and replay them from history.
    uids = {}
    for name in names:
        created = await shttp.post("/api/v1/namespaces/w/configmaps", json=_cm(name))
        uids[name] = created.json()["metadata"]["uid"]
    for name in names:
        patch = {"data": {"step": "modified"}}
        headers = {"Content-Type": "application/merge-patch+json"}
        url = f"/api/v1/namespaces/w/configmaps/{name}"
        assert (await shttp.patch(url, json=patch, headers=headers)).is_success
        assert (await shttp.delete(url)).is_success
    lower = [n for n in names if _in(uids[n], (0, HALF))]
    upper = [n for n in names if n not in lower]
    seen = await asyncio.wait_for(
        asyncio.gather(
            _events(shttp, f"{base}&{_q(LOWER)}", 3 * len(lower)),
            _events(shttp, f"{base}&{_q(UPPER)}", 3 * len(upper)),
        ),
        10,
    )
    for share, events in zip((lower, upper), seen, strict=True):
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            *(("ADDED", n) for n in share),
            *(item for n in share for item in (("MODIFIED", n), ("DELETED", n))),
        ]


@pytest.mark.asyncio
async def test_sharded_live_watch_sees_only_its_share(shttp: httpx.AsyncClient) -> None:
    assert (await shttp.post("/api/v1/namespaces", json={"metadata": {"name": "w"}})).is_success
    rv = (await shttp.get("/api/v1/namespaces/w/configmaps")).json()["metadata"]["resourceVersion"]
    url = f"/api/v1/namespaces/w/configmaps?watch=1&resourceVersion={rv}&{_q(LOWER)}"
    task = asyncio.create_task(_events(shttp, url, 3))
    await asyncio.sleep(0.2)  # the watch is open: what follows arrives live
    created: list[tuple[str, str]] = []
    while sum(_in(uid, (0, HALF)) for _, uid in created) < 3:
        name = f"live{len(created)}"
        body = (await shttp.post("/api/v1/namespaces/w/configmaps", json=_cm(name))).json()
        created.append((name, body["metadata"]["uid"]))
    events = await asyncio.wait_for(task, 10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", name) for name, uid in created if _in(uid, (0, HALF))
    ]


@pytest.mark.asyncio
async def test_sharded_watch_list_streams_only_the_share_then_the_bookmark(
    shttp: httpx.AsyncClient,
) -> None:
    made = await _seed(shttp, per_namespace=6)
    ns_made = {k.split("/")[1]: uid for k, (uid, ns) in made.items() if ns == "team-c"}
    share = sorted(n for n, uid in ns_made.items() if _in(uid, (HALF, 1 << 64)))
    url = (
        "/api/v1/namespaces/team-c/configmaps?watch=1&sendInitialEvents=true"
        f"&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&{_q(UPPER)}"
    )
    events = await asyncio.wait_for(_events(shttp, url, len(share) + 1), 10)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        *(("ADDED", n) for n in share),
        ("BOOKMARK", None),
    ]
    end = events[-1]["object"]["metadata"]["annotations"]
    assert end == {"k8s.io/initial-events-end": "true"}


BAD = [
    pytest.param(
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "
        '"0x0" (did you mean "0x0000000000000000"?)',
        id="short-hex",
    ),
    pytest.param(
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        'invalid shard selector: unsupported field path "object.metadata.name"; supported: '
        "object.metadata.uid, object.metadata.namespace",
        id="name-field",
    ),
    pytest.param(
        " ",
        "invalid shard selector: empty shard selector is not allowed; omit the parameter for "
        "unfiltered lists",
        id="blank",
    ),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("selector", "message"), BAD)
@pytest.mark.parametrize("watch", [False, True], ids=["list", "watch"])
async def test_sharded_bad_selector_is_kubes_400(
    shttp: httpx.AsyncClient, selector: str, message: str, watch: bool
) -> None:
    url = f"/api/v1/configmaps?{_q(selector)}" + ("&watch=1" if watch else "")
    response = await shttp.get(url)
    assert response.status_code == 400
    body = response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "BadRequest", 400)
    assert body["message"] == message


@pytest.mark.asyncio
async def test_sharded_pycm_client_sees_share_and_kubes_error(sharded: Emulator) -> None:
    kube = await Client.connect(await load_config(kubeconfig=str(sharded.kubeconfig_path), qps=-1))
    async with kube:
        for i in range(12):
            await kube.request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                content=orjson.dumps(_cm(f"k{i}")),
                content_type="application/json",
            )
        listed = (
            await kube.request(
                "GET", "/api/v1/namespaces/default/configmaps", params={"shardSelector": LOWER}
            )
        ).json()
        assert listed["metadata"]["shardInfo"] == {"selector": LOWER}
        assert all(_in(o["metadata"]["uid"], (0, HALF)) for o in listed["items"])
        with pytest.raises(BadRequest) as caught:
            await kube.request(
                "GET", "/api/v1/configmaps", params={"shardSelector": "shardRange(x)"}
            )
    assert caught.value.code == 400
    assert caught.value.message == (
        "invalid shard selector: shardRange() requires exactly 3 arguments, got 1"
    )


@pytest.mark.asyncio
async def test_gate_off_ignores_a_valid_selector_and_still_refuses_a_bad_one(
    emu: Emulator, http: httpx.AsyncClient
) -> None:
    made = await _seed(http, per_namespace=3)
    body = (await http.get(f"/api/v1/configmaps?{_q(LOWER)}&labelSelector=")).json()
    assert _keys(body) == set(made)  # the whole collection
    assert "shardInfo" not in body["metadata"]
    # kube converts the parameter while decoding the request, before any gate is read.
    refused = await http.get(f"/api/v1/configmaps?{_q('nonsense(')}")
    assert refused.status_code == 400
    assert refused.json()["message"].startswith("invalid shard selector: CEL parse error: ")


def test_sim_feature_gates_take_sharded_list_and_watch_off_by_default() -> None:
    assert SIM_FEATURE_GATES["ShardedListAndWatch"] is False
    assert _feature_gates("ShardedListAndWatch=true,WatchList=false") == {
        "ShardedListAndWatch": True,
        "WatchList": False,
    }
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers())
    default = options_from_args(parser.parse_args(["sim"]))
    on = options_from_args(parser.parse_args(["sim", "--feature-gates=ShardedListAndWatch=true"]))
    assert (default.sharded_list_and_watch, on.sharded_list_and_watch) == (False, True)
    assert on.watch_list is True  # the other gate keeps its default


@pytest.mark.asyncio
async def test_sharded_delete_collection_deletes_only_the_share(shttp: httpx.AsyncClient) -> None:
    made = await _seed(shttp, per_namespace=8)
    response = await shttp.delete(f"/api/v1/namespaces/team-a/configmaps?{_q(UPPER)}")
    assert response.status_code == 200, response.text
    left = (await shttp.get("/api/v1/namespaces/team-a/configmaps")).json()
    assert _keys(left) == {
        k for k, (uid, ns) in made.items() if ns == "team-a" and _in(uid, (0, HALF))
    }
    assert {f"team-a/{o['metadata']['name']}" for o in response.json()["items"]} == {
        k for k, (uid, ns) in made.items() if ns == "team-a" and _in(uid, (HALF, 1 << 64))
    }


@pytest.mark.asyncio
async def test_sharded_official_client_lists_its_share_and_reads_shard_info(
    sharded: Emulator, shttp: httpx.AsyncClient
) -> None:
    made = await _seed(shttp, per_namespace=6)
    api = config.new_client_from_config(config_file=str(sharded.kubeconfig_path))
    core = client.CoreV1Api(api)
    try:
        listed = await asyncio.to_thread(
            core.list_config_map_for_all_namespaces, shard_selector=UPPER
        )
        with pytest.raises(client.ApiException) as caught:
            await asyncio.to_thread(
                core.list_namespaced_config_map, "team-a", shard_selector="shardRange("
            )
    finally:
        api.close()
    assert listed.metadata.shard_info.selector == UPPER
    assert {f"{o.metadata.namespace}/{o.metadata.name}" for o in listed.items} == {
        k for k, (uid, _) in made.items() if _in(uid, (HALF, 1 << 64))
    }
    assert caught.value.status == 400
    assert orjson.loads(caught.value.body)["message"].startswith(
        "invalid shard selector: CEL parse error: Syntax error: "
    )
