"""A Deployment's rollouts under API faults: the surge and availability bounds, no duplicate RS.

The scenario (issue 16; the chaos e2e test runs it short, tests/e2e_controllers): an in-process
emulator with its kubelet, one ``pycm run`` process, a Deployment of 10 replicas with maxSurge 2
and maxUnavailable 1. Rollouts (a new image each) first without faults, then in rounds with
faults injected through ``/sim/v1/faults`` on the manager's requests only: 500s and 429s at
rate 0.3, 0.5 s latency, and every 2.5 s the watch history compacted and every watch dropped.
An observer (another user, not faulted) watches pods and ReplicaSets and checks at every event:

- live pods (not being deleted) ≤ replicas + maxSurge, ready ones ≥ replicas − maxUnavailable;
- Σ ReplicaSet spec.replicas ≤ replicas + maxSurge, Σ availableReplicas ≥ replicas −
  maxUnavailable;

and at the end counts the ReplicaSets ever made per template (exactly one each).

Figures:

- ``soak.violations``: bound violations seen with faults, plus duplicate ReplicaSets (peer:
  violations during the clean rollouts of the same run; ratio (1 + peer) / (1 + ours): 1 is
  ideal, lower is worse).
- ``soak.rollout_slowdown``: mean rollout time (image change → complete) with faults / without
  (x; peer: the mean rollout without faults in s; ratio clean / faulted, a cost: 1 would be no
  slowdown). A round's faults last its whole length even when its rollout completes sooner.

- ``soak.manager_rss_slope`` and ``soak.emulator_rss_slope``: memory under churn
  (:mod:`bench._churn`: a Deployment's replicas flipped 10 ↔ 12 every 3 s and one of its pods
  deleted every 1.4 s; after a warm-up, the least-squares slope of each process's RSS): MB/min
  (issue 40's aim ≤ 0.1); peer: its RSS when the warm-up ended; ratio slope / that RSS.

The observer's watches are dropped too (the action ends every watch): it re-watches from its
last resourceVersion at once, and relists (checking the listed state) when that was compacted
— the only moments it could miss a transient state; ``relists`` counts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench._churn import measure
from bench.harness import Figure
from pycm.sim.auth import ADMIN_GROUP, UserInfo
from pycm.sim.server import Emulator, run_emulator
from pycm.util.ports import free_port

__all__ = ["SoakResult", "run", "soak"]

Obj = dict[str, Any]

NS = "default"
NAME = "web"
REPLICAS, SURGE, UNAVAILABLE = 10, 2, 1
DEPLOY_PATH = f"/apis/apps/v1/namespaces/{NS}/deployments"
RS_PATH = f"/apis/apps/v1/namespaces/{NS}/replicasets"
POD_PATH = f"/api/v1/namespaces/{NS}/pods"
MANAGER_USER = "admin"  # the user of the emulator's kubeconfig, which pycm run uses
CHAOS_INTERVAL = 2.5
FAULTS: list[Obj] = [
    {"kind": "error", "status": 500, "rate": 0.3},
    {"kind": "error", "status": 429, "rate": 0.3},
    {"kind": "latency", "seconds": 0.5},
]
_START_TIMEOUT = 60.0

_SIZES = {
    # size: (rollouts without faults, rounds with faults, seconds of faults per round)
    "tiny": (1, 1, 2.0),
    "full": (3, 8, 15.0),
}


@dataclass
class SoakResult:
    violations: list[str] = field(default_factory=list)  # during the rounds with faults
    clean_violations: list[str] = field(default_factory=list)  # during the clean rollouts
    clean_rollouts: list[float] = field(default_factory=list)  # seconds each
    faulted_rollouts: list[float] = field(default_factory=list)
    rs_per_template: dict[str, int] = field(default_factory=dict)  # image -> RSs ever made
    collision_count: int = 0
    events: int = 0
    relists: int = 0


def _image(obj: Obj) -> str:
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _owned_by_deployment(rs: Obj) -> bool:
    refs = rs["metadata"].get("ownerReferences") or []
    return any(r.get("kind") == "Deployment" and r.get("name") == NAME for r in refs)


def _live(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return "deletionTimestamp" not in pod["metadata"] and phase not in ("Succeeded", "Failed")


def check_pods(objects: dict[str, Obj]) -> str | None:
    pods = [p for p in objects.values() if (p["metadata"].get("labels") or {}).get("app") == NAME]
    live = [p for p in pods if _live(p)]
    ready = sum(1 for p in live if _ready(p))
    if len(live) > REPLICAS + SURGE:
        return f"{len(live)} live pods > {REPLICAS} + {SURGE} ({_by_template(live)})"
    if ready < REPLICAS - UNAVAILABLE:
        return f"{ready} ready pods < {REPLICAS} - {UNAVAILABLE}"
    return None


def _by_template(pods: list[Obj]) -> str:
    counts: dict[str, int] = {}
    for pod in pods:
        key = (pod["metadata"].get("labels") or {}).get("pod-template-hash", "?")
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))


def _sizes(replica_sets: dict[str, Obj]) -> str:
    """Each of the deployment's ReplicaSets as hash=spec/status.replicas."""
    return ", ".join(
        f"{name.rsplit('-', 1)[-1]}={rs['spec'].get('replicas')}/"
        f"{(rs.get('status') or {}).get('replicas')}"
        for name, rs in sorted(replica_sets.items())
        if _owned_by_deployment(rs)
    )


