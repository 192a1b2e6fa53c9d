"""The simulated kubelet on an in-process store and a FakeClock (no sleeps)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio

from pycm.sim.gc import DeleteOptions
from pycm.sim.kubelet import CRASHLOOP, NORMAL, UNREADY, Kubelet, KubeletOptions
from pycm.sim.seed import seed_cluster
from pycm.sim.server import run_emulator
from pycm.sim.store import Store
from pycm.util.clock import FakeClock
from tests.sim.conftest import pod


async def until(predicate: Callable[[], Any], what: str = "condition") -> Any:
    """Let the loop run (no time passes on the FakeClock) until ``predicate`` holds."""
    for _ in range(2_000):
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


class Cluster:
    def __init__(self, nodes: int = 2, **options: Any) -> None:
        self.clock = FakeClock()
        self.store = Store(clock=self.clock, graceful_pod_deletion=True)
        seed_cluster(self.store, nodes)
        self.pods = self.store.resource("pods")
        options.setdefault("jitter", 0.0)
        self.kubelet = Kubelet(self.store, KubeletOptions(**options), self.clock)

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.store.peek(self.pods, "default", name)

    def status(self, name: str) -> dict[str, Any]:
        obj = self.pod(name)
        assert obj is not None, name
        status: dict[str, Any] = obj.get("status") or {}
        return status

    def condition(self, name: str, type_: str) -> str | None:
        for cond in self.status(name).get("conditions") or []:
            if cond["type"] == type_:
                return str(cond["status"])
        return None

    async def advance(self, seconds: float) -> None:
        await settle()  # the kubelet parks in its clock sleep first, or advance misses it
        self.clock.advance(seconds)
        await settle()


@pytest_asyncio.fixture
async def running() -> AsyncIterator[Callable[..., Any]]:
    tasks: list[asyncio.Task[None]] = []

    async def start(**options: Any) -> Cluster:
        cluster = Cluster(**options)
        tasks.append(asyncio.create_task(cluster.kubelet.run(), name="test-kubelet"))
        await settle()
        return cluster

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.asyncio
async def test_kubelet_binds_round_robin_then_running_then_ready(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(pod_ready_delay=1.0)
    for name in ("a", "b", "c"):
        c.store.create(c.pods, pod(name), "default")
    await until(lambda: all((c.pod(n) or {})["spec"].get("nodeName") for n in "abc"), "binding")
    assert [c.pod(n)["spec"]["nodeName"] for n in "abc"] == [  # type: ignore[index]
        "sim-node-0",
        "sim-node-1",
        "sim-node-0",
    ]
    assert c.status("a")["phase"] == "Pending"
    assert c.condition("a", "PodScheduled") == "True"
    await c.advance(0.5)
    assert c.status("a")["phase"] == "Running"
    assert c.condition("a", "Ready") == "False"
    (cs,) = c.status("a")["containerStatuses"]
    assert (cs["started"], cs["ready"], cs["restartCount"]) == (True, False, 0)
    await c.advance(0.5)
    status = c.status("a")
    assert status["phase"] == "Running"
    assert {k["type"]: k["status"] for k in status["conditions"]} == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert all(k["lastTransitionTime"] for k in status["conditions"])
    assert status["podIP"].startswith("10.244.0.")
    assert status["startTime"]
    assert status["containerStatuses"][0]["ready"] is True
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"]


@pytest.mark.asyncio
async def test_kubelet_jitter_spreads_ready_times_around_the_delay(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(pod_ready_delay=1.0, jitter=0.5, seed=7)
    names = [f"p{i}" for i in range(20)]
    for name in names:
        c.store.create(c.pods, pod(name), "default")
    await settle()
    await c.advance(1.0)
    ready = sum(c.condition(n, "Ready") == "True" for n in names)
    assert 0 < ready < len(names)  # some before the nominal delay, some after
    await c.advance(0.5)
    assert all(c.condition(n, "Ready") == "True" for n in names)


@pytest.mark.asyncio
async def test_kubelet_instant_mode_makes_pods_ready_in_one_write(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(pod_ready_delay=0.0)
    created = c.store.create(c.pods, pod("a"), "default")
    await until(lambda: c.condition("a", "Ready") == "True", "ready")
    stored = c.pod("a")
    assert stored is not None
    assert (
        int(stored["metadata"]["resourceVersion"])
        == int(created["metadata"]["resourceVersion"]) + 1
    )


@pytest.mark.asyncio
async def test_kubelet_without_nodes_leaves_pods_unschedulable(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(nodes=0, pod_ready_delay=0.0)
    c.store.create(c.pods, pod("a"), "default")
    await until(lambda: c.condition("a", "PodScheduled") == "False", "unschedulable")
    assert c.status("a")["phase"] == "Pending"
    assert "nodeName" not in c.pod("a")["spec"]  # type: ignore[index]


@pytest.mark.asyncio
async def test_kubelet_unready_fraction_runs_but_never_ready(running: Callable[..., Any]) -> None:
    c: Cluster = await running(pod_ready_delay=0.2, unready_fraction=1.0)
    c.store.create(c.pods, pod("a"), "default")
    await settle()
    await c.advance(5.0)
    assert c.status("a")["phase"] == "Running"
    assert c.condition("a", "Ready") == "False"
    assert c.status("a")["containerStatuses"][0]["started"] is True


@pytest.mark.asyncio
async def test_kubelet_crashloop_fraction_restarts_grow(running: Callable[..., Any]) -> None:
    c: Cluster = await running(pod_ready_delay=0.2, crashloop_fraction=1.0, restart_interval=2.0)
    c.store.create(c.pods, pod("a"), "default")
    await settle()
    await c.advance(0.1)
    counts = []
    for _ in range(3):
        await c.advance(2.0)
        counts.append(c.status("a")["containerStatuses"][0]["restartCount"])
    assert counts == [1, 2, 3]
    cs = c.status("a")["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert c.status("a")["phase"] == "Running"
    assert c.condition("a", "Ready") == "False"


def test_kubelet_fates_are_seeded_and_follow_the_fractions() -> None:
    store = Store()
    kubelet = Kubelet(store, KubeletOptions(unready_fraction=0.2, crashloop_fraction=0.3, seed=1))
    fates = [kubelet.fate_of("default", f"p{i}") for i in range(1000)]
    assert fates == [kubelet.fate_of("default", f"p{i}") for i in range(1000)]
    assert 150 < fates.count(UNREADY) < 250
    assert 250 < fates.count(CRASHLOOP) < 350
    assert fates.count(NORMAL) == 1000 - fates.count(UNREADY) - fates.count(CRASHLOOP)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        pytest.param({"pod_ready_delay": -1}, "--pod-ready-delay", id="negative-delay"),
        pytest.param({"unready_fraction": 1.5}, "--unready-fraction", id="fraction-above-1"),
        pytest.param(
            {"unready_fraction": 0.6, "crashloop_fraction": 0.6}, "must not exceed", id="sum"
        ),
    ],
)
def test_kubelet_options_validate_rejects(options: dict[str, Any], problem: str) -> None:
    assert any(problem in p for p in KubeletOptions(**options).validate())


@pytest.mark.asyncio
async def test_kubelet_deletion_honours_grace_capped_by_terminate_delay(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(pod_ready_delay=0.0, terminate_delay=1.0)
    c.store.create(c.pods, pod("a"), "default")
    c.store.create(c.pods, pod("b"), "default")
    await until(lambda: c.condition("b", "Ready") == "True", "ready")
    c.store.delete(c.pods, "default", "a", DeleteOptions(grace_period_seconds=30))
    c.store.delete(c.pods, "default", "b", DeleteOptions(grace_period_seconds=0))
    assert c.pod("b") is None  # grace 0: at once
    await settle()
    assert c.pod("a") is not None
    assert c.pod("a")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    await c.advance(0.9)
    assert c.pod("a") is not None
    await c.advance(0.1)
    assert c.pod("a") is None


@pytest.mark.asyncio
async def test_kubelet_short_grace_wins_over_terminate_delay(running: Callable[..., Any]) -> None:
    c: Cluster = await running(pod_ready_delay=0.0, terminate_delay=5.0)
    c.store.create(c.pods, pod("a"), "default")
    await until(lambda: c.condition("a", "Ready") == "True", "ready")
    c.store.delete(c.pods, "default", "a", DeleteOptions(grace_period_seconds=2))
    await settle()
    await c.advance(1.9)
    assert c.pod("a") is not None
    await c.advance(0.1)
    assert c.pod("a") is None


@pytest.mark.asyncio
async def test_kubelet_pause_freezes_and_resume_catches_up(running: Callable[..., Any]) -> None:
    c: Cluster = await running(pod_ready_delay=0.0)
    c.kubelet.pause()
    c.store.create(c.pods, pod("a"), "default")
    await settle()
    await c.advance(10.0)
    assert "nodeName" not in c.pod("a")["spec"]  # type: ignore[index]
    c.kubelet.resume()
    await until(lambda: c.condition("a", "Ready") == "True", "ready after resume")


@pytest.mark.asyncio
async def test_kubelet_heartbeat_renews_node_conditions_and_leases(
    running: Callable[..., Any],
) -> None:
    c: Cluster = await running(pod_ready_delay=0.0, node_heartbeat_interval=10.0)
    leases = c.store.resource("leases", "coordination.k8s.io")
    nodes = c.store.resource("nodes")
    first = c.store.peek(leases, "kube-node-lease", "sim-node-0")
    assert first is not None
    beat = c.store.peek(nodes, None, "sim-node-0")["status"]["conditions"]  # type: ignore[index]
    await c.advance(10.0)
    renewed = c.store.peek(leases, "kube-node-lease", "sim-node-0")
    assert renewed is not None
    assert renewed["spec"]["renewTime"] > first["spec"]["renewTime"]
    node = c.store.peek(nodes, None, "sim-node-0")
    assert node is not None
    ready = [k for k in node["status"]["conditions"] if k["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    assert ready[0]["lastHeartbeatTime"] > beat[-1]["lastHeartbeatTime"]


@pytest.mark.asyncio
async def test_kubelet_in_the_emulator_over_real_time() -> None:
    async with run_emulator(tls=False, kubelet=True, pod_ready_delay=0.05, nodes=1) as emu:
        pods = emu.store.resource("pods")
        emu.store.create(pods, pod("a"), "default")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while True:
            obj = emu.store.peek(pods, "default", "a")
            conditions = (obj or {}).get("status", {}).get("conditions") or []
            if any(k["type"] == "Ready" and k["status"] == "True" for k in conditions):
                break
            assert loop.time() < deadline, "the pod never became Ready"
            await asyncio.sleep(0.01)
        emu.store.delete(pods, "default", "a", DeleteOptions(grace_period_seconds=30))
        assert emu.store.peek(pods, "default", "a") is not None
    assert emu.failures == []


@pytest.mark.asyncio
async def test_kubelet_rewatches_after_its_watch_is_dropped(running: Callable[..., Any]) -> None:
    c: Cluster = await running(pod_ready_delay=0.0)
    assert c.store.drop_watches("test") == 1  # the kubelet's own in-process watch
    await settle()
    c.store.create(c.pods, pod("a"), "default")
    await until(lambda: c.condition("a", "Ready") == "True", "ready after the rewatch")
    assert c.store.watcher_count == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--kubelet=maybe"], "want on or off", id="kubelet"),
        pytest.param(["--unready-fraction", "2"], "want 0-1", id="fraction"),
        pytest.param(
            ["--unready-fraction", "0.7", "--crashloop-fraction", "0.7"],
            "must not exceed 1",
            id="sum",
        ),
    ],
)
def test_kubelet_flags_of_pycm_sim_are_validated(flags: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pycm", "sim", *flags],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr
