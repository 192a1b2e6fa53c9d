"""Informers: listing, watching and holding pods, against the ``kubernetes`` client, in one run.

The emulator runs in its own process (``python -m pycm sim --port 0 --tls=false
--kubelet=off``: plain HTTP, pods as written); pods are seeded through
its HTTP API: realistic pods (two containers with env, probes, resources and mounts, volumes,
tolerations, affinity, owner reference, ~2 KB of managedFields — about 5 KB of JSON), stamped
from 10 templates as Deployments would. pycm's side is ``SharedIndexInformer`` over
``ClientListWatch`` (reflector → FIFO → indexer → one handler) with the factory's defaults:
managedFields dropped, identical sub-trees interned, GC tuned, reading through
``pycm.kube.Client`` (client-side rate limiting off, as the peer has none). Seeding writes go
through the small ``bench/_kubehttp.py`` client.

Figures:

- ``informers.list``: pods/s from starting an informer to its cache synced (paged list of
  500). Peer: ``kubernetes`` ``CoreV1Api.list_namespaced_pod`` (same pages) into its models.
  Ratio ours / peer.
- ``informers.list_gc``: the same list with pycm's GC management against the same informer
  without it (no collector pause during the list, no ``gc.freeze()`` after it); both with the
  same transforms. Ratio tuned / untuned.
- The three lists run once a round, ``repeats`` rounds, each round in its own order; values
  are the medians, and each ratio is the median of the rounds' own ratios.
- ``informers.watch``: MODIFIED events/s through the informer into the cache and one handler:
  the events are written first, then the informer (synced on a list taken before them) watches
  from that list's RV, so the emulator replays them at full speed. Peer:
  ``kubernetes.watch.Watch().stream(list_namespaced_pod, resource_version=...)`` over the same
  backlog (its first ``peer_events`` events; it decodes into models at ~1k/s). Both replay the
  backlog once a round, ``repeats`` rounds in alternating order; values are the medians, and the
  ratio (ours / peer) is the median of the rounds' own ratios.
- ``informers.memory``: bytes of Python memory (tracemalloc) per cached pod as a multiple of the
  pod's JSON size (with managedFields, as served). Peer: the same pods as plain ``orjson`` dict
  trees. Ratio peer / ours (> 1: ours holds less).
- ``informers.watchlist``: seconds from starting a pod informer to its cache synced, by a
  streaming list (WatchList: one watch with sendInitialEvents) against a paged list (pages of
  500), the pods just seeded (10k at full size); ``informers.watchlist.manager_mib`` and
  ``informers.watchlist.emulator_mib``: how far each side's resident memory peaked above where
  it was when the sync began (MiB; the manager's side runs in a child process of its own,
  ``bench/_watchlist_child.py``, and each process's peak is reset first with Linux's
  ``clear_refs``). Peer: the paged list. Ratios peer / ours (> 1: streaming is faster, or
  peaks lower). Both modes alternate over the rounds; values are medians.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import orjson

from bench._kubehttp import PODS, HttpClient, token_from_kubeconfig
from bench._watchlist_child import proc_kib, reset_peak
from bench.harness import Figure
from pycm.cache.factory import default_list_watch, default_transform
from pycm.cache.listwatch import ClientListWatch, ListPage, StatusError, WatchEventPair
from pycm.cache.processor import HandlerFuncs
from pycm.cache.shared_informer import SharedIndexInformer
from pycm.cache.transform import drop_managed_fields
from pycm.kube import Client, load_config
from pycm.kube import resources as kube_resources
from pycm.trace.bus import Bus

_SIZES = {
    # size: (pods, MODIFIED events, peer watch events, rounds of the lists and of the watches)
    "tiny": (60, 120, 60, 1),
    "full": (10_000, 50_000, 3_000, 3),
}
NAMESPACE = "default"
_LINE = re.compile(r"pycm sim: serving (\S+) \(kubeconfig: (.+)\)")
TEMPLATES = 10
WRITERS = 64
# Tiny runs (CI, to keep the bench working) seed and write a few hundred objects: 8 writers do it
# in half the time (httpx's pool scans every connection per request: 64 cost more than they save).
TINY_WRITERS = 8
WRITE_ATTEMPTS = 5


# ---------------------------------------------------------------------------------------------
# The emulator process and seeding
# ---------------------------------------------------------------------------------------------


class EmulatorProcess:
    def __init__(self, watch_window: int) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pycm",
                "sim",
                "--port",
                "0",
                "--tls=false",
                "--kubelet=off",
                "--nodes",
                "1",
                "--watch-window",
                str(watch_window),
                # Every event of the run must stay replayable (the watch figure replays 50k
                # pod events of ~6 KB): past the default 64 MiB the watch would get 410.
                "--watch-history-mib",
                "2048",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = _LINE.search(line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"the emulator did not start: {line!r}")
        self.url, self.kubeconfig = match.group(1), match.group(2).strip()
        self.token = token_from_kubeconfig(self.kubeconfig)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _h(text: str, n: int = 10) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _suffix(i: int) -> str:
    """Five base-36 characters, distinct for every i < 36**5 (7919 is coprime to 36)."""
    n = (i * 7919 + 12345) % 36**5
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "".join(digits[(n // 36**k) % 36] for k in range(5))


def realistic_pod(i: int) -> dict[str, Any]:
    """Pod ``i`` of template ``i % TEMPLATES``: as a Deployment's ReplicaSet would create it."""
    t = i % TEMPLATES
    app = f"svc-{t}"
    rs_hash = _h(app)
    name = f"{app}-{rs_hash}-{_suffix(i)}"
    token_volume = f"kube-api-access-{_suffix(i + 1_000_003)}"
    env = [{"name": f"SETTING_{k}", "value": f"value-{t}-{k}"} for k in range(8)]
    env += [
        {
            "name": "POD_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        },
        {
            "name": "POD_IP",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
        },
        {
            "name": "DB_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": f"{app}-db", "key": "password"}},
        },
    ]
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    mounts = [
        {"name": "config", "mountPath": "/etc/app", "readOnly": True},
        {
            "name": token_volume,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        },
    ]
    containers = [
        {
            "name": "app",
            "image": f"registry.example.com/team/{app}:1.{t}.3",
            "ports": [
                {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
            ],
            "env": env,
            "resources": {
                "limits": {"cpu": "500m", "memory": "512Mi"},
                "requests": {"cpu": "250m", "memory": "256Mi"},
            },
            "livenessProbe": probe,
            "readinessProbe": {**probe, "httpGet": {**probe["httpGet"], "path": "/ready"}},
            "volumeMounts": mounts,
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
            },
        },
        {
            "name": "proxy",
            "image": "registry.example.com/mesh/proxy:1.22.0",
            "args": ["proxy", "sidecar", "--concurrency", "2", "--log-level", "warning"],
            "ports": [{"name": "proxy", "containerPort": 15001, "protocol": "TCP"}],
            "resources": {
                "limits": {"cpu": "200m", "memory": "128Mi"},
                "requests": {"cpu": "50m", "memory": "64Mi"},
            },
            "volumeMounts": mounts[1:],
        },
    ]
    f_container = {
        f'k:{{"name":"{c["name"]}"}}': {
            ".": {},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:ports": {".": {}},
            "f:resources": {
                ".": {},
                "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}},
            },
            "f:terminationMessagePath": {},
            "f:terminationMessagePolicy": {},
            "f:volumeMounts": {".": {}},
        }
        for c in containers
    }
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{_h("rs" + app, 8)}"}}': {}},
                },
                "f:spec": {
                    "f:containers": f_container,
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {".": {}},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-01T10:00:05Z",
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        f'k:{{"type":"{c}"}}': {
                            ".": {},
                            "f:lastProbeTime": {},
                            "f:lastTransitionTime": {},
                            "f:status": {},
                            "f:type": {},
                        }
                        for c in ("ContainersReady", "Initialized", "Ready", "PodScheduled")
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:podIPs": {".": {}},
                    "f:startTime": {},
                }
            },
        },
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{app}-{rs_hash}-",
            "labels": {"app": app, "pod-template-hash": rs_hash, "tier": "backend"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{rs_hash}",
                    "uid": _h("rs" + app, 8),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": managed,
        },
        "spec": {
            "containers": containers,
            "volumes": [
                {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
                {
                    "name": token_volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "serviceAccountName": app,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": app}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            },
        },
    }


async def _bounded(n: int, work: Any, writers: int = WRITERS) -> None:
    sem = asyncio.Semaphore(writers)

    async def one(i: int) -> None:
        async with sem:
            await work(i)

    await asyncio.gather(*(one(i) for i in range(n)))


async def _retrying(op: Callable[[], Awaitable[Any]]) -> Any:
    """``op()``, again after a broken connection (a loaded machine sometimes resets one of the
    64 writers' connections mid-request: the run must not die of it). Only idempotent writes
    are retried: PUTs without a resourceVersion; a create is checked by the caller."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            return await op()
        except httpx.TransportError:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
            await asyncio.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


async def seed(client: HttpClient, n: int, writers: int = WRITERS) -> list[dict[str, Any]]:
    """Create ``n`` pods, then PUT each with its managedFields (the emulator, like kube, drops
    them on create). Returns the stored objects."""
    stored: list[dict[str, Any]] = [{} for _ in range(n)]

    async def create(pod: dict[str, Any]) -> Any:
        try:
            return await client.create(PODS, pod, NAMESPACE)
        except StatusError as e:
            if e.code != 409:
                raise
            # A retried create whose first attempt was applied: the pod is there.
            return await client.get(PODS, NAMESPACE, pod["metadata"]["name"])

    async def make(i: int) -> None:
        pod = realistic_pod(i)
        managed = pod["metadata"].pop("managedFields")
        created = await _retrying(lambda: create(pod))
        created["metadata"]["managedFields"] = managed
        created["metadata"].pop("resourceVersion", None)  # unconditional: safe to retry
        stored[i] = await _retrying(lambda: client.replace(PODS, created, NAMESPACE))

    await _bounded(n, make, writers)
    return stored


async def modify(
    client: HttpClient, pods: list[dict[str, Any]], events: int, writers: int = WRITERS
) -> None:
    """``events`` MODIFIED events: PUTs bumping an annotation, round-robin over the pods."""
    current = list(pods)

    async def bump(i: int) -> None:
        k = i % len(current)
        obj = current[k]
        obj = {
            **obj,
            "metadata": {
                **obj["metadata"],
                "annotations": {**obj["metadata"]["annotations"], "bench/generation": str(i)},
            },
        }
        obj["metadata"].pop("resourceVersion", None)
        current[k] = await _retrying(lambda: client.replace(PODS, obj, NAMESPACE))

    # Round-robin in waves of distinct pods so concurrent writes never target the same pod.
    wave = min(len(current), writers * 4)
    done = 0
    while done < events:
        size = min(wave, events - done)
        base = done
        await _bounded(size, lambda j, base=base: bump(base + j), writers)
        done += size


# ---------------------------------------------------------------------------------------------
# pycm's side
# ---------------------------------------------------------------------------------------------


def _list_watch(client: Client) -> ClientListWatch:
    """The factory's list-watch of the pods (decoding through a SharingDecoder)."""
    return default_list_watch(client, kube_resources.PODS, namespace=NAMESPACE)


def _informer(
    lw: Any, *, tuned: bool, handler: Any = None, decoded: bool = True
) -> SharedIndexInformer:
    """The factory's defaults (managedFields dropped, sub-trees shared: by the list-watch's
    decoder, or by an interner when ``decoded`` is false); ``tuned`` is the GC management
    alone."""
    informer = SharedIndexInformer(
        lw,
        "pods",
        transform=default_transform(drop_managed_fields, share=not decoded),
        bus=Bus(),
        gc_tuning=tuned,
    )
    if handler is not None:
        informer.add_event_handler(handler)
    return informer


async def _sync(informer: SharedIndexInformer) -> tuple[float, asyncio.Task[None]]:
    start = time.perf_counter()
    task = asyncio.create_task(informer.run(), name="bench-informer")
    await informer.wait_synced()
    return time.perf_counter() - start, task


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _reset_gc() -> None:
    gc.unfreeze()
    gc.enable()
    gc.collect()


async def ours_list(client: Client, n: int, *, tuned: bool) -> float:
    _reset_gc()
    informer = _informer(_list_watch(client), tuned=tuned, handler=HandlerFuncs())
    took, task = await _sync(informer)
    await _stop(task)
    assert len(informer.indexer) == n, len(informer.indexer)
    del informer
    _reset_gc()
    return n / took


class SnapshotThenWatch:
    """A ListerWatcher whose list answers from pages taken earlier and whose watch is real."""

    def __init__(self, pages: list[ListPage], real: ClientListWatch) -> None:
        self.pages = list(pages)
        self.real = real
        self.relisted = asyncio.Event()

    async def list(
        self, *, resource_version: str, limit: int | None, continue_: str | None
    ) -> ListPage:
        if not self.pages:
            # The watch ended and the reflector relists: the backlog cannot be replayed
            # any more (e.g. the emulator's history dropped it); the figure would be wrong.
            self.relisted.set()
            raise RuntimeError("the watch ended before the backlog was replayed")
        return self.pages.pop(0)

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventPair]]:
        return self.real.watch(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_watch_bookmarks,
        )