def check_replica_sets(objects: dict[str, Obj]) -> str | None:
    rss = [rs for rs in objects.values() if _owned_by_deployment(rs)]
    size = sum(int(rs["spec"].get("replicas") or 0) for rs in rss)
    available = sum(int((rs.get("status") or {}).get("availableReplicas") or 0) for rs in rss)
    if size > REPLICAS + SURGE:
        return f"replica sets sized {size} > {REPLICAS} + {SURGE}"
    if available < REPLICAS - UNAVAILABLE:
        return f"replica sets available {available} < {REPLICAS} - {UNAVAILABLE}"
    return None


class Observer:
    """One collection as a watch sees it, checked at every event (and every relist)."""

    def __init__(
        self, api: httpx.AsyncClient, path: str, check: Callable[[dict[str, Obj]], str | None]
    ) -> None:
        self.api, self.path, self.check = api, path, check
        self.objects: dict[str, Obj] = {}
        self.added: dict[str, Obj] = {}  # every object ever seen, by name (its first version)
        self.violations: list[str] = []
        self.events = 0
        self.relists = 0
        self.checking = False  # off until the scenario's starting state has settled
        self.streaming = asyncio.Event()
        self.context: Callable[[], str] | None = None  # more to say with a violation

    def _checked(self, where: str) -> None:
        if not self.checking:
            return
        problem = self.check(self.objects)
        if problem is not None:
            context = f" | {self.context()}" if self.context is not None else ""
            self.violations.append(f"{self.path.rsplit('/', 1)[-1]} {where}: {problem}{context}")

    async def _list(self) -> str:
        r = await self.api.get(self.path)
        r.raise_for_status()
        body = r.json()
        self.objects = {o["metadata"]["name"]: o for o in body["items"]}
        for name, obj in self.objects.items():
            self.added.setdefault(name, obj)
        return str(body["metadata"]["resourceVersion"])

    async def run(self) -> None:
        rv = await self._list()
        while True:
            expired = False
            async with self.api.stream(
                "GET", f"{self.path}?watch=1&resourceVersion={rv}", timeout=None
            ) as response:
                if response.status_code == 410:
                    expired = True
                else:
                    response.raise_for_status()
                    self.streaming.set()
                    async for line in response.aiter_lines():
                        if not line:
                            continue
                        event = orjson.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            expired = obj.get("code") == 410
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] == "BOOKMARK":
                            continue
                        name = obj["metadata"]["name"]
                        if event["type"] == "DELETED":
                            self.objects.pop(name, None)
                        else:
                            self.objects[name] = obj
                            self.added.setdefault(name, obj)
                        self.events += 1
                        self._checked(f"{event['type']} {name}")
            if expired:
                self.relists += 1
                rv = await self._list()
                self._checked("relist")


def _deployment() -> Obj:
    labels = {"app": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": SURGE, "maxUnavailable": UNAVAILABLE},
            },
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "v0"}]},
            },
        },
    }


async def _complete(api: httpx.AsyncClient, image: str) -> bool:
    d = (await api.get(f"{DEPLOY_PATH}/{NAME}")).json()
    status = d.get("status") or {}
    if _image(d) != image or status.get("observedGeneration") != d["metadata"]["generation"]:
        return False
    if not (
        status.get("updatedReplicas") == REPLICAS
        and status.get("replicas") == REPLICAS
        and status.get("availableReplicas") == REPLICAS
    ):
        return False
    rss = [rs for rs in (await api.get(RS_PATH)).json()["items"] if _owned_by_deployment(rs)]
    sized = [rs for rs in rss if rs["spec"].get("replicas")]
    pods = [p for p in (await api.get(POD_PATH)).json()["items"] if _live(p)]
    return len(sized) == 1 and _image(sized[0]) == image and len(pods) == REPLICAS


