"""Warm standbys (--leader-elect-warm-standby) in-process against the emulator, over HTTP.

A Lease held by another identity keeps the manager a standby. Warm, its replicaset controller's
informers list and watch at once — /readyz's informers check fails until they sync, the
handlers fill the queue (a ReplicaSet created meanwhile too) — and nothing it sends is a write.
When the Lease goes away it takes over: the workers reconcile what waits (each ReplicaSet gets
its pods) with no new list of pods or ReplicaSets (initial lists counted in the emulator's
request log: a collection GET that is no watch, or a watch with sendInitialEvents). Cold (the
default), a standby reads neither resource, and the takeover lists both first. The flag: a
bool, off by default, whose help says it is pycm's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from starlette.requests import Request
from starlette.responses import Response

from pycm.app.options import ControllerManagerOptions
from pycm.app.options.help import flag_usages
from pycm.app.run import Manager
from pycm.kube import LEASES, Client, load_config
from pycm.kube.resources import PODS, REPLICASETS
from pycm.sim.server import Emulator, run_emulator
from pycm.trace.bus import Bus, Subscription
from pycm.trace.events import Event
from pycm.trace.kinds import (
    ControllerStarted,
    ControllersTookOver,
    InformersStarted,
    InformerSynced,
    LeaseAcquireAttempted,
)
from pycm.trace.state import State
from tests.app.leases import lease_held_by_another
from tests.support.manifests import workload

NAMESPACE = "default"
WATCHED = ("/api/v1/pods", "/apis/apps/v1/replicasets")
TEST_AGENT = "warm-standby-test"  # the test's own requests (the manager's are pycm's)


@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]

    @property
    def write(self) -> bool:
        # Lease calls are the election's own (a standby's reads; the takeover's write).
        return self.method not in ("GET", "HEAD") and "/leases" not in self.path

    @property
    def initial_list(self) -> bool:
        """A list of pods or ReplicaSets: a paged list, or a streaming one (WatchList)."""
        if not self.path.endswith(WATCHED) or self.method != "GET":
            return False
        watch = self.query.get("watch") in ("1", "true")
        return not watch or self.query.get("sendInitialEvents") == "true"


@dataclass
class Rig:
    emu: Emulator
    api: Client
    requests: list[Seen] = field(default_factory=list)


@pytest_asyncio.fixture
async def rig() -> AsyncIterator[Rig]:
    async with run_emulator(tls=False, kubelet=False) as emu:
        config = await load_config(str(emu.kubeconfig_path), user_agent=TEST_AGENT)
        async with await Client.connect(config) as api:
            rig = Rig(emu, api)

            async def record(request: Request) -> Response | None:
                if request.headers.get("user-agent") != TEST_AGENT:
                    seen = Seen(request.method, request.url.path, dict(request.query_params))
                    rig.requests.append(seen)
                return None

            emu.before_request.insert(0, record)
            yield rig


def _manager(kubeconfig: str, bus: Bus, *, warm: bool) -> Manager:
    options = ControllerManagerOptions()
    argv = [
        f"--kubeconfig={kubeconfig}",
        "--secure-port=0",
        "--controllers=replicaset",
        "--identity=standby",
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1.5s",
        "--leader-elect-retry-period=0.5s",
    ]
    if warm:
        argv.append("--leader-elect-warm-standby")
    assert options.parse(argv) == [] and options.validate() == []
    return Manager(options.config().complete(), bus=bus)


class Events:
    """The manager's events of a few kinds, kept as they come."""

    def __init__(self, sub: Subscription) -> None:
        self.sub = sub
        self.seen: list[Event] = []

    async def wait(self, kind: type[Event], count: int) -> list[Any]:
        """Wait until ``count`` events of ``kind`` came (at most 10 s); all of them so far."""
        async with asyncio.timeout(10):
            while len(self.of(kind)) < count:
                await self.sub.wait()
                self.seen += self.sub.drain()
        return self.of(kind)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.seen if isinstance(e, kind)]


async def _readyz_informers(manager: Manager) -> str | None:
    (check,) = [c for c in manager.health.checks("readyz") if c.name == "informers-synced"]
    return await manager.health.run(check, "readyz")


async def _pods(rig: Rig, count: int) -> None:
    async with asyncio.timeout(15):
        while len((await rig.api.list(PODS, namespace=NAMESPACE))["items"]) < count:
            await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("argv", "warm"),
    [
        pytest.param([], False, id="default-off"),
        pytest.param(["--leader-elect-warm-standby"], True, id="given"),
        pytest.param(["--leader-elect-warm-standby=false"], False, id="false"),
    ],
)
def test_warm_standby_flag_parses_as_a_bool_off_by_default(argv: list[str], warm: bool) -> None:
    options = ControllerManagerOptions()
    assert options.parse(argv) == [] and options.validate() == []
    assert options.config().complete(identity="x").leader_election.warm_standby is warm


