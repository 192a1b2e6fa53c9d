"""The simulated kubelet (and the scheduler's one job): it makes pods look like they run.

It runs inside the emulator process and works on the :class:`~pycm.sim.store.Store` directly,
on an injected :class:`~pycm.util.clock.Clock` (tests advance a FakeClock). What it does:

- **Nodes**: every ``node_heartbeat_interval`` it refreshes each node's conditions
  (``lastHeartbeatTime``; Ready True) and renews the node's Lease in ``kube-node-lease``.
- **Scheduling**: a pod without ``spec.nodeName`` is bound round-robin over the nodes
  (``PodScheduled`` True); with no node, ``PodScheduled`` False / Unschedulable.
- **Start-up**: a bound pod turns Running (containers started, not ready) after half its delay,
  then Ready after its delay: ``pod_ready_delay`` times a per-pod jitter factor in
  ``[1 - jitter, 1 + jitter]``. ``pod_ready_delay == 0`` is *instant* mode: bound, Running and
  Ready in one write as soon as the pod is seen (the benchmarks' mode).
- **Fates**: a seeded draw per pod (stable for a given seed, namespace and name) makes a
  fraction ``unready_fraction`` of pods never become Ready (Running, ContainersNotReady) and a
  fraction ``crashloop_fraction`` crash-loop (Running, Ready False, the container waiting in
  CrashLoopBackOff, ``restartCount`` growing every ``restart_interval``).
- **Termination**: a pod deleted with a grace period keeps its ``deletionTimestamp`` for
  ``min(grace, terminate_delay)`` seconds, then the kubelet confirms with
  :meth:`Store.finalize_pod_deletion`.
- **Pause**: :meth:`Kubelet.pause` freezes all of the above (events are still read, and acted
  on at :meth:`Kubelet.resume`) — a node agent that stopped reporting.

The loop keeps one record per pod (its uid, fate and due times) and a heap of wake-ups; each
wake-up re-reads the pod from the store and moves it on, so a stale wake-up is harmless.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from pycm.sim.objects import Obj, deep_copy, rfc3339
from pycm.sim.options import EmulatorOptions
from pycm.sim.store import Store
from pycm.sim.watch import DELETED, Watcher
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["CRASHLOOP", "NORMAL", "UNREADY", "Kubelet", "KubeletOptions", "kubelet_options"]

log = logging.getLogger("pycm.sim")

NORMAL = "normal"
UNREADY = "unready"
CRASHLOOP = "crashloop"

_TERMINAL = frozenset({"Succeeded", "Failed"})
_NODE_LEASE_NAMESPACE = "kube-node-lease"
# The field manager a cluster's managedFields name for the kubelet's writes (its User-Agent's
# product): node and pod status through the status subresource, its node Lease directly.
MANAGER = "kubelet"


@dataclass(frozen=True)
class KubeletOptions:
    pod_ready_delay: float = 1.0  # seconds from binding to Ready; 0: instant mode
    jitter: float = 0.2  # each pod's delay is scaled by a factor in [1 - jitter, 1 + jitter]
    unready_fraction: float = 0.0  # pods that run but never become Ready
    crashloop_fraction: float = 0.0  # pods whose container keeps restarting
    terminate_delay: float = 1.0  # a terminating pod takes min(grace, this) seconds
    restart_interval: float = 2.0  # seconds between a crash-looping container's restarts
    # kube's node status update frequency is 10s, its lease renew interval 10s as well.
    node_heartbeat_interval: float = 10.0
    seed: int = 0

    def validate(self) -> list[str]:
        problems = []
        if self.pod_ready_delay < 0:
            problems.append("--pod-ready-delay must not be negative")
        if not 0 <= self.jitter < 1:
            problems.append("kubelet jitter must be in [0, 1)")
        for name, value in (
            ("--unready-fraction", self.unready_fraction),
            ("--crashloop-fraction", self.crashloop_fraction),
        ):
            if not 0 <= value <= 1:
                problems.append(f"{name} must be between 0 and 1, got {value}")
        if self.unready_fraction + self.crashloop_fraction > 1:
            problems.append("--unready-fraction plus --crashloop-fraction must not exceed 1")
        if self.terminate_delay < 0:
            problems.append("the pod terminate delay must not be negative")
        if self.restart_interval <= 0 or self.node_heartbeat_interval <= 0:
            problems.append("kubelet intervals must be positive")
        return problems


def kubelet_options(options: EmulatorOptions) -> KubeletOptions:
    """The kubelet's options from the emulator's (``pycm sim`` flags)."""
    return KubeletOptions(
        pod_ready_delay=options.pod_ready_delay,
        unready_fraction=options.unready_fraction,
        crashloop_fraction=options.crashloop_fraction,
        terminate_delay=options.pod_terminate_delay,
        seed=options.kubelet_seed,
    )


@dataclass
class _PodRecord:
    """What the kubelet remembers of one pod (keyed by namespace/name; ``uid`` tells reuse)."""

    uid: str
    fate: str
    delay: float  # this pod's jittered ready delay
    bound_at: float | None = None  # monotonic time of binding
    terminate_at: float | None = None  # set once the kubelet saw the deletionTimestamp
    next_restart_at: float | None = None
    wakeups: set[float] = field(default_factory=set)  # due times already in the heap


class Kubelet:
    """One simulated kubelet for every node of the emulator (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        options: KubeletOptions | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.store = store
        self.options = options = options or KubeletOptions()
        problems = options.validate()
        if problems:
            raise ValueError("; ".join(problems))
        self.clock = clock
        self._pods_res = store.resource("pods")
        self._nodes_res = store.resource("nodes")
        self._leases_res = store.resource("leases", "coordination.k8s.io")
        self._records: dict[tuple[str, str], _PodRecord] = {}
        # Heap of (due monotonic time, tie-breaker, namespace, name).
        self._heap: list[tuple[float, int, str, str]] = []
        self._order = itertools.count()
        self._next_node = 0
        self._next_heartbeat = 0.0
        self._paused = False
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._ip_counter = itertools.count(1)

    # ---------------------------------------------------------------- control

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        """Stop every transition, binding, heartbeat and deletion confirmation until resume."""
        if not self._paused:
            self._paused = True
            self._resumed.clear()
            log.info("pycm sim: kubelet paused")

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            self._resumed.set()
            log.info("pycm sim: kubelet resumed")

    def fate_of(self, namespace: str, name: str) -> str:
        """The seeded fate of the pod ``namespace/name``: NORMAL, UNREADY or CRASHLOOP."""
        draw = random.Random(f"{self.options.seed}/{namespace}/{name}").random()
        if draw < self.options.unready_fraction:
            return UNREADY
        if draw < self.options.unready_fraction + self.options.crashloop_fraction:
            return CRASHLOOP
        return NORMAL

    # ---------------------------------------------------------------- the loop

    async def run(self) -> None:
        """Run until cancelled."""
        watcher = self.store.watch(self._pods_res, capacity=1_000_000)
        o = self.options
        log.info(
            "pycm sim: kubelet started: pod-ready-delay %ss, unready %s, crash-loop %s, "
            "terminate-delay %ss",
            o.pod_ready_delay,
            o.unready_fraction,
            o.crashloop_fraction,
            o.terminate_delay,
        )
        try:
            self._heartbeat()
            while True:
                self._drain(watcher)
                if watcher.closed:  # dropped (a fault, or shutdown): watch again from now
                    watcher = self.store.watch(self._pods_res, capacity=1_000_000)
                    continue
                if self._paused:
                    await self._wait_resume(watcher)
                    continue
                self._run_due()
                await self._wait(watcher)
        finally:
            watcher.stop()

    def _drain(self, watcher: Watcher) -> None:
        while (item := watcher.pop()) is not None:
            type_, pod = item
            m = pod["metadata"]
            key = (m.get("namespace", ""), m["name"])
            if type_ == DELETED:
                record = self._records.get(key)
                if record is not None and record.uid == m.get("uid"):
                    del self._records[key]
                continue
            if not self._paused:
                self._sync(key)
            else:
                self._schedule(self.clock.monotonic(), key)

    async def _wait_resume(self, watcher: Watcher) -> None:
        await _first(self._resumed.wait(), _wait_event(watcher), name="pycm-sim-kubelet-paused")

    async def _wait(self, watcher: Watcher) -> None:
        now = self.clock.monotonic()
        due = self._next_heartbeat
        if self._heap:
            due = min(due, self._heap[0][0])
        if watcher.pending:
            return
        await _first(
            self.clock.sleep(max(0.0, due - now)),
            _wait_event(watcher),
            name="pycm-sim-kubelet-wait",
        )

    def _run_due(self) -> None:
        now = self.clock.monotonic()
        if now >= self._next_heartbeat:
            self._heartbeat()
        while self._heap and self._heap[0][0] <= now:
            due, _, ns, name = heapq.heappop(self._heap)
            record = self._records.get((ns, name))
            if record is not None:
                record.wakeups.discard(due)
            self._sync((ns, name))

    def _schedule(self, due: float, key: tuple[str, str]) -> None:
        record = self._records.get(key)
        if record is not None:
            if due in record.wakeups:
                return
            record.wakeups.add(due)
        heapq.heappush(self._heap, (due, next(self._order), key[0], key[1]))

    # ---------------------------------------------------------------- nodes

    def _heartbeat(self) -> None:
        now_mono = self.clock.monotonic()
        self._next_heartbeat = now_mono + self.options.node_heartbeat_interval
        now = rfc3339(self.clock.wall_ns())
        nodes, _ = self.store.list(self._nodes_res)
        for node in nodes:
            new = deep_copy(node)
            for cond in (new.get("status") or {}).get("conditions") or []:
                cond["lastHeartbeatTime"] = now
                if cond.get("type") == "Ready" and cond.get("status") != "True":
                    cond.update(
                        status="True",
                        reason="KubeletReady",
                        message="kubelet is posting ready status",
                        lastTransitionTime=now,
                    )
            old = self.store.peek(self._nodes_res, None, node["metadata"]["name"])
            if old is not None and new != old:
                self.store.replace(self._nodes_res, new, old, manager=MANAGER, subresource="status")
            self._renew_node_lease(node, now)

    def _renew_node_lease(self, node: Obj, now: str) -> None:
        name = node["metadata"]["name"]
        micro = now.replace("Z", ".000000Z") if "." not in now else now
        if self.store.peek(self._leases_res, _NODE_LEASE_NAMESPACE, name) is None:
            if self.store.peek(self.store.resource("namespaces"), None, _NODE_LEASE_NAMESPACE):
                self.store.create(
                    self._leases_res,
                    {
                        "metadata": {
                            "name": name,
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Node",
                                    "name": name,
                                    "uid": node["metadata"]["uid"],
                                }
                            ],
                        },
                        "spec": {
                            "holderIdentity": name,
                            "leaseDurationSeconds": 40,
                            "renewTime": micro,
                        },
                    },
                    _NODE_LEASE_NAMESPACE,
                    manager=MANAGER,
                )
            return
        old = self.store.peek(self._leases_res, _NODE_LEASE_NAMESPACE, name)
        if old is None:
            return
        new = deep_copy(old)
        new.setdefault("spec", {})["renewTime"] = micro
        self.store.replace(self._leases_res, new, old, manager=MANAGER)

    def _node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.store.list_page(self._nodes_res).items]

    # ---------------------------------------------------------------- pods

    def _record(self, key: tuple[str, str], pod: Obj) -> _PodRecord:
        uid = str(pod["metadata"].get("uid"))
        record = self._records.get(key)
        if record is None or record.uid != uid:
            rng = random.Random(f"{self.options.seed}/{key[0]}/{key[1]}/delay")
            jitter = self.options.jitter
            factor = 1.0 + rng.uniform(-jitter, jitter) if jitter else 1.0
            record = _PodRecord(uid, self.fate_of(*key), self.options.pod_ready_delay * factor)
            self._records[key] = record
        return record

    def _sync(self, key: tuple[str, str]) -> None:
        pod = self.store.peek(self._pods_res, *key)
        if pod is None:
            self._records.pop(key, None)
            return
        record = self._record(key, pod)
        now = self.clock.monotonic()
        m = pod["metadata"]
        status = pod.get("status") or {}
        if m.get("deletionTimestamp"):
            self._terminate(key, pod, record, now)
            return
        if status.get("phase") in _TERMINAL:
            return
        if not (pod.get("spec") or {}).get("nodeName"):
            self._bind(key, pod, record, now)
            return
        if record.bound_at is None:  # bound by someone else (or before a restart)
            record.bound_at = now
        instant = self.options.pod_ready_delay == 0
        started = instant or now >= record.bound_at + record.delay / 2
        ready_due = record.bound_at + record.delay
        if not started:
            self._schedule(record.bound_at + record.delay / 2, key)
            return
        restarts = _restart_count(pod)
        if record.fate == CRASHLOOP:
            if record.next_restart_at is None:
                record.next_restart_at = now + self.options.restart_interval
            elif now >= record.next_restart_at:
                restarts += 1
                record.next_restart_at = now + self.options.restart_interval
            self._schedule(record.next_restart_at, key)
        ready = record.fate == NORMAL and (instant or now >= ready_due)
        if record.fate == NORMAL and not ready:
            self._schedule(ready_due, key)
        self._write_status(pod, record, ready=ready, restarts=restarts)

    def _bind(self, key: tuple[str, str], pod: Obj, record: _PodRecord, now: float) -> None:
        nodes = self._node_names()
        new = deep_copy(pod)
        status = new.setdefault("status", {})
        stamp = rfc3339(self.clock.wall_ns())
        if not nodes:
            _set_condition(
                status,
                "PodScheduled",
                "False",
                stamp,
                reason="Unschedulable",
                message="0/0 nodes are available.",
            )
            if new != pod:
                self.store.replace(self._pods_res, new, pod, manager=MANAGER, subresource="status")
            return
        node = nodes[self._next_node % len(nodes)]
        self._next_node += 1
        new["spec"]["nodeName"] = node
        _set_condition(status, "PodScheduled", "True", stamp)
        record.bound_at = now
        if self.options.pod_ready_delay == 0:
            self._fill_running(new, record, ready=record.fate == NORMAL, restarts=0)
            if record.fate == CRASHLOOP:
                record.next_restart_at = now + self.options.restart_interval
                self._schedule(record.next_restart_at, key)
        else:
            self._schedule(now + record.delay / 2, key)
        self.store.replace(self._pods_res, new, pod, manager=MANAGER, subresource="status")

    def _write_status(self, pod: Obj, record: _PodRecord, *, ready: bool, restarts: int) -> None:
        new = deep_copy(pod)
        self._fill_running(new, record, ready=ready, restarts=restarts)
        if new != pod:
            self.store.replace(self._pods_res, new, pod, manager=MANAGER, subresource="status")

    def _fill_running(self, pod: Obj, record: _PodRecord, *, ready: bool, restarts: int) -> None:
        """Set ``pod``'s status to Running, ready or not, with ``restarts`` restarts."""
        spec = pod.get("spec") or {}
        status = pod.setdefault("status", {})
        stamp = rfc3339(self.clock.wall_ns())
        node_index = _node_index(str(spec.get("nodeName", "")))
        status["phase"] = "Running"
        status.setdefault("hostIP", f"10.0.{node_index // 250}.{node_index % 250 + 2}")
        status.setdefault("hostIPs", [{"ip": status["hostIP"]}])
        if "podIP" not in status:
            n = next(self._ip_counter)
            status["podIP"] = f"10.244.{node_index}.{n % 250 + 2}"
            status["podIPs"] = [{"ip": status["podIP"]}]
        status.setdefault("startTime", stamp)
        ready_text = "True" if ready else "False"
        not_ready = {} if ready else {"reason": "ContainersNotReady"}
        _set_condition(status, "PodScheduled", "True", stamp)
        _set_condition(status, "Initialized", "True", stamp)
        names = [str(c.get("name")) for c in spec.get("containers") or []]
        if not_ready:
            not_ready["message"] = f"containers with unready status: [{' '.join(names)}]"
        _set_condition(status, "ContainersReady", ready_text, stamp, **not_ready)
        _set_condition(status, "Ready", ready_text, stamp, **not_ready)
        old_statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
        statuses = []
        for container in spec.get("containers") or []:
            name = str(container.get("name"))
            old = old_statuses.get(name) or {}
            state: Obj
            if record.fate == CRASHLOOP:
                state = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off restarting failed container {name}",
                    }
                }
            else:
                started_at = (old.get("state") or {}).get("running", {}).get("startedAt", stamp)
                state = {"running": {"startedAt": started_at}}
            entry: Obj = {
                "name": name,
                "image": container.get("image", ""),
                "imageID": f"sim://{container.get('image', '')}",
                "containerID": f"sim://{record.uid[:8]}-{name}",
                "ready": ready,
                "started": record.fate != CRASHLOOP,
                "restartCount": restarts,
                "state": state,
            }
            if record.fate == CRASHLOOP and restarts > 0:
                entry["lastState"] = {
                    "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": stamp}
                }
            statuses.append(entry)
        status["containerStatuses"] = statuses

    def _terminate(self, key: tuple[str, str], pod: Obj, record: _PodRecord, now: float) -> None:
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        if record.terminate_at is None:
            record.terminate_at = now + min(grace, self.options.terminate_delay)
        if now < record.terminate_at:
            self._schedule(record.terminate_at, key)
            return
        self.store.finalize_pod_deletion(key[0], key[1], record.uid)