async def ours_watch(client: Client, snapshot: list[dict[str, Any]], rv: str, events: int) -> float:
    _reset_gc()
    seen = [0]
    done = asyncio.Event()

    def on_update(old: Any, new: Any) -> None:
        seen[0] += 1
        if seen[0] >= events:
            done.set()

    real = _list_watch(client)
    assert real.decoder is not None
    # The snapshot's objects as the decoder gives them (its table primed as a list would).
    items, _ = real.decoder.decode_list(orjson.dumps({"items": snapshot}))
    lw = SnapshotThenWatch([ListPage(items, rv)], real)
    informer = _informer(lw, tuned=True, handler=HandlerFuncs(on_update=on_update))
    _, task = await _sync(informer)
    start = time.perf_counter()
    finished = asyncio.ensure_future(done.wait())
    failed = asyncio.ensure_future(lw.relisted.wait())
    await asyncio.wait({finished, failed}, timeout=600, return_when=asyncio.FIRST_COMPLETED)
    took = time.perf_counter() - start
    finished.cancel()
    failed.cancel()
    await _stop(task)
    if not done.is_set():
        raise RuntimeError(
            f"informers.watch: {seen[0]} of {events} events arrived"
            + (" before the watch ended and the informer relisted" if lw.relisted.is_set() else "")
        )
    _reset_gc()
    return events / took


