"""The Deployment controller: a mass rollout end to end, and the cost of a no-op sync.

- ``controllers.rollout``: ``n`` Deployments × 3 replicas created at once (16 requests in
  flight) against an emulator process with an instant kubelet and ``pycm run`` (deployment and
  replicaset controllers; client limits raised as in ``bench.replicaset``), timed until every
  one is Available with 3 updated, available replicas. Peer: the minimum API writes one such
  rollout needs — 1 ReplicaSet create, 3 pod creates, 1 ReplicaSet status and 1 Deployment
  status update = 6; ratio: our writes per deployment / 6 (a cost: 1 is ideal, lower is
  better). ``controllers.rollout_calls`` gives our writes per deployment with the same peer.
- ``controllers.noop_syncs``: ``DeploymentController.sync`` over ``n`` settled deployments
  (each with its settled ReplicaSet; 20 per namespace), in-process against pre-filled
  informers and a fake client that fails the run on any write: syncs/s. Peer: the same loop
  with a trivial sync (look the key up in the lister, copy the object, return) — the floor of
  any sync that reads its object; ratio ours / peer (throughput: higher is better, < 1).
- ``controllers.tracing_overhead``: the same no-op syncs through the worker loop's traced
  step (``Controller.process``: reconcile begin/end events on a bus with a subscriber that
  records every event) against the bare ``sync`` calls of ``noop_syncs``, all in a worker's
  context (``root_context``): µs per sync; ratio traced / bare, the median over adjacent pairs of
  passes (a cost: aim ≤ 1.05).
- ``controllers.tracing_floor``: the same syncs through the least a recorded step can be in
  CPython: a coroutine around the sync that appends one list (key, start) to a ring before it
  and one tuple (that list, end, result) after it, with the span's contextvar set and reset
  around it — no ids, seq, offset, trigger, wait or queue bookkeeping. Peer: the bare sync,
  ratio floor / bare. Not an aim: it says what ``tracing_overhead``'s aim costs on the machine
  at hand. The ratio depends on the processor more than on the code (a recorded step's ~200
  extra bytecodes run cold between the sync's, and pay in branch and cache misses ~3× what
  they cost in a tight loop): on one machine the same tree's overhead measured 1.046-1.057, on
  another 1.09-1.12 with the floor at 1.035-1.064 (median 1.053).
- ``controllers.priority_first_reconcile``: a controller starts with ``k`` keys (10k at full
  size) queued by its informer's initial list and one key queued after them by a fresh change
  (an update with a new resourceVersion): the time from the start of its workers (5, KCM's
  ``--concurrent-deployment-syncs``) to the start of the fresh key's reconcile, with a priority
  queue (``Controller(priority_queue=True)``: the initial keys wait at LOW_PRIORITY). The
  syncs are ``DeploymentController.sync`` over settled deployments (as ``noop_syncs``). Peer:
  the same with the FIFO queue (KCM's), where the fresh key waits for every initial key; ratio
  peer / ours (a cost: higher is better). Median of repeats, the two orders alternated.
- ``controllers.tracing_instructions``: the instructions a no-op sync executes, traced
  (``Controller.process``, as ``tracing_overhead``) against bare (the sync), counted by
  valgrind's callgrind in a child process (``python -m bench.controllers instructions PASSES
  DEPLOYMENTS``: both sides in one process, warmed, the string hash seed fixed): instructions
  per sync; ratio traced / bare (a cost). Unlike the wall-clock ratio this does not depend on the
  processor or on what else the machine runs, so two runs of the same tree agree to the
  instruction and a change to the traced step shows at once; it does not see what the extra
  instructions cost in cache and branch misses (the wall-clock ratios do). Without valgrind on
  PATH (Debian package ``valgrind``) it is left out, with a line on stderr saying so.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.harness import Figure, in_worker_context, median_of
from bench.replicaset import cluster, wait_until, writes_between
from pycm.cache.listwatch import FakeListWatch
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.controller import Result
from pycm.controller.builder import ControllerBuilder
from pycm.controller.worker import Controller
from pycm.controllers.deployment import util
from pycm.controllers.deployment.controller import DeploymentController
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS
from pycm.trace.bus import Bus
from pycm.trace.context import reset_span, set_span

_SIZES = {
    # size: (deployments rolled out, settled deployments synced, repeats)
    "tiny": (10, 200, 11),
    # 41 pairs of passes at full size (~6 s more a run than 11): on a shared 2-core machine
    # one pair's tracing ratio falls anywhere in 0.97-1.16 (outliers 0.8, 1.45), and the
    # median of 11 pairs spread over 1.048-1.072 in runs of the same code, more than the
    # overhead aim's distance from its center (~1.05); five runs of 41 spread over 1.046-1.062.
    "full": (500, 2_000, 41),
}
# size: (initial keys queued ahead of the fresh change, repeats of each queue)
_PRIORITY_SIZES = {"tiny": (500, 3), "full": (10_000, 5)}
_WORKERS = 5  # KCM's --concurrent-deployment-syncs default
_REPLICAS = 3
_CONCURRENCY = 16
_PER_NAMESPACE = 20
_MIN_WRITES = 1 + _REPLICAS + 1 + 1

Obj = dict[str, Any]


def _deployment(name: str, namespace: str = "default") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": _REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


# -- rollout (two processes) -------------------------------------------------------------------


async def _create_all(url: str, token: str, n: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    limit = asyncio.Semaphore(_CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as api:

        async def one(i: int) -> None:
            async with limit:
                r = await api.post(
                    "/apis/apps/v1/namespaces/default/deployments", json=_deployment(f"d{i}")
                )
                r.raise_for_status()

        await asyncio.gather(*(one(i) for i in range(n)))


def _rollout(n: int) -> tuple[float, float]:
    with cluster("deployment,replicaset") as c:
        with c.api() as api:
            start_ns = time.time_ns()
            start = time.perf_counter()
            asyncio.run(_create_all(c.url, c.token, n))

            def available() -> bool:
                items = api.get("/apis/apps/v1/namespaces/default/deployments").json()["items"]
                return len(items) == n and all(_available(d) for d in items)

            # Listing every deployment costs the emulator too: poll less often the more there are.
            interval = max(0.05, n / 1000)
            wait_until(available, 600, f"{n} deployments available", interval=interval)
            seconds = time.perf_counter() - start
            end_ns = time.time_ns()
        c.manager.terminate()
        c.manager.wait(timeout=30)
        writes = writes_between(c.trace, start_ns, end_ns)
    return seconds, writes / n


def _available(d: Obj) -> bool:
    status = d.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return (
        status.get("availableReplicas") == _REPLICAS
        and status.get("updatedReplicas") == _REPLICAS
        and conditions.get("Available") == "True"
    )


# -- no-op syncs (in-process) ------------------------------------------------------------------


class _Recorder:
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        pass


class _SettlingClient:
    """Applies writes to the informers' caches as the API and the ReplicaSet controller would
    (a created or resized ReplicaSet is at once fully ready), counting them."""

    def __init__(self, deployments: SharedIndexInformer, rss: SharedIndexInformer) -> None:
        self.d, self.rs = deployments.indexer, rss.indexer
        self.writes = 0
        self._uid = 0

    def _settled_rs(self, body: Obj) -> Obj:
        rs = copy.deepcopy(body)
        meta = rs["metadata"]
        if "uid" not in meta:
            self._uid += 1
            meta["uid"] = f"rs-{self._uid}"
        meta["generation"] = meta.get("generation", 0) + 1
        n = rs["spec"]["replicas"]
        rs["status"] = {
            "replicas": n,
            "fullyLabeledReplicas": n,
            "readyReplicas": n,
            "availableReplicas": n,
            "observedGeneration": meta["generation"],
        }
        self.rs.update(rs)
        return rs

    async def create_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.writes += 1
        return self._settled_rs(body)

    async def update_replica_set(self, namespace: str, body: Obj) -> Obj:
        self.writes += 1
        return self._settled_rs(body)

    async def delete_replica_set(self, namespace: str, name: str, uid: str) -> None:
        raise AssertionError("a settled deployment deletes nothing")

    async def patch_replica_set(self, namespace: str, name: str, patch: Obj) -> Obj:
        raise AssertionError("every ReplicaSet is owned from the start")

    async def get_deployment(self, namespace: str, name: str) -> Obj:
        d = self.d.get_by_key(f"{namespace}/{name}")
        assert d is not None
        return d

    async def update_deployment_status(self, namespace: str, body: Obj) -> Obj:
        self.writes += 1
        d = copy.deepcopy(body)
        d["metadata"]["resourceVersion"] = str(int(d["metadata"]["resourceVersion"]) + 1)
        self.d.update(d)
        return d


def settled_controller(n: int) -> tuple[DeploymentController, _SettlingClient, list[str], Bus]:
    """A controller over ``n`` deployments synced until a sync writes nothing."""
    bus = Bus()
    informers = [
        SharedIndexInformer(FakeListWatch(), name, bus=bus)
        for name in ("deployments", "replicasets", "pods")
    ]
    keys = []
    for i in range(n):
        namespace = f"ns{i // _PER_NAMESPACE}"
        # Straight into the cache, past any API server: defaulted here as one would default it.
        d = util.with_api_defaults(_deployment(f"d{i}", namespace))
        d["metadata"].update(uid=f"d-{i}", generation=1, resourceVersion="1")
        informers[0].indexer.add(d)
        keys.append(f"{namespace}/d{i}")
    # The client puts each write into the caches at once (as a watch that delivered it
    # immediately would): the caches have seen every write, so they are marked far past any
    # (as KCM's fixtures mark theirs synced). Else the staleness guard would see caches that
    # never moved and skip every sync — the figures would time a skip, not a sync.
    for informer in informers:
        informer.fifo.resource_version = str(10**12)
    client = _SettlingClient(informers[0], informers[1])
    builder = ControllerBuilder.standalone(
        "deployment", dict(zip((DEPLOYMENTS, REPLICASETS, PODS), informers, strict=True)), bus=bus
    )
    controller = DeploymentController(builder, client=client, recorder=_Recorder())
    return controller, client, keys, bus


async def settle(
    controller: DeploymentController, client: _SettlingClient, keys: list[str]
) -> None:
    for _ in range(5):
        before = client.writes
        for key in keys:
            await controller.sync(key)
        if client.writes == before:
            return
    raise RuntimeError("the deployments did not settle in 5 rounds of syncs")


@dataclass(frozen=True, slots=True)
class _NoopFigures:
    """Seconds a sync (medians of passes) and the paired ratios of ``_noop``."""

    bare: float
    trivial: float
    traced: float
    overhead: float  # traced / bare
    floor: float
    floor_ratio: float  # floor / bare


# tracing_floor's span: a constant of the shape a counting span has (context.py), so that the
# contextvar's set and reset cost what the traced step's do.
_FLOOR_SPAN = ("0" * 31 + "1", "0" * 15 + "1", [0])
_FLOOR_EMPTY = Result()


async def _noop(n: int, repeats: int) -> _NoopFigures:
    controller, client, keys, bus = settled_controller(n)
    await settle(controller, client, keys)
    settled_writes = client.writes
    lister = controller.d_lister

    async def trivial(key: str) -> Result:
        namespace, _, name = key.partition("/")
        copy.deepcopy(lister.get(namespace, name))
        return Result()

    async def timed(one: Any) -> float:
        start = time.perf_counter()
        for key in keys:
            await one(key)
        return (time.perf_counter() - start) / len(keys)

    # The recorder takes every event and counts what it drained. It keeps none of them past
    # the drain: events kept for the whole run would grow the collector's generations during
    # the traced passes only (a bare pass leaves nothing behind), so each traced pass would
    # run extra collections over them (measured: 55 young and 4 middle collections, 19 ms in
    # 11 traced passes of 2000 syncs, ~2.6% of the ratio; 6 and 1 ms when only counted).
    recorded = 0
    subscription = bus.subscribe(name="bench-recorder", maxsize=4 * len(keys) + 16)
    # The bound method itself, as the bare passes time controller.sync: a wrapper coroutine
    # would add a frame per sync to the traced side only.
    process = controller.controller.process

    async def traced_pass() -> float:
        nonlocal recorded
        per_sync = await timed(process)
        recorded += len(subscription.drain())
        return per_sync

    floor_ring: deque[Any] = deque(maxlen=4 * len(keys))
    sync = controller.sync

    async def floor_step(key: str) -> Result:
        # Bench.controllers' docstring, tracing_floor: what any recorded step must do.
        put = floor_ring.append
        record = [key, time.monotonic_ns()]
        put(record)
        token = set_span(_FLOOR_SPAN)
        result = await sync(key) or _FLOOR_EMPTY
        reset_span(token)
        put((record, time.monotonic_ns(), result.action))
        return _FLOOR_EMPTY

    # One warm-up pass of each (first-touch costs), then alternating passes.
    await timed(controller.sync)
    await timed(trivial)
    await traced_pass()
    await timed(floor_step)
    recorded = 0
    gc.collect()
    ours, peer, with_tracing, floor = [], [], [], []
    for i in range(repeats):
        if i % 2:
            with_tracing.append(await traced_pass())
            ours.append(await timed(controller.sync))
            floor.append(await timed(floor_step))
        else:
            floor.append(await timed(floor_step))
            ours.append(await timed(controller.sync))
            with_tracing.append(await traced_pass())
        peer.append(await timed(trivial))
    subscription.close()
    if client.writes != settled_writes:
        raise RuntimeError(f"no-op syncs wrote {client.writes - settled_writes} times")
    if controller.stale_skips:
        raise RuntimeError(f"syncs were skipped as stale, not synced: {controller.stale_skips}")
    if recorded < 2 * repeats * len(keys):
        raise RuntimeError(f"the recorder saw {recorded} events, expected a pair per sync")

    def median(values: list[float]) -> float:
        return median_of(len(values), iter(values).__next__)

    # The overhead is the median of the paired (adjacent passes) ratios: a shared machine's
    # noise moves both passes of a pair together.
    overhead = median([t / o for t, o in zip(with_tracing, ours, strict=True)])
    floor_ratio = median([f / o for f, o in zip(floor, ours, strict=True)])
    return _NoopFigures(
        median(ours), median(peer), median(with_tracing), overhead, median(floor), floor_ratio
    )


# -- time to the first reconcile of a fresh change (in-process) -------------------------------


async def _first_reconcile(n: int, repeats: int) -> tuple[float, float]:
    """Median seconds from starting the workers to the fresh key's reconcile, (priority queue,
    FIFO queue), with ``n`` initial keys queued ahead of it."""
    deployments, client, keys, bus = settled_controller(n + 1)
    await settle(deployments, client, keys)
    initial, fresh = keys[:-1], keys[-1]
    lister = deployments.d_lister

    def obj(key: str) -> Obj:
        namespace, _, name = key.partition("/")
        found = lister.get(namespace, name)
        assert found is not None
        return found

    async def once(priority_queue: bool) -> float:
        ctrl = Controller(
            "deployment",
            deployments.sync,
            resource="deployments",
            bus=bus,
            priority_queue=priority_queue,
        )
        for key in initial:
            ctrl.enqueue(key, ctrl.trigger(obj(key), "add", initial=True))
        current = obj(fresh)
        previous = {**current, "metadata": {**current["metadata"], "resourceVersion": "0"}}
        ctrl.enqueue(fresh, ctrl.trigger(current, "update", previous))
        reached: list[float] = []
        before = 0  # syncs that ran before the fresh key's
        done = asyncio.Event()

        async def sync(key: str) -> Result | None:
            nonlocal before
            if reached:
                # Measured already: the rest of the queue drains without work (the syncs never
                # yield, so the workers run on until the queue is empty).
                return None
            if key == fresh:
                reached.append(time.perf_counter())
                done.set()
                return None
            before += 1
            return await deployments.sync(key)

        ctrl.sync = sync
        start = time.perf_counter()
        task = asyncio.get_running_loop().create_task(ctrl.run(_WORKERS))
        await done.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        # The figure's premise: the priority queue hands the fresh key out first, the FIFO
        # queue after every initial key.
        if before != (0 if priority_queue else len(initial)):
            raise RuntimeError(f"{before} syncs before the fresh one (priority: {priority_queue})")
        return reached[0] - start

    await once(True)  # warm-up (first-touch costs)
    gc.collect()
    ours, peer = [], []
    for i in range(repeats):
        if i % 2:
            peer.append(await once(False))
            ours.append(await once(True))
        else:
            ours.append(await once(True))
            peer.append(await once(False))
    if deployments.stale_skips:
        raise RuntimeError(f"syncs were skipped as stale, not synced: {deployments.stale_skips}")
    return median_of(len(ours), iter(ours).__next__), median_of(len(peer), iter(peer).__next__)


def priority_figure(size: str) -> Figure:
    n, repeats = _PRIORITY_SIZES[size]
    ours, peer = asyncio.run(in_worker_context(_first_reconcile(n, repeats)))
    return Figure(
        "controllers.priority_first_reconcile",
        ours * 1e3,
        "ms",
        "fifo_queue",
        peer * 1e3,
        "ms",
        peer / ours,
    )


def run(size: str) -> list[Figure]:
    rolled, settled, repeats = _SIZES[size]
    seconds, writes_per = _rollout(rolled)
    noop = asyncio.run(in_worker_context(_noop(settled, repeats)))
    bare, trivial, traced = noop.bare, noop.trivial, noop.traced
    priority = priority_figure(size)
    instructions = instruction_figure(size)
    return [
        Figure(
            "controllers.rollout",
            seconds,
            "s",
            "minimum_api_calls",
            _MIN_WRITES,
            "calls/deployment",
            writes_per / _MIN_WRITES,
        ),
        Figure(
            "controllers.rollout_calls",
            writes_per,
            "calls/deployment",
            "minimum_api_calls",
            _MIN_WRITES,
            "calls/deployment",
            writes_per / _MIN_WRITES,
        ),
        Figure(
            "controllers.noop_syncs",
            1 / bare,
            "syncs/s",
            "trivial_sync",
            1 / trivial,
            "syncs/s",
            trivial / bare,
        ),
        Figure(
            "controllers.tracing_overhead",
            traced * 1e6,
            "µs/sync",
            "untraced_sync",
            bare * 1e6,
            "µs/sync",
            noop.overhead,
        ),
        Figure(
            "controllers.tracing_floor",
            noop.floor * 1e6,
            "µs/sync",
            "untraced_sync",
            bare * 1e6,
            "µs/sync",
            noop.floor_ratio,
        ),
        priority,
        *([instructions] if instructions is not None else []),
    ]


# size: (settled deployments, passes of each side) for tracing_instructions, under callgrind
_INSTRUCTION_SIZES = {"tiny": (20, 2), "full": (200, 5)}


async def _instruction_sides(passes: int, n: int) -> None:
    """The child of :func:`instruction_figure`, under callgrind started with
    ``--instr-atstart=no``: warm both kinds of no-op sync over ``n`` settled deployments, then
    dump the counters (the start-up's: dump 1), run ``passes`` bare passes (dump 2), then
    ``passes`` traced passes (dump 3). A dump zeroes the counters, and the child waits for each
    ``callgrind_control`` to answer, so each dump holds one side's passes and a few thousand
    instructions of the ``subprocess.run`` around it."""
    controller, client, keys, bus = settled_controller(n)
    await settle(controller, client, keys)
    subscription = bus.subscribe(name="bench-recorder", maxsize=4 * len(keys) + 16)
    process = controller.controller.process
    sync = controller.sync
    for key in keys:
        await sync(key)
    for key in keys:
        await process(key)
    subscription.drain_entries()
    gc.collect()

    def control(*args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(os.getpid())], check=True, capture_output=True
        )

    control("-i", "on")
    control("-d")
    for one in (sync, process):
        for _ in range(passes):
            for key in keys:
                await one(key)
            subscription.drain_entries()
        control("-d")
    subscription.close()


def _dumped_instructions(path: Path) -> int:
    """The instruction count of one callgrind dump (its ``summary:`` line)."""
    for line in path.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"{path}: no summary line (not a callgrind dump?)")


def instruction_figure(size: str) -> Figure | None:
    """``controllers.tracing_instructions`` (module docstring), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None or shutil.which("callgrind_control") is None:
        print(
            "# controllers.tracing_instructions: not measured: valgrind and callgrind_control "
            "are not on PATH (Debian package valgrind)",
            file=sys.stderr,
        )
        return None
    n, passes = _INSTRUCTION_SIZES[size]
    with tempfile.TemporaryDirectory(prefix="pycm-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        child = subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                "bench.controllers",
                "instructions",
                str(passes),
                str(n),
            ],
            # String hashes are drawn per process, and the sync's dict probes alone move the
            # count by ~1.5k a sync: a fixed seed makes runs of the same tree agree.
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            timeout=900,
        )
        if child.returncode != 0:
            raise RuntimeError(f"the callgrind run failed:\n{child.stderr[-2000:]}")
        syncs = passes * n
        bare = _dumped_instructions(Path(f"{out}.2")) / syncs
        traced = _dumped_instructions(Path(f"{out}.3")) / syncs
    return Figure(
        "controllers.tracing_instructions",
        traced,
        "instr/sync",
        "untraced_sync",
        bare,
        "instr/sync",
        traced / bare,
    )


def _counts(args: list[str]) -> tuple[int, int] | None:
    """(PASSES, DEPLOYMENTS) of the child's command line, or None if it is not one."""
    if len(args) != 3 or args[0] != "instructions" or not all(a.isdigit() for a in args[1:]):
        return None
    passes, deployments = int(args[1]), int(args[2])
    return (passes, deployments) if passes and deployments else None


if __name__ == "__main__":
    counts = _counts(sys.argv[1:])
    if counts is None:
        print(
            "usage: python -m bench.controllers instructions PASSES DEPLOYMENTS "
            "(the child of controllers.tracing_instructions, under callgrind)",
            file=sys.stderr,
        )
        sys.exit(2)
    asyncio.run(in_worker_context(_instruction_sides(*counts)))