async def _wait_event(watcher: Watcher) -> None:
    """Until ``watcher`` has something (or closes), without taking it."""
    # The watcher's wake event is set on every offer and on close (see Watcher.next).
    while not watcher.pending and not watcher.closed:
        watcher._wake.clear()
        await watcher._wake.wait()


async def _first(*aws: Coroutine[Any, Any, Any], name: str) -> None:
    """Await whichever of ``aws`` finishes first; cancel and await the rest."""
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(a, name=f"{name}-{i}") for i, a in enumerate(aws)]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _restart_count(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(c.get("restartCount") or 0) for c in statuses), default=0)


def _node_index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _set_condition(
    status: Obj, type_: str, value: str, stamp: str, reason: str = "", message: str = ""
) -> None:
    """Set condition ``type_``; its lastTransitionTime moves only when its status changes."""
    conditions = status.setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != value:
                cond["status"] = value
                cond["lastTransitionTime"] = stamp
            _set_reason(cond, reason, message)
            return
    cond = {"type": type_, "status": value, "lastProbeTime": None, "lastTransitionTime": stamp}
    _set_reason(cond, reason, message)
    conditions.append(cond)


def _set_reason(cond: Obj, reason: str, message: str) -> None:
    for key, value in (("reason", reason), ("message", message)):
        if value:
            cond[key] = value
        else:
            cond.pop(key, None)
