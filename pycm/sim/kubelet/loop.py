"""The kubelet's loop: it watches pods, keeps one record per pod (its uid, fate and due times)
and a heap of wake-ups, and moves each pod on through scheduling, start-up, readiness,
crash-loops and termination (see :mod:`pycm.sim.kubelet`)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from pycm.sim.kubelet.nodes import Nodes
from pycm.sim.kubelet.options import (
    CRASHLOOP,
    MANAGER,
    NORMAL,
    KubeletOptions,
    draw_fate,
    draw_ready_delay,
)
from pycm.sim.kubelet.podstatus import fill_running, restart_count, set_condition
from pycm.sim.objects import Obj, deep_copy, rfc3339
from pycm.sim.store import Store
from pycm.sim.watch import DELETED, Watcher
from pycm.util.clock import REAL_CLOCK, Clock

__all__ = ["Kubelet"]

log = logging.getLogger("pycm.sim")

_TERMINAL = frozenset({"Succeeded", "Failed"})


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
    """One simulated kubelet for every node of the emulator (see :mod:`pycm.sim.kubelet`)."""

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
        self._nodes = Nodes(store)
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
        return draw_fate(self.options, namespace, name)

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
        self._next_heartbeat = self.clock.monotonic() + self.options.node_heartbeat_interval
        self._nodes.heartbeat(rfc3339(self.clock.wall_ns()))

    # ---------------------------------------------------------------- pods

    def _record(self, key: tuple[str, str], pod: Obj) -> _PodRecord:
        uid = str(pod["metadata"].get("uid"))
        record = self._records.get(key)
        if record is None or record.uid != uid:
            delay = draw_ready_delay(self.options, *key)
            record = _PodRecord(uid, self.fate_of(*key), delay)
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
        restarts = restart_count(pod)
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
        nodes = self._nodes.names()
        new = deep_copy(pod)
        status = new.setdefault("status", {})
        stamp = rfc3339(self.clock.wall_ns())
        if not nodes:
            set_condition(
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
        set_condition(status, "PodScheduled", "True", stamp)
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
        stamp = rfc3339(self.clock.wall_ns())
        fill_running(
            pod,
            uid=record.uid,
            fate=record.fate,
            ready=ready,
            restarts=restarts,
            stamp=stamp,
            pod_ips=self._ip_counter,
        )

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