def test_warm_standby_flag_help_says_kcm_has_none_and_names_controller_runtimes() -> None:
    options = ControllerManagerOptions()
    assert options.parse([]) == []
    usage = flag_usages(options.flag_sets.flag_set("Leader election"), cols=1000)
    (line,) = [line for line in usage.splitlines() if "--leader-elect-warm-standby" in line]
    assert "KCM has no such flag" in line and "EnableWarmup" in line, line


@pytest.mark.asyncio
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
async def test_standby_writes_nothing_then_takes_over_warm_without_a_list_cold_with_one(
    rig: Rig, warm: bool
) -> None:
    await rig.api.create(LEASES, lease_held_by_another(), namespace="kube-system")
    await rig.api.create(REPLICASETS, workload("ReplicaSet", "before", 2), namespace=NAMESPACE)
    bus = Bus()
    watched = ("informers.started", "lease.acquire_attempt", "controllers.took_over")
    events = Events(bus.subscribe(name="test", maxsize=4096, since=0, kinds=watched))
    manager = _manager(str(rig.emu.kubeconfig_path), bus, warm=warm)
    # The pods' list answers late: a warm standby is unready until it is in.
    rig.emu.faults.add(kind="latency", seconds=1.0, resource="pods", duration=3)
    run = asyncio.ensure_future(manager.run())
    try:
        # A standby: its acquire attempts fail while another holds the lease.
        await events.wait(LeaseAcquireAttempted, 1)
        if warm:
            (started,) = await events.wait(InformersStarted, 1)
            assert started.standby and started.informers == 2
            assert "pods" in str(await _readyz_informers(manager))
            ctx = manager.context
            assert ctx is not None
            informers = [i for _, i in ctx.informer_factory.informers.items()]
            async with asyncio.timeout(10):
                for informer in informers:
                    await informer.wait_synced()
            assert await _readyz_informers(manager) is None
            # A change while standing by: cached and queued, not acted on.
            await rig.api.create(
                REPLICASETS, workload("ReplicaSet", "during", 2), namespace=NAMESPACE
            )
            queue = ctx.queues["replicaset"].queue
            async with asyncio.timeout(10):
                while len(queue) < 2:
                    await asyncio.sleep(0.02)
            # What pycm top and the dashboard fold from the trace: synced while a standby.
            state = State()
            for event in bus.recent():
                state.apply(event)
            snap = state.snapshot()
            assert snap["instances"]["standby"]["role"] == "standby"
            synced = [i["synced"] for i in snap["informers"].get("standby", {}).values()]
            assert synced == [True, True], snap["informers"]
        else:
            assert manager.context is None  # nothing built, nothing watched
            assert await _readyz_informers(manager) is None
            await rig.api.create(
                REPLICASETS, workload("ReplicaSet", "during", 2), namespace=NAMESPACE
            )
        # Two more failed attempts (a retry period each): the standby still writes nothing.
        await events.wait(LeaseAcquireAttempted, 3)
        assert [s for s in rig.requests if s.write] == []
        lists_standing_by = [s.path for s in rig.requests if s.initial_list]
        if warm:
            assert sorted(lists_standing_by) == sorted(WATCHED), lists_standing_by
        else:
            assert not [s for s in rig.requests if s.path.endswith(WATCHED)]
        assert manager.elector is not None and not manager.elector.gate.is_open()

        # The leader goes away: the standby takes the lease and reconciles.
        taken_at = len(rig.requests)
        await rig.api.delete(LEASES, "pycm", namespace="kube-system")
        (took_over,) = await events.wait(ControllersTookOver, 1)
        await _pods(rig, 4)
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
    after = rig.requests[taken_at:]
    lists_after = sorted(s.path for s in after if s.initial_list)
    if warm:
        assert (took_over.warm, took_over.informers, took_over.synced) == (True, 2, 2)
        assert took_over.queued >= 2  # both ReplicaSets waited in the queue
        assert lists_after == []
    else:
        assert (took_over.warm, took_over.queued) == (False, 0)
        assert lists_after == sorted(WATCHED)
    created = [s for s in after if s.write and s.path.endswith("/pods")]
    assert len(created) == 4


@pytest.mark.asyncio
async def test_warm_standby_stopped_before_leading_exits_0_having_written_nothing(
    rig: Rig,
) -> None:
    await rig.api.create(LEASES, lease_held_by_another(), namespace="kube-system")
    bus = Bus()
    events = Events(bus.subscribe(name="test", maxsize=4096, since=0, kinds=["informer.synced"]))
    manager = _manager(str(rig.emu.kubeconfig_path), bus, warm=True)
    run = asyncio.ensure_future(manager.run())
    try:
        await events.wait(InformerSynced, 2)  # pods and ReplicaSets, while standing by
    finally:
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
    # Not even a lease release: it never held the lease.
    assert [(s.method, s.path) for s in rig.requests if s.method not in ("GET", "HEAD")] == []
    assert [e.controller for e in bus.recent() if isinstance(e, ControllerStarted)] == []
