"""What "why did it run" costs: N objects × U updates each through one manager's path, with the
object histories on and off, measured in the same run.

Each update is what a watched Deployment's change does in ``pycm run``, in process (no server
and no network, so the figure is the manager's own work, the part the histories could slow):
the object as served (a managedFields entry naming an outside writer) goes through the
informer's transform (which notes its writers, pycm.trace.causes), the handler computes its
trigger (changed paths, writer) and enqueues the key, a worker reconciles it with a sync that
writes the object's status once through pycm's API client (its request, the decoding of the
response, its note of the write's resourceVersion and its ``api.request`` event; the response
comes from an in-process transport), and the state reducer folds every event, as ``pycm
run``'s reducer task does — with ``State()`` (histories on, the default) or
``State(histories=False)`` (``--object-histories=false``). Rounds alternate the two; values
are medians.

Figures:

- ``why.throughput``: updates/s with histories on; peer: the same with them off; ratio on / off
  (the issue's aim: ≥ 0.95).
- ``why.fold``: the reducer alone, events folded per second with the histories on; peer: the
  same events with them off. What the histories cost the reducer itself, apart from the rest of
  the manager's work (no aim: the throughput above is the figure that counts).
- ``why.history_bytes``: bytes the histories and the cause tables hold after the run (traced
  with tracemalloc: the state with histories on less the state with them off, plus the cause
  table); peer: the bytes of the informer cache of the same N objects (their decoded dicts, as
  cached); ratio history / cache (lower is better).

Sizes: tiny 100 × 4 (keeps the bench working); full 10 000 objects × 3 updates, five rounds
of each side (the median of five: on a shared machine one pair's ratio moves by ±10 %). The
issue asks for 10 000 × 100; a hundred would take half an hour a side through the client, and
the histories are full (16 MiB of steps, some 28 000) within the first 10 000 updates, so most
updates of a run are of the steady state the figures are about.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
import tracemalloc
from typing import Any

import httpx
import orjson

from bench.harness import Figure
from pycm.cache.shared_informer import note_writers
from pycm.cache.transform import drop_managed_fields
from pycm.controller import Controller, Result
from pycm.kube.client import Client
from pycm.kube.config import ClientConfig
from pycm.kube.resources import DEPLOYMENTS
from pycm.trace.bus import Bus
from pycm.trace.state import State

_SIZES = {"tiny": (100, 4, 1), "full": (10_000, 3, 5)}  # objects, updates each, rounds


def _served(i: int, rv: int, replicas: int) -> dict[str, Any]:
    """Deployment ``i`` as the server sends it at ``rv``: kubectl scaled it last."""
    name = f"web-{i}"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{i}",
            "resourceVersion": str(rv),
            "generation": replicas,
            "labels": {"app": name},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "managedFields": [
                {
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2026-12-06T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
                },
                {
                    "manager": "kubectl-scale",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": f"2026-12-06T10:{rv // 60 % 60:02d}:{rv % 60:02d}Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}},
                    "subresource": "scale",
                },
            ],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
        "status": {"observedGeneration": replicas - 1, "replicas": replicas - 1},
    }


class _Run:
    """One manager's path for N objects (see the module docstring)."""

    def __init__(self, n: int, histories: bool) -> None:
        self.bus = Bus(instance="bench-why")
        self.state = State(histories=histories)
        self.transform = note_writers(self.bus.causes, drop_managed_fields)
        self.rv = 1
        self.cache: dict[str, dict[str, Any]] = {}
        self.controller = Controller("deployment", self._sync, resource="deployments", bus=self.bus)
        for i in range(n):
            self.cache[f"default/web-{i}"] = self.transform(_served(i, self._next_rv(), 1))
        # No rate limit (qps < 0): the figure is the work, not a token bucket's pace.
        config = ClientConfig(server="http://bench.invalid", qps=-1)
        self.client = Client(config, transport=httpx.MockTransport(self._serve), bus=self.bus)

    def _serve(self, request: httpx.Request) -> httpx.Response:
        """The server's side of a status update: the object back at a new resourceVersion."""
        obj = orjson.loads(request.content)
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        return httpx.Response(200, content=orjson.dumps(obj))

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    async def _sync(self, key: str) -> Result:
        # The status write a reconcile makes: the client notes the resourceVersion its response
        # returned and emits its request event inside the reconcile's span.
        obj = self.cache[key]
        status = {**obj, "status": {**obj["status"], "observedGeneration": obj["spec"]["replicas"]}}
        await self.client.update_status(DEPLOYMENTS, status, namespace="default")
        return Result(action="status_updated", api_calls=1)

    async def updates(self, rounds: int, record: list[Any] | None = None) -> None:
        """``rounds`` updates of every object: each a watch event in, a reconcile, the fold
        (and the events into ``record``, when given)."""
        ctrl = self.controller
        with self.bus.subscribe(name="reducer", maxsize=1 << 20) as sub:
            for _ in range(rounds):
                for key, old in list(self.cache.items()):
                    i = int(key.rsplit("-", 1)[1])
                    replicas = old["spec"]["replicas"] + 1
                    new = self.transform(_served(i, self._next_rv(), replicas))
                    self.cache[key] = new
                    ctrl.enqueue(key, ctrl.trigger(new, "update", old))
                    await ctrl.process(key)
                    ctrl.queue.forget(key)
                events = sub.drain()
                for event in events:
                    self.state.apply(event)
                if record is not None:
                    record.extend(events)