async def ours_memory(client: Client, n: int) -> float:
    _reset_gc()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    informer = _informer(_list_watch(client), tuned=True)
    _, task = await _sync(informer)
    await _stop(task)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(informer.indexer) == n
    del informer
    _reset_gc()
    return held / n


async def watchlist_round(emu: EmulatorProcess, mode: str) -> tuple[float, float, float]:
    """One sync in a child process (``stream`` or ``paged``): (seconds, the child's peak growth,
    the emulator's peak growth), memory in bytes."""
    emu_base = reset_peak(emu.proc.pid)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._watchlist_child",
        emu.kubeconfig,
        NAMESPACE,
        mode,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"informers.watchlist: the {mode} child failed ({child.returncode})")
    emu_growth = (proc_kib(emu.proc.pid, "VmHWM") - emu_base) * 1024.0
    result = orjson.loads(out.strip().splitlines()[-1])
    return float(result["seconds"]), float(result["peak_growth"]), emu_growth


async def watchlist_figures(emu: EmulatorProcess, repeats: int) -> list[Figure]:
    runs: dict[str, list[tuple[float, float, float]]] = {"stream": [], "paged": []}
    # (Tiny runs one round, each mode once: it keeps the figure working, each sync a process.)
    for i in range(repeats):
        for mode in ("stream", "paged") if i % 2 == 0 else ("paged", "stream"):
            runs[mode].append(await watchlist_round(emu, mode))
    median = statistics.median
    mib = 1024.0 * 1024.0
    figures = []
    for suffix, index, unit, scale in (
        ("", 0, "s", 1.0),
        (".manager_mib", 1, "MiB", mib),
        (".emulator_mib", 2, "MiB", mib),
    ):
        ours = median(r[index] for r in runs["stream"]) / scale
        paged = median(r[index] for r in runs["paged"]) / scale
        figures.append(
            Figure(
                f"informers.watchlist{suffix}",
                ours,
                unit,
                "pycm.paged_list",
                paged,
                unit,
                paged / ours if ours > 0 else 0.0,
            )
        )
    return figures


