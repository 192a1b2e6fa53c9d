"""Fault injection: every kind through raw httpx (in-process emulator) and the kubernetes client
(an emulator process), the admin endpoint's auth, bounds and clearing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from pycm.sim.faults import FAULTS_PATH
from pycm.sim.server import Emulator, run_emulator
from tests.sim.conftest import TOKENS, SimProcess, pod, start_sim, stop_sim

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


@pytest_asyncio.fixture
async def femu(tmp_path: Path) -> AsyncIterator[Emulator]:
    (tmp_path / "tokens.csv").write_text(TOKENS)
    async with run_emulator(
        tls=False,
        kubelet=True,
        pod_ready_delay=0.0,
        token_auth_file=str(tmp_path / "tokens.csv"),
    ) as emulator:
        yield emulator
    assert emulator.failures == []


@pytest_asyncio.fixture
async def admin(femu: Emulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {femu.admin_token}"}
    async with httpx.AsyncClient(base_url=femu.url, headers=headers, timeout=10) as c:
        yield c


@pytest_asyncio.fixture
async def bob(femu: Emulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": "Bearer bob-token"}
    async with httpx.AsyncClient(base_url=femu.url, headers=headers, timeout=10) as c:
        yield c


async def timed_get(c: httpx.AsyncClient, path: str) -> tuple[httpx.Response, float]:
    start = time.perf_counter()
    response = await c.get(path)
    return response, time.perf_counter() - start


async def add(c: httpx.AsyncClient, **spec: Any) -> dict[str, Any]:
    r = await c.post(FAULTS_PATH, json=spec)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def active(c: httpx.AsyncClient) -> list[str]:
    r = await c.get(FAULTS_PATH)
    assert r.status_code == 200
    return [f["id"] for f in r.json()["items"]]


async def poll(predicate: Any, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5.0
    while not await predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


# ---------------------------------------------------------------- the admin endpoint


@pytest.mark.asyncio
async def test_faults_endpoint_needs_the_admin_token(
    femu: Emulator, admin: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    async with httpx.AsyncClient(base_url=femu.url) as anonymous:
        r = await anonymous.get(FAULTS_PATH)
    assert r.status_code == 401
    assert r.json()["reason"] == "Unauthorized"
    r = await bob.post(FAULTS_PATH, json={"kind": "compact"})
    assert r.status_code == 403
    assert r.json()["kind"] == "Status"
    r = await admin.get(FAULTS_PATH)
    assert r.status_code == 200
    assert r.json()["items"] == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"kind": "latency", "seconds": 1}, "needs a bound", id="unbounded"),
        pytest.param({"kind": "error", "status": 500}, "needs a bound", id="unbounded-error"),
        pytest.param({"kind": "latency", "count": 1}, "needs seconds", id="no-seconds"),
        pytest.param({"kind": "error", "status": 404, "count": 1}, "status", id="bad-status"),
        pytest.param({"kind": "boom", "count": 1}, "kind must be", id="bad-kind"),
        pytest.param({"kind": "partition", "duration": 1}, "needs a user", id="no-user"),
        pytest.param({"kind": "latency", "seconds": 1, "count": 0}, "count", id="zero-count"),
        pytest.param({"kind": "compact", "bogus": 1}, "unknown field", id="unknown-field"),
    ],
)
@pytest.mark.asyncio
async def test_faults_invalid_or_unbounded_are_refused_with_422(
    admin: httpx.AsyncClient, spec: dict[str, Any], message: str
) -> None:
    r = await admin.post(FAULTS_PATH, json=spec)
    assert r.status_code == 422
    body = r.json()
    assert (body["kind"], body["reason"]) == ("Status", "Invalid")
    assert message in body["message"]
    assert await active(admin) == []


@pytest.mark.asyncio
async def test_faults_clear_one_by_id_and_all(admin: httpx.AsyncClient) -> None:
    a = await add(admin, kind="latency", seconds=5, verb="create", count=1)
    b = await add(admin, kind="error", status=500, verb="create", duration=60)
    assert await active(admin) == [a["id"], b["id"]]
    assert (await admin.get(f"{FAULTS_PATH}/{a['id']}")).json()["seconds"] == 5
    assert (await admin.delete(f"{FAULTS_PATH}/{a['id']}")).status_code == 200
    assert await active(admin) == [b["id"]]
    assert (await admin.delete(f"{FAULTS_PATH}/{a['id']}")).status_code == 404
    r = await admin.delete(FAULTS_PATH)
    assert r.json()["cleared"] == 1
    assert await active(admin) == []
    assert (await admin.post(CMS, json=cm("ok"))).status_code == 201


# ---------------------------------------------------------------- latency


@pytest.mark.asyncio
async def test_faults_latency_on_matching_requests_until_count_is_used(
    admin: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pycm.sim")
    fault = await add(
        admin, kind="latency", seconds=0.3, verb="list", resource="configmaps", count=2
    )
    assert f"pycm sim: fault {fault['id']} added: latency 0.3s on list configmaps (count 2)" in (
        caplog.messages
    )
    _, fast = await timed_get(admin, "/api/v1/namespaces/default/pods")  # not matched
    assert fast < 0.25
    for _ in range(2):
        r, took = await timed_get(admin, CMS)
        assert r.status_code == 200
        assert took >= 0.3
    _, after = await timed_get(admin, CMS)
    assert after < 0.25
    assert await active(admin) == []
    assert any("ended (count used up)" in m for m in caplog.messages)


@pytest.mark.asyncio
async def test_faults_latency_duration_bound_expires(admin: httpx.AsyncClient) -> None:
    await add(admin, kind="latency", seconds=0.2, duration=0.3)
    _, took = await timed_get(admin, CMS)
    assert took >= 0.2

    async def gone() -> bool:
        return await active(admin) == []

    await poll(gone, what="the fault to expire")
    _, took = await timed_get(admin, CMS)
    assert took < 0.15


@pytest.mark.asyncio
async def test_faults_latency_only_for_the_chosen_user(
    admin: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    await add(admin, kind="latency", seconds=0.3, user="bob", duration=30)
    _, took = await timed_get(admin, CMS)
    assert took < 0.25
    _, took = await timed_get(bob, CMS)
    assert took >= 0.3


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(500, "InternalError", id="500"),
        pytest.param(429, "TooManyRequests", id="429"),
        pytest.param(409, "Conflict", id="409"),
    ],
)
@pytest.mark.asyncio
async def test_faults_error_answers_a_proper_status(
    admin: httpx.AsyncClient, status: int, reason: str
) -> None:
    await add(
        admin,
        kind="error",
        status=status,
        verb="update",
        resource="configmaps",
        count=1,
        retryAfter=3,
    )
    created = (await admin.post(CMS, json=cm("c"))).json()
    r = await admin.put(f"{CMS}/c", json=created)
    assert r.status_code == status
    body = r.json()
    assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
    assert (body["reason"], body["code"]) == (reason, status)
    if status == 429:
        assert r.headers["Retry-After"] == "3"
        assert body["details"]["retryAfterSeconds"] == 3
    else:
        assert "Retry-After" not in r.headers
    if status == 409:
        assert body["details"]["name"] == "c"
    assert (await admin.put(f"{CMS}/c", json=created)).status_code == 200  # count used


@pytest.mark.asyncio
async def test_faults_error_rate_fails_a_fraction(admin: httpx.AsyncClient) -> None:
    await add(admin, kind="error", status=500, rate=0.5, verb="get", duration=30)
    await admin.post(CMS, json=cm("c"))
    codes = [(await admin.get(f"{CMS}/c")).status_code for _ in range(60)]
    assert set(codes) == {200, 500}
    assert 10 < codes.count(500) < 50


# ---------------------------------------------------------------- partition


@pytest.mark.asyncio
async def test_faults_partition_hangs_only_that_user_then_504(
    admin: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    await add(admin, kind="partition", user="bob", hold=0.4, duration=30)
    held = asyncio.create_task(timed_get(bob, CMS))
    for _ in range(3):  # the admin is served meanwhile
        r, took = await timed_get(admin, CMS)
        assert r.status_code == 200
        assert took < 0.3
    assert not held.done()
    r, took = await held
    assert took >= 0.4
    assert r.status_code == 504
    assert (r.json()["reason"], r.json()["code"]) == ("Timeout", 504)


@pytest.mark.asyncio
async def test_faults_partition_cleared_releases_held_requests(
    admin: httpx.AsyncClient, bob: httpx.AsyncClient, femu: Emulator
) -> None:
    fault = await add(admin, kind="partition", user="bob", duration=30)
    held = asyncio.create_task(timed_get(bob, CMS))

    async def hanging() -> bool:
        return femu.faults.active[0].hits == 1

    await poll(hanging, what="bob's request to hang")
    assert (await admin.delete(f"{FAULTS_PATH}/{fault['id']}")).status_code == 200
    r, _ = await held
    assert r.status_code == 200


# ---------------------------------------------------------------- watches and history


@pytest.mark.asyncio
async def test_faults_drop_watches_ends_open_watches(admin: httpx.AsyncClient) -> None:
    await admin.post(CMS, json=cm("w"))
    lines: list[dict[str, Any]] = []
    async with admin.stream("GET", f"{CMS}?watch=1") as stream:
        lines_iter = stream.aiter_lines()
        lines.append(orjson.loads(await anext(lines_iter)))
        result = await add(admin, kind="drop-watches")
        assert result["result"]["dropped"] >= 1
        async with asyncio.timeout(5):
            rest = [line async for line in lines_iter]
    assert lines[0]["type"] == "ADDED"
    assert rest == []
    assert await active(admin) == []  # an action, never active


@pytest.mark.asyncio
async def test_faults_compact_makes_old_watches_410(admin: httpx.AsyncClient) -> None:
    old = (await admin.post(CMS, json=cm("a"))).json()["metadata"]["resourceVersion"]
    await admin.post(CMS, json=cm("b"))
    result = await add(admin, kind="compact")
    assert int(result["result"]["compactedResourceVersion"]) > int(old)
    r = await admin.get(f"{CMS}?watch=1&resourceVersion={old}")
    event = orjson.loads(r.text.splitlines()[0])
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


# ---------------------------------------------------------------- kubelet


@pytest.mark.asyncio
async def test_faults_pause_kubelet_until_cleared(admin: httpx.AsyncClient, femu: Emulator) -> None:
    fault = await add(admin, kind="pause-kubelet", duration=30)
    assert femu.kubelet is not None and femu.kubelet.paused
    await admin.post("/api/v1/namespaces/default/pods", json=pod("p"))
    await asyncio.sleep(0.1)  # the kubelet would bind at once (instant mode) were it running
    got = (await admin.get("/api/v1/namespaces/default/pods/p")).json()
    assert "nodeName" not in got["spec"]
    await admin.delete(f"{FAULTS_PATH}/{fault['id']}")
    assert not femu.kubelet.paused

    async def ready() -> bool:
        body = (await admin.get("/api/v1/namespaces/default/pods/p")).json()
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in body["status"].get("conditions", [])
        )

    await poll(ready, what="the pod to become Ready after the resume")


@pytest.mark.asyncio
async def test_faults_pause_kubelet_duration_expires_and_resume_action(
    admin: httpx.AsyncClient, femu: Emulator
) -> None:
    await add(admin, kind="pause-kubelet", duration=0.2)
    assert femu.kubelet is not None and femu.kubelet.paused

    async def resumed() -> bool:
        return not femu.kubelet.paused  # type: ignore[union-attr]

    await poll(resumed, what="the pause to expire")
    await add(admin, kind="pause-kubelet", count=1, duration=30)
    assert femu.kubelet.paused
    await add(admin, kind="resume-kubelet")
    assert not femu.kubelet.paused
    assert await active(admin) == []


@pytest.mark.asyncio
async def test_faults_python_api_add_and_clear() -> None:
    async with run_emulator(tls=False, kubelet=False) as emu:
        fault = emu.faults.add(kind="error", status=429, retry_after=2, count=1)
        assert [f.id for f in emu.faults.active] == [fault.id]
        assert (
            fault.describe() == "error 429 TooManyRequests at rate 1.0 on every verb every "
            "resource (count 1)"
        )
        with pytest.raises(Exception, match="kubelet"):
            emu.faults.add(kind="pause-kubelet", duration=1)
        assert emu.faults.clear() == 1
        assert emu.faults.active == []


# ---------------------------------------------------------------- through the kubernetes client


@pytest.fixture(scope="module")
def proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    tmp = tmp_path_factory.mktemp("faults")
    process = start_sim(
        ["--tls=false", "--kubelet=off", "--kubeconfig-out", str(tmp / "kubeconfig")], tmp
    )
    yield process
    assert stop_sim(process) == 0


@pytest.fixture(scope="module")
def kube(proc: SimProcess) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(proc.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def faults(proc: SimProcess, kube: client.ApiClient) -> Iterator[httpx.Client]:
    kubeconfig = yaml.safe_load(proc.kubeconfig.read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    with httpx.Client(
        base_url=proc.url, headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as c:
        yield c
        c.delete(FAULTS_PATH)


def test_faults_client_sees_latency(kube: client.ApiClient, faults: httpx.Client) -> None:
    core = client.CoreV1Api(kube)
    assert (
        faults.post(
            FAULTS_PATH,
            json={
                "kind": "latency",
                "seconds": 0.3,
                "verb": "list",
                "resource": "namespaces",
                "count": 1,
            },
        ).status_code
        == 201
    )
    start = time.perf_counter()
    core.list_namespace()
    assert time.perf_counter() - start >= 0.3
    start = time.perf_counter()
    core.list_namespace()
    assert time.perf_counter() - start < 0.25


@pytest.mark.parametrize("status", [500, 409])
def test_faults_client_gets_the_error(
    kube: client.ApiClient, faults: httpx.Client, status: int
) -> None:
    spec = {"kind": "error", "status": status, "resource": "namespaces", "count": 1}
    assert faults.post(FAULTS_PATH, json=spec).status_code == 201
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(kube).read_namespace("default")
    assert err.value.status == status
    body = orjson.loads(err.value.body)
    assert body["kind"] == "Status" and body["code"] == status


def test_faults_client_honours_retry_after_on_429(
    kube: client.ApiClient, faults: httpx.Client
) -> None:
    # urllib3 (under the kubernetes client) retries a 429 after its Retry-After.
    spec = {"kind": "error", "status": 429, "resource": "namespaces", "count": 1}
    assert faults.post(FAULTS_PATH, json=spec).status_code == 201
    start = time.perf_counter()
    ns = client.CoreV1Api(kube).read_namespace("default")
    assert ns.metadata.name == "default"
    assert time.perf_counter() - start >= 1.0
    assert faults.get(FAULTS_PATH).json()["items"] == []  # the one 429 was answered


def test_faults_client_watch_is_dropped(kube: client.ApiClient, faults: httpx.Client) -> None:
    core = client.CoreV1Api(kube)
    w = watch.Watch()
    start = time.perf_counter()
    stream = w.stream(core.list_namespace, timeout_seconds=30)
    first = next(stream)
    assert first["type"] == "ADDED"
    assert faults.post(FAULTS_PATH, json={"kind": "drop-watches"}).json()["result"]["dropped"] >= 1
    rest = list(stream)  # ends: the server closed the stream
    assert len(rest) == 3  # the other namespaces' initial ADDED events were already sent
    assert time.perf_counter() - start < 10


def test_faults_client_watch_from_compacted_version_gets_410(
    kube: client.ApiClient, faults: httpx.Client
) -> None:
    core = client.CoreV1Api(kube)
    rv = core.list_namespace().metadata.resource_version
    core.create_namespaced_config_map("default", cm("after"))
    faults.post(FAULTS_PATH, json={"kind": "compact"})
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            pass
    assert err.value.status == 410


def test_faults_client_partitioned_user_times_out(
    proc: SimProcess, kube: client.ApiClient, faults: httpx.Client
) -> None:
    spec = {"kind": "partition", "user": "admin", "hold": 0.3, "count": 1}
    assert faults.post(FAULTS_PATH, json=spec).status_code == 201
    start = time.perf_counter()
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(kube).read_namespace("default")
    assert err.value.status == 504
    assert time.perf_counter() - start >= 0.3
    client.CoreV1Api(kube).read_namespace("default")  # the count is used: served again
