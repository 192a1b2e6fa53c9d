"""Memory under churn (``bench soak``'s second part): does the manager's and the emulator's RSS
level off?

The scenario (issue 40): an instant-kubelet emulator and one ``pycm run`` (deployment and
replicaset controllers, a trace file, as ``bench.replicaset.cluster`` starts them), a
Deployment of 10 replicas; every 3 s its replicas flip between 10 and 12, every 1.4 s one of its
pods is deleted. After a warm-up (caches, histories and tables filling to their bounds) each
process's RSS (``VmRSS``, what a pod's memory limit counts) is sampled at a fixed interval and
the least-squares slope of the samples is reported in MB per minute. A manager whose memory
levels off shows ~0; one that keeps decoded objects it no longer caches shows a steady climb
(1.6 MB/min before issue 40).
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.replicaset import cluster, wait_until

NAME = "churn"
REPLICAS = (10, 12)
SCALE_EVERY = 3.0
DELETE_EVERY = 1.4
_WATCH_WINDOW = 10_000  # pycm sim's default --watch-window


@dataclass
class RssSlope:
    """One process's RSS samples after the warm-up (MB) and their slope (MB/min)."""

    name: str
    samples: list[tuple[float, float]]  # (seconds since the warm-up ended, MB)

    @property
    def start_mb(self) -> float:
        return self.samples[0][1]

    @property
    def slope_mb_per_min(self) -> float:
        n = len(self.samples)
        if n < 2:
            return 0.0
        mean_t = sum(t for t, _ in self.samples) / n
        mean_m = sum(m for _, m in self.samples) / n
        var = sum((t - mean_t) ** 2 for t, _ in self.samples)
        cov = sum((t - mean_t) * (m - mean_m) for t, m in self.samples)
        return cov / var * 60.0 if var else 0.0


def rss_mb(pid: int) -> float:
    """The resident set of ``pid`` in MB (``VmRSS`` from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _deployment(replicas: int) -> dict[str, object]:
    labels = {"app": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def _available(api: httpx.Client, replicas: int) -> bool:
    status = api.get(f"/apis/apps/v1/namespaces/default/deployments/{NAME}").json()["status"]
    return bool(status.get("availableReplicas") == replicas)


def _churn_until(api: httpx.Client, deadline: float, rng: random.Random, flip: list[int]) -> None:
    """Scale and delete on the scenario's beat until ``deadline`` (monotonic)."""
    now = time.monotonic()
    next_scale, next_delete = now + SCALE_EVERY, now + DELETE_EVERY
    path = f"/apis/apps/v1/namespaces/default/deployments/{NAME}"
    merge = {"Content-Type": "application/merge-patch+json"}
    while (now := time.monotonic()) < deadline:
        if now >= next_scale:
            flip[0] ^= 1
            body = b'{"spec":{"replicas":%d}}' % REPLICAS[flip[0]]
            api.patch(path, content=body, headers=merge).raise_for_status()
            next_scale += SCALE_EVERY
        if now >= next_delete:
            pods = api.get("/api/v1/namespaces/default/pods", params={"labelSelector": "app=churn"})
            names = [p["metadata"]["name"] for p in pods.json()["items"]]
            if names:
                victim = rng.choice(names)
                gone = api.delete(f"/api/v1/namespaces/default/pods/{victim}")
                if gone.status_code not in (200, 404):
                    gone.raise_for_status()
            next_delete += DELETE_EVERY
        time.sleep(max(0.0, min(next_scale, next_delete, deadline) - time.monotonic()))


def measure(
    warmup_s: float, measure_s: float, sample_every_s: float, manager_args: tuple[str, ...] = ()
) -> list[RssSlope]:
    """The manager's and the emulator's RSS slopes under churn (see the module docstring)."""
    rng = random.Random(40)
    # The emulator's default watch window (not the million events of the throughput benches,
    # which would be a growth of their own).
    churned = cluster(
        "deployment,replicaset", watch_window=_WATCH_WINDOW, manager_args=manager_args
    )
    with churned as c, c.api() as api:
        processes: list[tuple[str, subprocess.Popen[bytes] | subprocess.Popen[str]]] = [
            ("manager", c.manager),
            ("emulator", c.sim),
        ]
        api.post(
            "/apis/apps/v1/namespaces/default/deployments", json=_deployment(REPLICAS[0])
        ).raise_for_status()
        wait_until(lambda: _available(api, REPLICAS[0]), 60, "the deployment available")
        flip = [0]
        _churn_until(api, time.monotonic() + warmup_s, rng, flip)
        slopes = [RssSlope(name, []) for name, _ in processes]
        start = time.monotonic()
        end = start + measure_s
        while True:
            at = time.monotonic() - start
            for slope, (_, proc) in zip(slopes, processes, strict=True):
                if proc.poll() is not None:
                    raise RuntimeError(f"{slope.name} exited ({proc.returncode}) under churn")
                slope.samples.append((at, rss_mb(proc.pid)))
            if time.monotonic() >= end:
                break
            _churn_until(api, min(end, time.monotonic() + sample_every_s), rng, flip)
        return slopes