# ---------------------------------------------------------------------------------------------
# The peers
# ---------------------------------------------------------------------------------------------


def _core_v1(kubeconfig: str) -> Any:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    return client.CoreV1Api(api_client)


def peer_list(v1: Any, n: int) -> float:
    gc.collect()
    start = time.perf_counter()
    items: list[Any] = []
    cont = None
    while True:
        result = v1.list_namespaced_pod(NAMESPACE, limit=500, _continue=cont)
        items.extend(result.items)
        cont = result.metadata._continue
        if not cont:
            break
    took = time.perf_counter() - start
    assert len(items) == n
    return n / took


def peer_watch(v1: Any, rv: str, count: int) -> float:
    from kubernetes import watch

    w = watch.Watch()
    seen = 0
    start = time.perf_counter()
    for event in w.stream(
        v1.list_namespaced_pod, NAMESPACE, resource_version=rv, timeout_seconds=600
    ):
        if event["type"] == "MODIFIED":
            seen += 1
            if seen >= count:
                w.stop()
                break
    return seen / (time.perf_counter() - start)


def peer_memory(raw: list[bytes]) -> float:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    trees = [orjson.loads(b) for b in raw]
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del trees
    return held / len(raw)


# ---------------------------------------------------------------------------------------------


async def _in_rounds(repeats: int, *measures: Callable[[], Awaitable[float]]) -> list[list[float]]:
    """Each measure's values over ``repeats`` rounds, each round taking them in its own order
    (round i starts at measure i, cyclically), so that drift moves them all alike."""
    values: list[list[float]] = [[] for _ in measures]
    order = list(range(len(measures)))
    for i in range(repeats):
        start = i % len(order)
        for j in order[start:] + order[:start]:
            values[j].append(await measures[j]())
    return values


