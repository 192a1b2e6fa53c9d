"""The emulator answers hostile requests as kube-apiserver does: bodies over 3 MiB (413, found
while reading), YAML aliases (refused, fast), media types it does not take (415), malformed
resourceVersions and continue tokens (400 Status), and a watch history bounded in bytes as well as
in events. Unknown fields (pruned, with warnings) are tests/sim/test_pruning.py's."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio
from starlette.requests import Request

from pycm.sim.errors import APIError
from pycm.sim.history import History
from pycm.sim.seed import seed_cluster
from pycm.sim.server import Emulator, run_emulator
from pycm.sim.store import Store
from pycm.sim.watch import StoreEvent
from pycm.util.clock import FakeClock

CMS = "/api/v1/namespaces/default/configmaps"
LIMIT = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    # Explicit options: the tests do not depend on the emulator's defaults.
    async with run_emulator(tls=False, kubelet=False, nodes=1, watch_window=50) as emulator:
        yield emulator


def _status(r: httpx.Response, code: int, reason: str) -> dict[str, Any]:
    assert r.status_code == code, r.text[:300]
    body: dict[str, Any] = r.json()
    assert (body["kind"], body["status"], body["code"], body["reason"]) == (
        "Status",
        "Failure",
        code,
        reason,
    ), body
    return body


def _configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


# ---------------------------------------------------------------- size


@pytest.mark.asyncio
async def test_sim_body_over_3mib_is_413_and_not_stored(
    http: httpx.AsyncClient, emu: Emulator
) -> None:
    big = _configmap("big", data={"k": "x" * (10 * 1024 * 1024)})
    r = await http.post(
        CMS, content=orjson.dumps(big), headers={"Content-Type": "application/json"}
    )
    body = _status(r, 413, "RequestEntityTooLarge")
    assert body["message"] == f"Request entity too large: limit is {LIMIT}"
    assert (await http.get(f"{CMS}/big")).status_code == 404
    # Just under the limit is read (and judged on its merits).
    fits = _configmap("fits", data={"k": "x" * (LIMIT - 200)})
    r = await http.post(
        CMS, content=orjson.dumps(fits), headers={"Content-Type": "application/json"}
    )
    assert r.status_code != 413


@pytest.mark.asyncio
async def test_sim_read_body_stops_reading_once_over_the_limit() -> None:
    """Without a Content-Length (chunked), the body is counted as it arrives: reading stops at
    the first chunk past the limit, the rest is never pulled."""
    from pycm.sim.bodies import MAX_REQUEST_BODY_BYTES, read_body

    assert MAX_REQUEST_BODY_BYTES == LIMIT
    pulled = 0
    chunk = b"x" * (256 * 1024)

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": chunk, "more_body": pulled < 400}  # 100 MiB

    request = Request({"type": "http", "method": "POST", "headers": []}, receive)
    with pytest.raises(APIError) as err:
        await read_body(request)
    assert err.value.code == 413
    assert pulled == LIMIT // len(chunk) + 1


# ---------------------------------------------------------------- YAML aliases

# The classic "billion laughs": 9 levels of 9 aliases each stand for 9^9 strings.
BILLION_LAUGHS = (
    b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\nx:\n"
    b' a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    b" b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b" d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    b" f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    b" h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
)
# Five levels (59k strings): what the before-the-fix check can afford to run.
FIVE_LAUGHS = BILLION_LAUGHS.split(b" f: ")[0] + b"\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body", [pytest.param(BILLION_LAUGHS, id="nine-levels"), pytest.param(FIVE_LAUGHS, id="five")]
)
async def test_sim_yaml_aliases_are_refused_fast(http: httpx.AsyncClient, body: bytes) -> None:
    assert len(BILLION_LAUGHS) < 520
    start = time.monotonic()
    r = await http.post(CMS, content=body, headers={"Content-Type": "application/yaml"})
    elapsed = time.monotonic() - start
    status = _status(r, 400, "BadRequest")
    assert "YAML aliases are not supported" in status["message"]
    assert elapsed < 2.0
    assert (await http.get(f"{CMS}/lol")).status_code == 404


@pytest.mark.asyncio
async def test_sim_yaml_without_aliases_is_accepted(http: httpx.AsyncClient) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {k: v}\n"
    r = await http.post(CMS, content=body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"k": "v"}


# ---------------------------------------------------------------- media types


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "path", "media"),
    [
        pytest.param("POST", CMS, "text/plain", id="create-text-plain"),
        pytest.param("POST", CMS, "application/vnd.kubernetes.protobuf", id="create-protobuf"),
        pytest.param("POST", CMS, "application/merge-patch+json", id="create-patch-type"),
        pytest.param("PUT", f"{CMS}/m", "text/plain", id="update-text-plain"),
        pytest.param("PATCH", f"{CMS}/m", "text/plain", id="patch-text-plain"),
        pytest.param("PATCH", f"{CMS}/m", "application/json", id="patch-plain-json"),
    ],
)
async def test_sim_unsupported_content_type_is_415(
    http: httpx.AsyncClient, method: str, path: str, media: str
) -> None:
    await http.post(CMS, json=_configmap("m"))
    content = orjson.dumps(_configmap("m" if "/m" in path else "new", data={"a": "b"}))
    r = await http.request(method, path, content=content, headers={"Content-Type": media})
    body = _status(r, 415, "UnsupportedMediaType")
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: "
    )
    assert (await http.get(f"{CMS}/new")).status_code == 404
    assert (await http.get(f"{CMS}/m")).json().get("data") is None


@pytest.mark.asyncio
async def test_sim_body_without_content_type_is_json(http: httpx.AsyncClient) -> None:
    r = await http.post(CMS, content=orjson.dumps(_configmap("bare")))
    assert r.status_code == 201, r.text


# ---------------------------------------------------------------- versions and continue


def _token(rv: str) -> str:
    """A continue token in the emulator's format with ``rv`` as written (any size)."""
    raw = b'{"v":"sim/1","rv":' + rv.encode() + b',"start":["default","a"]}'
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"watch": "1", "resourceVersion": "-5"}, id="watch-negative"),
        pytest.param({"watch": "1", "resourceVersion": "zzz"}, id="watch-text"),
        pytest.param({"resourceVersion": "zzz"}, id="list-text"),
        pytest.param({"resourceVersion": "-1"}, id="list-negative"),
        pytest.param({"resourceVersion": "1e3"}, id="list-exponent"),
        pytest.param({"resourceVersion": "18446744073709551616"}, id="list-past-uint64"),
        pytest.param({"limit": "1", "continue": "not-a-token"}, id="continue-garbage"),
        pytest.param(
            {"limit": "1", "continue": _token("1" + "0" * 30)},
            id="continue-huge-rv",
        ),
        pytest.param(
            {"limit": "1", "continue": _token(str(2**62))},
            id="continue-future-rv",
        ),
        pytest.param(
            {"limit": "1", "continue": _token("-3")},
            id="continue-negative-rv",
        ),
    ],
)
async def test_sim_bad_resource_version_or_continue_is_400_status(
    http: httpx.AsyncClient, params: dict[str, str]
) -> None:
    r = await http.get(CMS, params=params)
    body = _status(r, 400, "BadRequest")
    assert "resourceVersion" in body["message"] or "continue key is not valid" in body["message"]


