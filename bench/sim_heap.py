"""The emulator's longest stall while its store and watch history grow: frozen or full GC.

Two emulator processes, one after the other, each seeded with ``n`` realistic pods (the
informers bench's, ~5 KB of JSON each) and then ``updates`` PUTs bumping an annotation (each a
MODIFIED event the watch history keeps, a pod dict tree each), while a prober in the driver
GETs ``/version`` every ``_PROBE_EVERY`` s. The prober's longest wait is the longest time the
emulator served nothing: at this heap, a full garbage collection.

- ``sim_heap.longest_stall``: the prober's longest wait (ms) against an emulator that freezes
  the survivors of each full collection, as ``pycm sim`` does (pycm.sim.heap). Peer:
  ``sim_heap.without_freezing``, the same emulator and load with CPython's default collector.
  Ratio ours / peer (a cost: lower is better).

Each emulator is a child process running ``run_emulator`` (plain HTTP, no kubelet, a watch
history that keeps every event of the run), with the policy installed or not; the driver's own
collector is off while it writes (its garbage is acyclic), so its pauses do not show as the
emulator's.
"""

from __future__ import annotations

import asyncio
import gc
import time

import httpx

from bench._emulator_child import emulator_child
from bench._kubehttp import HttpClient
from bench.harness import Figure
from bench.informers import modify, seed

_SIZES = {
    # size: (pods seeded, MODIFIED events written)
    "tiny": (100, 100),
    "full": (10_000, 20_000),
}
_PROBE_EVERY = 0.02

# The emulator: plain HTTP, no kubelet, and a watch history that keeps every event of the run.
_EMULATOR = {
    "tls": False,
    "kubelet": False,
    "nodes": 1,
    "watch_window": 200_000,
    "watch_history_bytes": 4 << 30,
}


async def _probe(url: str, stop: asyncio.Event) -> tuple[float, int]:
    """(the longest /version round trip in s, how many were taken) until ``stop``."""
    longest, taken = 0.0, 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        while not stop.is_set():
            start = time.perf_counter()
            response = await http.get("/version")
            response.raise_for_status()
            longest = max(longest, time.perf_counter() - start)
            taken += 1
            await asyncio.sleep(_PROBE_EVERY)
    return longest, taken


async def _load(url: str, token: str, pods: int, updates: int) -> tuple[float, int]:
    client = HttpClient(url, token)
    stop = asyncio.Event()
    prober = asyncio.create_task(_probe(url, stop), name="bench-sim-heap-probe")
    gc.disable()
    try:
        stored = await seed(client, pods)
        await modify(client, stored, updates)
    finally:
        gc.enable()
        stop.set()
        await client.aclose()
    return await prober


def _stall(policy: str, pods: int, updates: int) -> float:
    with emulator_child(freeze=policy == "freeze", **_EMULATOR) as (url, token, _):
        longest, taken = asyncio.run(_load(url, token, pods, updates))
    print(f"# sim_heap {policy}: {taken} probes, longest {longest * 1e3:.0f} ms", flush=True)
    return longest * 1e3


def run(size: str) -> list[Figure]:
    pods, updates = _SIZES[size]
    ours = _stall("freeze", pods, updates)
    peer = _stall("default", pods, updates)
    return [
        Figure(
            "sim_heap.longest_stall",
            ours,
            "ms",
            "sim_heap.without_freezing",
            peer,
            "ms",
            ours / peer,
        )
    ]
