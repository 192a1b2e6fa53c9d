"""Write fencing: a client with a fence (the leader elector's renew gate) sends a mutating
request only while the gate is open, checked before each send — retries included — and again
as its headers and its body are about to be written (against the emulator, over a real
connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from pycm.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    Client,
    FencedError,
    load_config,
)
from pycm.leaderelection.gate import RenewGate
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus
from tests.kube.conftest import AutoClock, Recorder, api_events, status

MakeClient = Callable[..., Client]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "ns"}}
RENEW_DEADLINE = 1.5


async def _create(c: Client) -> Any:
    return await c.create(PODS, POD)


async def _update(c: Client) -> Any:
    return await c.update(PODS, POD)


async def _update_status(c: Client) -> Any:
    return await c.update_status(REPLICASETS, RS)


async def _patch(c: Client) -> Any:
    return await c.patch(PODS, "p", {"metadata": {"labels": {"a": "b"}}}, namespace="ns")


async def _delete(c: Client) -> Any:
    return await c.delete(PODS, "p", namespace="ns")


async def _delete_collection(c: Client) -> Any:
    return await c.delete_collection(PODS, namespace="ns", label_selector="app=web")


async def _update_scale(c: Client) -> Any:
    return await c.update_scale(DEPLOYMENTS, "d", {"spec": {"replicas": 2}}, namespace="ns")


async def _raw_post(c: Client) -> Any:
    return await c.request("POST", "/api/v1/namespaces/ns/pods", content=b"{}")


WRITES = [
    pytest.param(_create, "create", "pods", id="create"),
    pytest.param(_update, "update", "pods", id="update"),
    pytest.param(_update_status, "update", "replicasets", id="update-status"),
    pytest.param(_patch, "patch", "pods", id="patch"),
    pytest.param(_delete, "delete", "pods", id="delete"),
    pytest.param(_delete_collection, "deletecollection", "pods", id="delete-collection"),
    pytest.param(_update_scale, "update", "deployments", id="update-scale"),
    pytest.param(_raw_post, "post", "", id="raw-post"),
]


@pytest.fixture
def gate(clock: AutoClock) -> RenewGate:
    gate = RenewGate(clock, RENEW_DEADLINE)
    gate.renewed(clock.monotonic())
    return gate


def _fenced_count(registry: CollectorRegistry, verb: str, resource: str) -> float | None:
    labels = {"verb": verb, "resource": resource}
    return registry.get_sample_value("pycm_fenced_writes_total", labels)


@pytest.mark.parametrize(("call", "verb", "resource"), WRITES)
@pytest.mark.asyncio
async def test_fenced_client_write_with_stale_renew_is_refused_unsent_counted_and_traced(
    make_client: MakeClient,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    clock: AutoClock,
    gate: RenewGate,
    call: Callable[[Client], Any],
    verb: str,
    resource: str,
) -> None:
    client = make_client().with_fence(gate)
    clock.advance(RENEW_DEADLINE)  # the renew is exactly the deadline old: closed
    with pytest.raises(FencedError) as info:
        await call(client)
    assert recorder.requests == []
    assert "last lease renew 1.500s ago, renew deadline 1.5s" in str(info.value)
    assert (info.value.age, info.value.renew_deadline) == (pytest.approx(1.5), 1.5)
    assert _fenced_count(registry, verb, resource) == 1.0
    (event,) = api_events(bus)
    assert (event.verb, event.code, event.fenced) == (verb, 0, True)
    assert event.error.startswith("FencedError: ")


@pytest.mark.parametrize(("call", "verb", "resource"), WRITES)
@pytest.mark.asyncio
async def test_fenced_client_write_with_fresh_renew_is_sent(
    make_client: MakeClient,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    clock: AutoClock,
    gate: RenewGate,
    call: Callable[[Client], Any],
    verb: str,
    resource: str,
) -> None:
    client = make_client().with_fence(gate)
    clock.advance(RENEW_DEADLINE - 0.001)
    await call(client)
    assert len(recorder.requests) == 1
    assert _fenced_count(registry, verb, resource) is None
    (event,) = api_events(bus)
    assert (event.code, event.fenced) == (200, False)


@pytest.mark.asyncio
async def test_fenced_client_when_not_leading_says_so(
    make_client: MakeClient, recorder: Recorder, gate: RenewGate
) -> None:
    gate.close()
    with pytest.raises(FencedError, match="create pods refused: not leading, renew deadline"):
        await make_client().with_fence(gate).create(PODS, POD)
    assert recorder.requests == []


@pytest.mark.asyncio
async def test_fenced_client_reads_are_never_fenced(
    make_client: MakeClient, recorder: Recorder, clock: AutoClock, gate: RenewGate
) -> None:
    client = make_client().with_fence(gate)
    gate.close()
    await client.get(PODS, "p", namespace="ns")
    recorder.default = lambda _: httpx.Response(200, json={"items": [], "metadata": {}})
    await client.list(PODS, namespace="ns")
    await client.get_scale(DEPLOYMENTS, "d", namespace="ns")
    assert [r.method for r in recorder.requests] == ["GET", "GET", "GET"]


@pytest.mark.asyncio
async def test_fenced_client_retry_after_the_renew_deadline_is_refused(
    make_client: MakeClient,
    recorder: Recorder,
    bus: Bus,
    registry: CollectorRegistry,
    clock: AutoClock,
    gate: RenewGate,
) -> None:
    # The first attempt leaves with a fresh renew; the server asks it to come back in 2 s,
    # past the 1.5 s deadline: the retry is not sent (the check is per send, not per call).
    throttled = status(429, "TooManyRequests")
    throttled.headers["Retry-After"] = "2"
    recorder.responses.append(throttled)
    with pytest.raises(FencedError):
        await make_client().with_fence(gate).create(PODS, POD)
    assert len(recorder.requests) == 1
    assert clock.slept == [2.0]
    assert _fenced_count(registry, "create", "pods") == 1.0
    (event,) = api_events(bus)
    assert (event.retries, event.code, event.fenced) == (1, 429, True)


@pytest.mark.asyncio
async def test_fenced_client_sibling_without_fence_still_writes(
    make_client: MakeClient, recorder: Recorder, clock: AutoClock, gate: RenewGate
) -> None:
    # The event recorder's client: the same connections and credentials, never fenced.
    plain = make_client()
    fenced = plain.with_fence(gate)
    assert plain.fence is None and fenced.fence is gate
    gate.close()
    await plain.create(PODS, POD)
    with pytest.raises(FencedError):
        await fenced.create(PODS, POD)
    assert len(recorder.requests) == 1
    assert fenced.config.user_agent == plain.config.user_agent
    # A client derived from a fenced one (a plugin's own user agent) stays fenced.
    derived = fenced.with_user_agent("plugin/1.0")
    assert derived.fence is gate
    with pytest.raises(FencedError):
        await derived.create(PODS, POD)


class _ScriptedFence:
    """Open for the first ``opens`` checks, closed after: a pause landing between them."""

    renew_deadline = RENEW_DEADLINE

    def __init__(self, opens: int) -> None:
        self.opens = opens
        self.checks = 0

    def is_open(self) -> bool:
        self.checks += 1
        return self.checks <= self.opens

    def age(self) -> float | None:
        return 2.0


@pytest_asyncio.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator(tls=False, kubelet=False, nodes=0) as e:
        yield e


@pytest.mark.parametrize(
    ("opens", "created"),
    [
        # Closed when the headers are about to be written: nothing leaves.
        pytest.param(1, False, id="closed-before-headers"),
        # Closed between headers and body: the server never gets a whole request.
        pytest.param(2, False, id="closed-before-body"),
        pytest.param(3, True, id="open-throughout"),
    ],
)
@pytest.mark.asyncio
async def test_fenced_client_checks_again_at_the_moment_the_request_is_written(
    emu: Emulator, opens: int, created: bool
) -> None:
    config = await load_config(str(emu.kubeconfig_path), qps=-1)
    registry = CollectorRegistry()
    async with await Client.connect(config, bus=Bus(), registry=registry) as plain:
        fence = _ScriptedFence(opens)
        client = plain.with_fence(fence)
        cm = {"metadata": {"name": "fenced", "namespace": "default"}, "data": {"a": "1"}}
        if created:
            await client.create(CONFIGMAPS, cm)
        else:
            with pytest.raises(FencedError):
                await client.create(CONFIGMAPS, cm)
        assert fence.checks == 3 if created else opens + 1
        names = [c["metadata"]["name"] for c in (await plain.list(CONFIGMAPS))["items"]]
        assert ("fenced" in names) is created
        fenced = _fenced_count(registry, "create", "configmaps")
        assert fenced == (None if created else 1.0)
        # The connection a refused write was aborted on is not reused: the next request works.
        await plain.create(CONFIGMAPS, {**cm, "metadata": {**cm["metadata"], "name": "after"}})