@pytest.mark.asyncio
async def test_sim_get_with_bad_resource_version_is_400(http: httpx.AsyncClient) -> None:
    await http.post(CMS, json=_configmap("g"))
    _status(await http.get(f"{CMS}/g", params={"resourceVersion": "abc"}), 400, "BadRequest")
    assert (await http.get(f"{CMS}/g", params={"resourceVersion": "0"})).status_code == 200


# ---------------------------------------------------------------- history in bytes


def _event(rv: int, size: int) -> StoreEvent:
    return StoreEvent("ADDED", ("", "v1", "configmaps"), {"rv": rv}, None, rv)


def test_history_bytes_bound_drops_oldest_and_expires_their_versions() -> None:
    history = History(window=1000, max_bytes=100)
    for rv in range(1, 11):
        history.append(_event(rv, 30), 30)
    assert len(history) == 3 and history.bytes == 90
    assert history.compacted_rv == 7
    assert [e.rv for e in history.since(7)] == [8, 9, 10]
    with pytest.raises(APIError) as err:
        history.since(6)
    assert err.value.code == 410
    history.append(_event(11, 500), 500)  # larger than the bound: only the newest is kept
    assert len(history) == 1 and history.compacted_rv == 10


def test_store_history_bounded_in_bytes_under_large_objects() -> None:
    store = Store(clock=FakeClock(), watch_window=10_000, watch_history_bytes=1_000_000)
    seed_cluster(store, 1)
    cms = store.resource("configmaps")
    for i in range(200):  # 200 x ~50 KB = 10 MB of objects through the history
        store.create(cms, {"metadata": {"name": f"c{i}"}, "data": {"k": "x" * 50_000}}, "default")
    assert store._history.bytes <= 1_000_000
    # Each event counts its held encoding (~50 KB) and as much again for its object's dict.
    assert 7 <= len(store._history) <= 10


# ---------------------------------------------------------------- object size, logged text


@pytest.mark.asyncio
async def test_sim_configmap_over_1mib_is_invalid(http: httpx.AsyncClient) -> None:
    big = _configmap("mib", data={"a": "x" * (600 * 1024), "b": "y" * (600 * 1024)})
    status = _status(await http.post(CMS, json=big), 422, "Invalid")
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 1048576 bytes",
            "field": "[]",
        }
    ]
    assert (await http.post(CMS, json=_configmap("ok", data={"a": "x" * 1000}))).status_code == 201


@pytest.mark.asyncio
async def test_sim_fault_log_line_escapes_client_text(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    from pycm.sim.faults import FAULTS_PATH

    spec = {"kind": "latency", "seconds": 0.01, "count": 1, "user": "eve\nI1203 forged\x1b[2J"}
    with caplog.at_level(logging.INFO, logger="pycm.sim"):
        r = await http.post(FAULTS_PATH, json=spec)
        assert r.status_code == 201, r.text
    added = [r.getMessage() for r in caplog.records if "fault" in r.getMessage()]
    assert added and all("\n" not in m and "\x1b" not in m for m in added)
    assert any("user eve\\nI1203 forged\\x1b[2J" in m for m in added)


# ---------------------------------------------------------------- event TTL


def _k8s_event(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Test",
        "message": "m",
        "type": "Normal",
    }


def test_store_events_expire_event_ttl_after_their_last_write() -> None:
    clock = FakeClock()
    store = Store(clock=clock, event_ttl=60.0)
    seed_cluster(store, 1)
    events, cms = store.resource("events"), store.resource("configmaps")
    store.create(events, _k8s_event("old"), "default")
    clock.advance(50)
    store.create(events, _k8s_event("kept"), "default")
    touched = store.create(events, _k8s_event("touched"), "default")
    clock.advance(11)  # "old" is 61 s old; the other two 11 s
    store.update(events, {**touched, "count": 2}, "default")  # a write restarts its TTL
    assert store.peek(events, "default", "old") is None
    assert store.peek(events, "default", "kept") is not None
    clock.advance(55)  # "kept" 66 s after its write; "touched" 55 s after its last
    store.create(cms, {"metadata": {"name": "tick"}}, "default")
    assert store.peek(events, "default", "kept") is None
    assert store.peek(events, "default", "touched") is not None
