"""The demo's chaos controls: what the keys of ``pycm demo``'s TUI do to the running demo.

Each control is a coroutine that acts on the orchestrator's children or the emulator and
returns one line describing what happened:

- kill the leader (SIGKILL; the supervisor restarts it, as a standby);
- pause the leader past its renew deadline (SIGSTOP, then SIGCONT — it finds the lease lost,
  exits 1 as KCM does, and is restarted);
- add API latency above the renew deadline to lease updates (an emulator fault; the leader
  steps down);
- run a standby's clock fast (restarted with ``--debug-clock-rate``): it takes the healthy
  lease, the old leader is fenced and exits 1 on the loss, and both are restarted at real
  time — a leader flap caused by clock skew alone;
- drop every open watch (the informers relist or re-watch);
- scale the demo workload, or roll it (a template change).

Children the demo signals on purpose are marked ``stopping`` first, so their exit is not
reported as a crash; each is restarted and supervised again.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from pycm.demo.processes import Child
from pycm.kube import DEPLOYMENTS, LEASES, Client, load_config
from pycm.util.durations import parse_duration

if TYPE_CHECKING:
    from pycm.demo.orchestrator import Orchestrator

__all__ = ["Chaos"]

LEASE_NAMESPACE, LEASE_NAME = "kube-system", "pycm"
RESTART_DELAY = 1.0
STARTUP_ALLOWANCE = 20.0  # seconds a restarted replica may take to start on a loaded machine
# How much faster than lease duration / retry period the skewed standby's clock runs: past that
# ratio its lease runs out between two of the leader's renewals (docs/operations.md).
SKEW_OVER_STEAL = 1.25


class Chaos:
    def __init__(self, orchestrator: Orchestrator) -> None:
        self.orch = orchestrator
        self._client: Client | None = None
        self._scale_steps = (5, 2, 3)
        self._scale_index = 0

    @property
    def kubeconfig(self) -> Path:
        return self.orch.workdir / "kubeconfig"

    async def _api(self) -> Client:
        if self._client is None:
            self._client = await Client.connect(
                await load_config(str(self.kubeconfig), user_agent="pycm-demo-chaos")
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _leader(self) -> tuple[str, Child]:
        lease = await (await self._api()).get(LEASES, LEASE_NAME, namespace=LEASE_NAMESPACE)
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        for replica in self.orch.replicas:
            if replica.identity == holder:
                return holder, replica.child
        raise RuntimeError(f"no replica holds the lease (holder: {holder or 'none'})")

    # -- the controls ---------------------------------------------------------------------

    async def _wait_for_new_holder(self, old: str, startup: float = 0.0) -> str:
        """Until another replica holds the lease (a replica restarted under the same identity
        would otherwise find "itself" holding it and carry on at once, as client-go does);
        ``startup``: seconds more when the taker is a process just started."""
        o = self.orch.options
        bound = 2 * parse_duration(o.lease_duration) + 5.0 + startup
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        client = await self._api()
        while loop.time() < deadline:
            lease = await client.get(LEASES, LEASE_NAME, namespace=LEASE_NAMESPACE)
            holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
            if holder and holder != old:
                return holder  # with old == "": any holder
            await asyncio.sleep(0.2)
        return ""

    async def kill_leader(self) -> str:
        identity, child = await self._leader()
        child.stopping = True
        started = asyncio.get_running_loop().time()
        child.signal(signal.SIGKILL)
        await child.wait()
        successor = await self._wait_for_new_holder(identity)
        took = asyncio.get_running_loop().time() - started
        await child.start()
        self.orch.supervise(child)
        if not successor:
            return f"killed the leader {identity} (SIGKILL); no successor yet — restarted it"
        return (
            f"killed the leader {identity} (SIGKILL): {successor} took over after {took:.1f}s; "
            f"{identity} restarted as a standby"
        )

    async def pause_leader(self) -> str:
        identity, child = await self._leader()
        o = self.orch.options
        hold = parse_duration(o.lease_duration) + parse_duration(o.retry_period) + 1.0
        child.stopping = True
        child.signal(signal.SIGSTOP)
        await asyncio.sleep(hold)
        child.signal(signal.SIGCONT)
        try:
            code = await asyncio.wait_for(child.wait(), timeout=15.0)
        except TimeoutError:
            child.signal(signal.SIGKILL)
            code = await child.wait()
        await asyncio.sleep(RESTART_DELAY)
        await child.start()
        self.orch.supervise(child)
        return (
            f"paused the leader {identity} for {hold:.0f}s (SIGSTOP/SIGCONT): it exited with "
            f"status {code} on finding the lease lost, and was restarted"
        )

    async def _fault(self, body: dict[str, Any]) -> dict[str, Any]:
        client = await self._api()
        config = client.config
        async with httpx.AsyncClient(verify=False, timeout=10) as http:  # the local emulator
            response = await http.post(
                f"{config.server}/sim/v1/faults",
                json=body,
                headers={"Authorization": f"Bearer {config.token or ''}"},
            )
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    async def add_lease_latency(self) -> str:
        identity, _ = await self._leader()
        seconds = parse_duration(self.orch.options.renew_deadline) + 1.0
        window = 12.0
        # Whoever leads during the window loses its lease and exits 1 (KCM's behaviour) —
        # expected here, so every replica may exit and is restarted, as a pod would be.
        for replica in self.orch.replicas:
            replica.child.stopping = True
        await self._fault(
            {
                "kind": "latency",
                "seconds": seconds,
                "verb": "update",
                "resource": "leases",
                "duration": window,
            }
        )
        grace = window + 2 * parse_duration(self.orch.options.lease_duration) + 5.0
        outcomes = await asyncio.gather(
            *(self._restart_if_exits(r.child, grace) for r in self.orch.replicas)
        )
        restarted = [
            r.identity
            for r, code in zip(self.orch.replicas, outcomes, strict=True)
            if code is not None
        ]
        successor = await self._wait_for_new_holder("")
        return (
            f"lease updates took {seconds:.0f}s for {window:.0f}s (renew deadline exceeded): "
            f"led by {identity} before; restarted {', '.join(restarted) or 'none'}; "
            f"{successor or 'nobody'} leads now"
        )

    async def _restart_if_exits(self, child: Child, within: float) -> int | None:
        try:
            code = await asyncio.wait_for(child.wait(), timeout=within)
        except TimeoutError:
            child.stopping = False
            return None
        await asyncio.sleep(RESTART_DELAY)
        await child.start()
        self.orch.supervise(child)
        return code

    async def skew_standby_clock(self) -> str:
        leader, leader_child = await self._leader()
        standby = next((r for r in self.orch.replicas if r.identity != leader), None)
        if standby is None:
            return "no standby to skew"
        o = self.orch.options
        rate = SKEW_OVER_STEAL * parse_duration(o.lease_duration) / parse_duration(o.retry_period)
        child, real_time = standby.child, list(standby.child.argv)
        await child.stop()  # a standby: it holds nothing to release
        child.argv = [*real_time, f"--debug-clock-rate={rate:g}"]
        leader_child.stopping = True  # it exits 1 when it finds the lease taken
        started = asyncio.get_running_loop().time()
        await child.start()
        self.orch.supervise(child)
        # The taker is a process just started: its start-up (imports, TLS, informers) took up
        # to ~8 s on a loaded 2-core machine, before it could even read the lease.
        successor = await self._wait_for_new_holder(leader, startup=STARTUP_ALLOWANCE)
        took = asyncio.get_running_loop().time() - started
        grace = parse_duration(o.retry_period) + parse_duration(o.renew_deadline) + 10.0
        code = await self._restart_if_exits(leader_child, grace)
        # Back to real time: stopped, the skewed replica releases the lease it took.
        child.argv = real_time
        await child.stop()
        await asyncio.sleep(RESTART_DELAY)
        await child.start()
        self.orch.supervise(child)
        if successor != standby.identity:
            return (
                f"ran {standby.identity}'s clock at {rate:g}x: {successor or 'nobody'} leads "
                f"after {took:.1f}s, not it; back at real time"
            )
        exited = "restarted" if code is not None else "still running"
        return (
            f"ran {standby.identity}'s clock at {rate:g}x: it took the healthy lease from "
            f"{leader} {took:.1f}s after its start ({leader} fenced, exited {code}, {exited}); "
            f"{standby.identity} restarted at real time, releasing it"
        )

    async def drop_watches(self) -> str:
        await self._fault({"kind": "drop-watches"})
        return "dropped every open watch: the informers re-watch (or relist after a 410)"

    async def scale_workload(self) -> str:
        from pycm.demo.orchestrator import WORKLOAD

        replicas = self._scale_steps[self._scale_index % len(self._scale_steps)]
        self._scale_index += 1
        api = await self._api()
        namespaces = self.orch.workload_namespaces()
        for namespace in namespaces:
            await api.patch(
                DEPLOYMENTS, WORKLOAD, {"spec": {"replicas": replicas}}, namespace=namespace
            )
        return f"scaled deployment {_where(namespaces, WORKLOAD)} to {replicas} replicas"

    async def roll_workload(self) -> str:
        from pycm.demo.orchestrator import WORKLOAD

        stamp = time.strftime("%H:%M:%S")
        patch = {
            "spec": {"template": {"metadata": {"annotations": {"pycm.demo/rolled-at": stamp}}}}
        }
        api = await self._api()
        namespaces = self.orch.workload_namespaces()
        for namespace in namespaces:
            await api.patch(DEPLOYMENTS, WORKLOAD, patch, namespace=namespace)
        return f"rolling deployment {_where(namespaces, WORKLOAD)} (template changed at {stamp})"

    def controls(self) -> list[tuple[str, str, Any]]:
        """(key, description, coroutine function) for the TUI."""
        return [
            ("K", "kill leader", self.kill_leader),
            ("Z", "pause leader", self.pause_leader),
            ("L", "lease latency", self.add_lease_latency),
            ("C", "clock skew", self.skew_standby_clock),
            ("W", "drop watches", self.drop_watches),
            ("S", "scale web", self.scale_workload),
            ("R", "roll web", self.roll_workload),
        ]


async def wait_for_file(path: Path, within: float) -> bool:
    """Poll for a file a child writes (its serving certificate), at most ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not await asyncio.to_thread(_non_empty, path):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


def _non_empty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _where(namespaces: tuple[str, ...], name: str) -> str:
    """``default/demo-web``, or ``demo-web in alpha, bravo, …`` for the sharded demo."""
    if len(namespaces) == 1:
        return f"{namespaces[0]}/{name}"
    return f"{name} in {', '.join(namespaces)}"