async def _until(fn: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await fn():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout:g}s")


async def _chaos(api: httpx.AsyncClient, seconds: float, admin: dict[str, str]) -> None:
    """Every CHAOS_INTERVAL for ``seconds``: compact the watch history, drop every watch."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(CHAOS_INTERVAL, left))
        for action in ("compact", "drop-watches"):
            r = await api.post("/sim/v1/faults", json={"kind": action}, headers=admin)
            r.raise_for_status()


async def _rollout(
    api: httpx.AsyncClient, image: str, faults_for: float, timeout: float, admin: dict[str, str]
) -> float:
    """Set the image, with faults for ``faults_for`` seconds (0: none; posted with the ``admin``
    headers); the seconds until the rollout completed (the round still lasts ``faults_for``
    when it completes sooner)."""
    if faults_for:
        for fault in FAULTS:
            spec = {**fault, "user": MANAGER_USER, "duration": faults_for}
            (await api.post("/sim/v1/faults", json=spec, headers=admin)).raise_for_status()
    start = time.monotonic()
    chaos = asyncio.create_task(_chaos(api, faults_for, admin), name="soak chaos")
    try:
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
        r = await api.patch(
            f"{DEPLOY_PATH}/{NAME}",
            content=orjson.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        r.raise_for_status()
        await _until(lambda: _complete(api, image), faults_for + timeout, f"rollout to {image}")
        seconds = time.monotonic() - start
        await chaos
    finally:
        chaos.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await chaos
    return seconds


def _start_manager(emu: Emulator, tmp: Path) -> tuple[subprocess.Popen[bytes], str, Any]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    out = (tmp / "manager.log").open("wb")
    argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(emu.kubeconfig_path)]
    argv += ["--leader-elect=false", "--secure-port", str(port), "--bind-address", "127.0.0.1"]
    argv += ["--identity", "soak", "--kube-api-qps", "500", "--kube-api-burst", "1000"]
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    return proc, f"https://127.0.0.1:{port}", out


async def _stop_manager(proc: subprocess.Popen[bytes], out: Any) -> None:
    if proc.poll() is None:
        proc.terminate()
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out.close()


async def soak(
    *, clean: int, rounds: int, round_s: float, rollout_timeout: float = 60.0
) -> SoakResult:
    """The scenario: ``clean`` rollouts without faults, then ``rounds`` rollouts each with
    ``round_s`` seconds of faults (then waited for, at most ``rollout_timeout`` s each)."""
    result = SoakResult()
    with tempfile.TemporaryDirectory(prefix="pycm-soak-") as tmp:
        async with run_emulator(
            tls=False, kubelet=True, pod_ready_delay=0.15, pod_terminate_delay=0.0, nodes=2
        ) as emu:
            proc, url, out = _start_manager(emu, Path(tmp))
            # The observer is a user of its own (the faults are the manager's user's only);
            # the fault API takes the emulator's admin token alone (docs/sim.md).
            token = secrets.token_urlsafe(16)
            emu.authenticator.add(token, UserInfo("soak-observer", "soak", (ADMIN_GROUP,)))
            headers = {"Authorization": f"Bearer {token}"}
            admin = {"Authorization": f"Bearer {emu.admin_token}"}
            tasks: list[asyncio.Task[None]] = []
            try:
                async with (
                    httpx.AsyncClient(base_url=emu.url, headers=headers, timeout=30) as api,
                    httpx.AsyncClient(verify=False, timeout=5) as probe,
                ):

                    async def ready() -> bool:
                        if proc.poll() is not None:
                            raise AssertionError(
                                (Path(tmp) / "manager.log").read_text(errors="replace")
                            )
                        with contextlib.suppress(httpx.TransportError):
                            return (await probe.get(f"{url}/readyz")).status_code == 200
                        return False

                    await _until(ready, _START_TIMEOUT, "pycm run ready")
                    (await api.post(DEPLOY_PATH, json=_deployment())).raise_for_status()
                    await _until(lambda: _complete(api, "v0"), rollout_timeout, "first rollout")
                    observers = [
                        Observer(api, POD_PATH, check_pods),
                        Observer(api, RS_PATH, check_replica_sets),
                    ]
                    observers[0].context = lambda: _sizes(observers[1].objects)
                    for o in observers:
                        tasks.append(asyncio.create_task(o.run(), name=f"observe {o.path}"))
                    for o in observers:
                        await asyncio.wait_for(o.streaming.wait(), 10)
                        o.checking = True
                    image = 0
                    for _ in range(clean):
                        image += 1
                        seconds = await _rollout(api, f"v{image}", 0, rollout_timeout, admin)
                        result.clean_rollouts.append(seconds)
                    marks = [len(o.violations) for o in observers]
                    for _ in range(rounds):
                        image += 1
                        seconds = await _rollout(api, f"v{image}", round_s, rollout_timeout, admin)
                        result.faulted_rollouts.append(seconds)
                    for task in tasks:
                        if task.done():
                            task.result()  # an observer that failed fails the run
                    d = (await api.get(f"{DEPLOY_PATH}/{NAME}")).json()
                    result.collision_count = int((d.get("status") or {}).get("collisionCount") or 0)
                    rs_observer = observers[1]
                    for rs in (await api.get(RS_PATH)).json()["items"]:
                        rs_observer.added.setdefault(rs["metadata"]["name"], rs)
                    for rs in rs_observer.added.values():
                        if _owned_by_deployment(rs):
                            key = _image(rs)
                            result.rs_per_template[key] = result.rs_per_template.get(key, 0) + 1
                    for o, mark in zip(observers, marks, strict=True):
                        result.clean_violations.extend(o.violations[:mark])
                        result.violations.extend(o.violations[mark:])
                        result.events += o.events
                        result.relists += o.relists
            finally:
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                        await task
                await _stop_manager(proc, out)
    return result


# Memory under churn (bench._churn): warm-up, measured span, sampling interval (s). Full: the
# issue's 30 minutes, the first 18 a warm-up: the emulator's watch history (10 000 events) fills
# for ~16 minutes of this churn, and the manager's histories of deleted pods and its reconcile
# index fill for 15 (they leave 15 minutes after the deletion, or the reconcile: DELETED_TTL_NS
# in pycm.trace.state.object_histories; measured with tracemalloc: +0.6–0.8 MB/min of Python
# heap until then), growth by design up to a bound in time. The sharing decoder's generations
# turn within 10 minutes. Tiny only keeps it working (a slope over 2 s means nothing).
_CHURN = {"tiny": (0.5, 1.5, 0.5), "full": (1080.0, 720.0, 15.0)}


def run(size: str) -> list[Figure]:
    return _faulted_rollouts(size) + _memory_under_churn(size)


def _memory_under_churn(size: str) -> list[Figure]:
    warmup, span, every = _CHURN[size]
    slopes = measure(warmup, span, every)
    for slope in slopes:
        print(
            f"# {slope.name} RSS under churn, MB at +s: "
            + " ".join(f"{m:.1f}@{t:.0f}" for t, m in slope.samples),
            flush=True,
        )
    # Peer: the process's RSS when the warm-up ended; the ratio is the slope as a share of it
    # per minute (issue 40's aim: ≤ 0.1 MB/min, whatever the size).
    return [
        Figure(
            f"soak.{slope.name}_rss_slope",
            slope.slope_mb_per_min,
            "MB/min",
            f"{slope.name}_rss_after_warmup",
            slope.start_mb,
            "MB",
            slope.slope_mb_per_min / slope.start_mb,
        )
        for slope in slopes
    ]


def _faulted_rollouts(size: str) -> list[Figure]:
    clean, rounds, round_s = _SIZES[size]
    faulted = asyncio.run(soak(clean=clean, rounds=rounds, round_s=round_s))
    duplicates = sum(n - 1 for n in faulted.rs_per_template.values())
    print(
        f"# soak: {rounds} faulted rollouts, {faulted.events} events observed, "
        f"{faulted.relists} relists, RSs per template {faulted.rs_per_template} "
        f"({duplicates} duplicates), collisionCount {faulted.collision_count}",
        flush=True,
    )
    for violation in faulted.violations[:10]:
        print(f"# violation: {violation}", flush=True)
    ours, peer = len(faulted.violations) + duplicates, len(faulted.clean_violations)
    clean_s = sum(faulted.clean_rollouts) / len(faulted.clean_rollouts)
    faulted_s = sum(faulted.faulted_rollouts) / len(faulted.faulted_rollouts)
    return [
        Figure(
            "soak.violations", ours, "count", "no_faults", peer, "count", (1 + peer) / (1 + ours)
        ),
        Figure(
            "soak.rollout_slowdown",
            faulted_s / clean_s,
            "x",
            "soak.rollout_no_faults",
            clean_s,
            "s",
            clean_s / faulted_s,
        ),
    ]