def _fold_rates(n: int, updates: int, rounds: int) -> tuple[list[float], list[float]]:
    """Events folded per second by ``State()`` and by ``State(histories=False)``, alternated."""
    events: list[Any] = []
    asyncio.run(_Run(n, False).updates(updates, events))
    on: list[float] = []
    off: list[float] = []
    for i in range(max(rounds, 1) * 3):
        for histories in (True, False) if i % 2 == 0 else (False, True):
            state = State(histories=histories)
            apply = state.apply
            gc.collect()
            start = time.perf_counter()
            for event in events:
                apply(event)
            (on if histories else off).append(len(events) / (time.perf_counter() - start))
    return on, off


def _throughput(n: int, updates: int, histories: bool) -> float:
    run = _Run(n, histories)
    gc.collect()
    start = time.perf_counter()
    asyncio.run(run.updates(updates))
    return n * updates / (time.perf_counter() - start)


def _held(n: int, updates: int, histories: bool) -> int:
    """Bytes the state and the cause table hold after the run (tracemalloc)."""
    run = _Run(n, histories)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(run.updates(updates))
        run.cache.clear()  # (the objects themselves are the peer's, not the histories')
        run.controller.queue.shut_down()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held


def _cache_bytes(n: int) -> int:
    """Bytes of the informer cache of the same N objects (managedFields dropped, as cached)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = {f"default/web-{i}": drop_managed_fields(_served(i, i + 2, 2)) for i in range(n)}
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del cache
    return held


def run(size: str) -> list[Figure]:
    n, updates, rounds = _SIZES[size]
    on: list[float] = []
    off: list[float] = []
    for i in range(max(rounds, 1)):
        for histories in (True, False) if i % 2 == 0 else (False, True):
            (on if histories else off).append(_throughput(n, updates, histories))
    ratios = [a / b for a, b in zip(on, off, strict=True)]
    print(
        f"# {n} objects × {updates} updates; updates/s on {[round(x) for x in on]}, "
        f"off {[round(x) for x in off]}",
        flush=True,
    )
    fold_on, fold_off = _fold_rates(n, updates, rounds)
    # The histories are bounded (50 steps an object, 16 MiB, 4096 objects): what they hold has
    # levelled off long before 20 updates an object, so the memory runs stop there.
    held_updates = min(updates, 20)
    with_histories = _held(n, held_updates, True)
    without = _held(n, held_updates, False)
    history_bytes = max(0, with_histories - without) + _cause_table_bytes(n, held_updates)
    cache = _cache_bytes(n)
    return [
        Figure(
            "why.throughput",
            statistics.median(on),
            "updates/s",
            "histories_off",
            statistics.median(off),
            "updates/s",
            statistics.median(ratios),
        ),
        Figure(
            "why.fold",
            statistics.median(fold_on),
            "events/s",
            "histories_off",
            statistics.median(fold_off),
            "events/s",
            statistics.median(a / b for a, b in zip(fold_on, fold_off, strict=True)),
        ),
        Figure(
            "why.history_bytes",
            history_bytes,
            "bytes",
            "informer_cache",
            cache,
            "bytes",
            history_bytes / cache if cache else 0.0,
        ),
    ]


def _cause_table_bytes(n: int, updates: int) -> int:
    """The cause table's share: held by both runs alike, so measured on its own."""
    run_ = _Run(n, False)
    asyncio.run(run_.updates(updates))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        copy = _copy_causes(run_)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del copy
    return held


def _copy_causes(run_: _Run) -> Any:
    # A copy of the tables' containers and keys made under tracing stands for their size: the
    # entries' tuples are shared with the records (counted with the state).
    causes = run_.bus.causes
    return (causes._writes.to_dict(), causes._writers.to_dict(), causes._deletes.to_dict())


if __name__ == "__main__":
    for figure in run("tiny"):
        print(figure.line())