async def _main(size: str, emu: EmulatorProcess) -> list[Figure]:
    n, events, peer_events, repeats = _SIZES[size]
    t0 = time.perf_counter()
    client = HttpClient(emu.url, emu.token)
    kube = await Client.connect(await load_config(kubeconfig=emu.kubeconfig, qps=-1))
    try:
        writers = TINY_WRITERS if size == "tiny" else WRITERS
        stored = await seed(client, n, writers)
        raw = [orjson.dumps(p) for p in stored]
        json_size = sum(map(len, raw)) / n
        print(f"# {n} pods, {json_size:.0f} B of JSON each (with managedFields)", flush=True)
        v1 = _core_v1(emu.kubeconfig)

        t_seeded = time.perf_counter()

        async def peer_list_round() -> float:
            return peer_list(v1, n)

        untuned, tuned, peers = await _in_rounds(
            repeats,
            lambda: ours_list(kube, n, tuned=False),
            lambda: ours_list(kube, n, tuned=True),
            peer_list_round,
        )
        t_listed = time.perf_counter()
        watchlist = await watchlist_figures(emu, repeats)
        t_streamed = time.perf_counter()

        listed = await client.list(PODS, namespace=NAMESPACE)
        rv = listed["metadata"]["resourceVersion"]
        snapshot = listed["items"]
        await modify(client, stored, events, writers)
        t_modified = time.perf_counter()

        async def peer_watch_round() -> float:
            return peer_watch(v1, rv, peer_events)

        # Rounds of the same replay to both (one replay's rate moved by ±10% from run to run
        # of the same code).
        ours_ws, peer_ws = await _in_rounds(
            repeats, lambda: ours_watch(kube, snapshot, rv, events), peer_watch_round
        )
        t_watched = time.perf_counter()

        per_pod = await ours_memory(kube, n)
        peer_per_pod = peer_memory(raw)
        print(
            f"# phases (s): seed {t_seeded - t0:.1f}, lists {t_listed - t_seeded:.1f}, "
            f"streamed lists {t_streamed - t_listed:.1f}, "
            f"writes {t_modified - t_streamed:.1f}, watches {t_watched - t_modified:.1f}, "
            f"memory {time.perf_counter() - t_watched:.1f}",
            flush=True,
        )
    finally:
        await client.aclose()
        await kube.aclose()
    ours_ratio, peer_ratio = per_pod / json_size, peer_per_pod / json_size
    median = statistics.median
    return [
        Figure(
            "informers.list",
            median(tuned),
            "pods/s",
            "kubernetes.list_namespaced_pod",
            median(peers),
            "pods/s",
            median([o / p for o, p in zip(tuned, peers, strict=True)]),
        ),
        Figure(
            "informers.list_gc",
            median(tuned),
            "pods/s",
            "pycm.informer_without_gc_tuning",
            median(untuned),
            "pods/s",
            median([o / u for o, u in zip(tuned, untuned, strict=True)]),
        ),
        Figure(
            "informers.watch",
            median(ours_ws),
            "events/s",
            "kubernetes.watch.stream",
            median(peer_ws),
            "events/s",
            median([o / p for o, p in zip(ours_ws, peer_ws, strict=True)]),
        ),
        Figure(
            "informers.memory",
            ours_ratio,
            "x_json",
            "orjson.dict_tree",
            peer_ratio,
            "x_json",
            peer_ratio / ours_ratio,
        ),
        *watchlist,
    ]


def run(size: str) -> list[Figure]:
    n, events, _, _ = _SIZES[size]
    emu = EmulatorProcess(watch_window=2 * n + events + 1000)
    try:
        return asyncio.run(_main(size, emu))
    finally:
        emu.stop()
