"""The emulator's memory under churn: does its RSS plateau, or grow without bound?

The emulator runs in its own process (started with explicit options: plain HTTP, no kubelet,
the default watch window and history bound, and ``pycm sim``'s collector policy), so only its
memory is measured. Clients churn through it for the run's duration: ``_WORKERS`` loops each
create a ConfigMap (~2 KiB of data), update it, delete it, and create and delete a Pod, under
names that cycle (the live set stays small), while ``_WATCHERS`` watches (configmaps and pods,
all namespaces) read every event. The process's RSS is sampled each second from /proc.

- ``sim_memory.rss_growth_after_warmup``: MB/min of RSS growth from the end of the warm-up
  (the first fifth of the run: two minutes at full size, about when the 10k-event watch window
  has filled at this churn) to the end, by a least-squares line through the samples. Peer:
  ``sim_memory.rss_growth_warmup``, the same slope over the warm-up, while the watch history
  fills. Ratio: after / warm-up — near 0 is a plateau, about
  1 is growth that never stops (the ratio is a cost here: lower is better).

Full size churns for 10 minutes (``python -m bench sim_memory``); tiny for a few seconds, in
tests/bench, to keep the benchmark working.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import orjson

from bench._emulator_child import emulator_child
from bench.harness import Figure

_DURATION = {"tiny": 3.0, "full": 600.0}
_WORKERS = 8
_WATCHERS = 4
_NAMES = 50  # each worker cycles through this many names

# The emulator's options are explicit (TLS off, kubelet off) so the benchmark does not depend
# on its defaults, and it runs with the collector policy ``pycm sim`` runs with (pycm.sim.heap:
# a cycle through an object alive at a freeze is never collected, which a plateau shows it does
# not grow by).
_EMULATOR = {"tls": False, "kubelet": False, "nodes": 1}


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _slope_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB per minute."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (m - mean_m) for t, m in samples)
    return cov / var * 60.0


def _configmap(name: str, i: int) -> bytes:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "churn"}},
        "data": {"payload": f"{i:08d}" * 256},  # 2 KiB
    }
    return orjson.dumps(body)


def _pod(name: str) -> bytes:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "churn"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
    }
    return orjson.dumps(body)


async def _churn(
    http: httpx.AsyncClient, worker: int, stop: asyncio.Event, done: list[int]
) -> None:
    ns = "/api/v1/namespaces/default"
    i = 0
    while not stop.is_set():
        name = f"churn-{worker}-{i % _NAMES}"
        r = await http.post(f"{ns}/configmaps", content=_configmap(name, i))
        if r.status_code == 201:
            await http.patch(
                f"{ns}/configmaps/{name}",
                content=orjson.dumps({"metadata": {"annotations": {"i": str(i)}}}),
                headers={"Content-Type": "application/merge-patch+json"},
            )
            await http.delete(f"{ns}/configmaps/{name}")
        r = await http.post(f"{ns}/pods", content=_pod(name))
        if r.status_code == 201:
            await http.delete(f"{ns}/pods/{name}", params={"gracePeriodSeconds": "0"})
        done[0] += 5
        i += 1


async def _watch(
    http: httpx.AsyncClient, resource: str, stop: asyncio.Event, seen: list[int]
) -> None:
    while not stop.is_set():
        try:
            async with http.stream(
                "GET", f"/api/v1/{resource}", params={"watch": "1", "timeoutSeconds": "60"}
            ) as r:
                async for line in r.aiter_lines():
                    if line:
                        seen[0] += 1
                    if stop.is_set():
                        return
        except httpx.HTTPError:
            await asyncio.sleep(0.1)  # the watch was ended (overflow or timeout): rewatch


async def _run(
    url: str, token: str, pid: int, duration: float
) -> tuple[list[tuple[float, float]], int, int]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=_WORKERS + _WATCHERS + 4)
    samples: list[tuple[float, float]] = []
    done, seen = [0], [0]
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as http:
        start = time.monotonic()
        async with asyncio.TaskGroup() as tg:
            for w in range(_WATCHERS):
                resource = ("configmaps", "pods")[w % 2]
                tg.create_task(_watch(http, resource, stop, seen), name=f"bench-watch-{w}")
            for w in range(_WORKERS):
                tg.create_task(_churn(http, w, stop, done), name=f"bench-churn-{w}")
            while (now := time.monotonic() - start) < duration:
                samples.append((now, _rss_mb(pid)))
                await asyncio.sleep(min(1.0, duration / 12))
            samples.append((time.monotonic() - start, _rss_mb(pid)))
            stop.set()
    return samples, done[0], seen[0]


def run(size: str) -> list[Figure]:
    duration = _DURATION[size]
    with emulator_child(freeze=True, **_EMULATOR) as (url, token, pid):
        samples, requests, events = asyncio.run(_run(url, token, pid, duration))
    warm_end = duration / 5
    warmup = [s for s in samples if s[0] <= warm_end]
    after = [s for s in samples if s[0] >= warm_end]
    growth_warmup = _slope_per_min(warmup)
    growth_after = _slope_per_min(after)
    ratio = growth_after / growth_warmup if abs(growth_warmup) > 1e-9 else 0.0
    print(
        f"# sim_memory: {duration:.0f}s, {requests} requests ({requests / duration:.0f}/s), "
        f"{events} watch events read, RSS {samples[0][1]:.1f} → {samples[-1][1]:.1f} MB",
        flush=True,
    )
    return [
        Figure(
            "sim_memory.rss_growth_after_warmup",
            growth_after,
            "MB/min",
            "sim_memory.rss_growth_warmup",
            growth_warmup,
            "MB/min",
            ratio,
        )
    ]
