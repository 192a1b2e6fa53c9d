"""The emulator's serving costs, over HTTP on 127.0.0.1, against in-process peers of the same run.

The emulator runs in its own process (``python -m pycm sim --port 0 --tls=false
--kubelet=off``; its printed line gives the URL and kubeconfig; SIGTERM stops it), so the
client's work is not counted against the server. Figures:

- ``sim.create`` and ``sim.get``: pod creates/s and gets/s (``n`` pods, ``_CONCURRENCY``
  keep-alive connections with one request in flight each, sent by the lean client of
  :mod:`bench._rawhttp`: with httpx the client, not the server, was the bottleneck). Peers
  ``floor.create`` and ``floor.get``: the same client, request bytes and concurrency against
  the floor of the HTTP path — a minimal endpoint on the emulator's own serving stack and TLS
  setting, answering the bytes the emulator answered (:mod:`bench._sim_floor`); ratio ours /
  floor (aims: get >= 0.5, create >= 0.35). The two servers' requests alternate in
  slices of ``_SLICE``, so a load change on the shared machine falls on both.
- ``sim.list_10k``: p50 latency of listing the ``n`` pods (``n`` = 10k at full size) as ms and
  the body's MB/s at that p50. Peer: MB/s of ``orjson.dumps`` of the same body in this process
  (the serialisation ceiling); ratio ours / peer (the share of the ceiling reached).
- ``sim.watch_fanout``: events/s delivered to ``_WATCHERS`` watchers while ``n`` configmaps are
  created (deliveries / time from the first create to the last watcher's last event). Peer: the
  same run with one watcher; ratio fan-out / single (> 1: the fan-out delivers more in total).
- ``sim.watch_serve``: events/s the emulator serves to a raw socket reader (no HTTP parsing)
  replaying ``events`` ADDED events of ~5.7 KB ConfigMaps (the informers bench's pod size) from
  a resourceVersion; median of ``_SERVE_READS`` reads. Peer: the same reader reading the same
  bytes from a local socket pair filled by a thread (the reader's own ceiling); ratio ours /
  peer (the share of that ceiling the emulator reaches).
- ``sim.crd_create``: custom-resource creates/s (schema pruning, defaults and validation on
  each). Peer: ConfigMap creates/s in the same run; ratio ours / peer (aim ≥ 0.7).

More figures: append an ``async def`` taking a :class:`Run` and returning its figures, marked
``@measure``; measures run in the order they are defined, after the ones above, on the same
emulator (so a measure creates its objects under names of its own).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import yaml

from bench._rawhttp import Connections, request
from bench._sim_floor import floor_child
from bench.harness import Figure

_SIZES = {
    # size: (pods listed / created, list repeats, watch events)
    "tiny": (100, 1, 100),
    "full": (10_000, 10, 10_000),
}
_WATCHERS = 20
_CONCURRENCY = 16
# The emulator and the floor serve plain HTTP (the floor follows this setting; the clients and
# sim.watch_serve's raw socket reader speak plain HTTP).
_TLS = False
# Requests in one slice of the emulator's or the floor's (they alternate, and which goes first
# alternates too): short slices, so that the load other processes put on a shared machine
# comes and goes on both alike (with 4 slices a run's ratios spread from 0.1 to 1.9).
_SLICE = 250
# Requests to each server before measuring (connections opened, code paths warm).
_WARMUP = 2 * _CONCURRENCY
_LINE = re.compile(r"^pycm sim: serving (\S+) \(kubeconfig: (.+)\)$")
_START_TIMEOUT = 20.0
_SERVE_READS = 3
# A ConfigMap's data sized like the informers bench's pods (~5.7 KB of JSON an event).
_SERVE_DATA = {f"key-{i:02d}": "v" * 100 for i in range(50)}


@contextmanager
def _emulator() -> Iterator[tuple[str, str]]:
    """An emulator process; yields (url, admin token)."""
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("KUBECONFIG", None)
        kubeconfig = Path(tmp) / "kubeconfig"
        tls = f"--tls={str(_TLS).lower()}"
        argv = [sys.executable, "-m", "pycm", "sim", "--port", "0", tls, "--kubelet=off"]
        argv += ["--watch-window", "100000", "--kubeconfig-out", str(kubeconfig)]
        # sim.watch_serve replays up to 10k events of ~5.7 KB: past 64 MiB it would get 410.
        argv += ["--watch-history-mib", "1024"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            match = _LINE.match(line)
            if match is None:
                raise RuntimeError(f"pycm sim did not start: {line!r}")
            token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
            yield match.group(1), str(token)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=_START_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _pod(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "bench", "tier": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        }
    )


async def _in_parallel(n: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Seconds to run ``one(i)`` for i in range(n) with _CONCURRENCY in flight."""
    indexes = iter(range(n))

    async def worker() -> None:
        for i in indexes:
            await one(i)

    start = time.perf_counter()
    async with asyncio.TaskGroup() as tg:
        for w in range(_CONCURRENCY):
            tg.create_task(worker(), name=f"bench-sim-worker-{w}")
    return time.perf_counter() - start


def _client(url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=60,
        limits=httpx.Limits(max_connections=_WATCHERS + _CONCURRENCY + 4),
    )


async def _alternating(
    ours: Connections,
    floor: Connections,
    requests: list[bytes],
    status: int,
    peer_requests: list[bytes] | None = None,
) -> tuple[float, float]:
    """Requests/s of ``requests`` sent to ours and, the same bytes (or ``peer_requests``, as
    many), to the floor, in slices of about _SLICE that alternate between the two (and which
    goes first); 2 at least."""
    seconds = [0.0, 0.0]
    n = len(requests)
    sent = (requests, requests if peer_requests is None else peer_requests)
    rounds = max(2, n // _SLICE)
    bounds = [n * r // rounds for r in range(rounds + 1)]
    for r in range(rounds):
        for which in (0, 1) if r % 2 == 0 else (1, 0):
            part = sent[which][bounds[r] : bounds[r + 1]]
            seconds[which] += await (ours, floor)[which].run(part, status)
    return n / seconds[0], n / seconds[1]


async def _against_floor(url: str, token: str, n: int) -> list[Figure]:
    """sim.create and sim.get, each against the floor (see the module's doc)."""
    pods = "/api/v1/namespaces/default/pods"
    creates = [request("POST", pods, token, _pod(f"p-{i:05d}")) for i in range(n)]
    gets = [request("GET", f"{pods}/p-{i:05d}", token) for i in range(n)]
    warm = [request("GET", f"{pods}/warm-{i}", token) for i in range(_WARMUP)]
    async with Connections(url, _CONCURRENCY) as ours:
        # The floor answers what the emulator answers: a pod it created (in another namespace,
        # so the measured creates and the lists see ``n`` pods).
        sample = request("POST", "/api/v1/namespaces/kube-system/pods", token, _pod("sample"))
        body = await ours.one(sample, 201)
        with floor_child(body, tls=_TLS) as (floor_url, _):
            async with Connections(floor_url, _CONCURRENCY) as floor:
                await ours.run(warm, 404)
                await floor.run(warm, 200)
                created, floor_created = await _alternating(ours, floor, creates, 201)
                got, floor_got = await _alternating(ours, floor, gets, 200)
    return [
        Figure("sim.get", got, "gets/s", "floor.get", floor_got, "req/s", got / floor_got),
        Figure(
            "sim.create",
            created,
            "creates/s",
            "floor.create",
            floor_created,
            "req/s",
            created / floor_created,
        ),
    ]


async def _list(url: str, token: str, n: int, repeats: int) -> Figure:
    """sim.list_10k (see the module's doc)."""
    pods = "/api/v1/namespaces/default/pods"
    async with _client(url, token) as c:
        # The connection opened (and httpx's first-request costs paid) before timing.
        (await c.get(pods, params={"limit": "1"})).raise_for_status()
        latencies, size, body = [], 0, b""
        for _ in range(repeats):
            start = time.perf_counter()
            r = await c.get(pods)
            latencies.append(time.perf_counter() - start)
            r.raise_for_status()
            body = r.content
            size = len(body)
    p50 = statistics.median(latencies)
    decoded = orjson.loads(body)
    if len(decoded["items"]) != n:
        raise RuntimeError(f"listed {len(decoded['items'])} pods, want {n}")
    dumps = []
    for _ in range(repeats):
        start = time.perf_counter()
        orjson.dumps(decoded)
        dumps.append(time.perf_counter() - start)
    ours_mbs = size / p50 / 1e6
    peer_mbs = size / statistics.median(dumps) / 1e6
    return Figure(
        "sim.list_10k",
        p50 * 1e3,
        f"ms_p50_({n}_pods,_{ours_mbs:.1f}_MB/s)",
        "orjson.dumps",
        peer_mbs,
        "MB/s",
        ours_mbs / peer_mbs,
    )


async def _fanout(url: str, token: str, n: int, watchers: int, prefix: str) -> float:
    """Events/s delivered to ``watchers`` watchers while ``n`` configmaps are created."""
    path = "/api/v1/namespaces/default/configmaps"
    async with _client(url, token) as c:
        rv = (await c.get(path, params={"limit": "1"})).json()["metadata"]["resourceVersion"]
        done_at: list[float] = []
        ready: list[int] = []
        all_ready = asyncio.Event()

        async def watch() -> None:
            seen = 0
            params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "600"}
            async with c.stream("GET", path, params=params) as stream:
                ready.append(1)
                if len(ready) == watchers:
                    all_ready.set()
                async for chunk in stream.aiter_bytes():
                    seen += chunk.count(b"\n")
                    if seen >= n:
                        done_at.append(time.perf_counter())
                        return
            raise RuntimeError(f"a watch ended after {seen} of {n} events")

        async def create(i: int) -> None:
            body = orjson.dumps({"metadata": {"name": f"{prefix}-{i:05d}"}, "data": {"k": "v"}})
            (await c.post(path, content=body)).raise_for_status()

        async with asyncio.TaskGroup() as tg:
            for w in range(watchers):
                tg.create_task(watch(), name=f"bench-sim-watch-{w}")
            await all_ready.wait()
            start = time.perf_counter()
            await _in_parallel(n, create)
        return watchers * n / (max(done_at) - start)


async def _read_watch(reader: asyncio.StreamReader, events: int) -> tuple[float, bytes]:
    """Seconds to read ``events`` watch lines off ``reader`` (counted, not parsed); the bytes."""
    got, seen, last = [], 0, b""
    start = time.perf_counter()
    while seen < events:
        data = await reader.read(1 << 20)
        if not data:
            raise RuntimeError(f"the watch ended after {seen} of {events} events")
        # A line's end split between two reads ("}" then "\n") counts too: missed, the loop
        # would wait out the watch's timeout for a line already read.
        seen += data.count(b"}\n") + (last == b"}" and data[:1] == b"\n")
        last = data[-1:]
        got.append(data)
    return time.perf_counter() - start, b"".join(got)


async def _serve(url: str, token: str, events: int) -> Figure:
    path = "/api/v1/namespaces/default/configmaps"
    async with _client(url, token) as c:
        rv = (await c.get(path, params={"limit": "1"})).json()["metadata"]["resourceVersion"]

        async def create(i: int) -> None:
            body = orjson.dumps({"metadata": {"name": f"serve-{i:05d}"}, "data": _SERVE_DATA})
            (await c.post(path, content=body)).raise_for_status()

        await _in_parallel(events, create)
    host, port = url.removeprefix("http://").rsplit(":", 1)
    request = (
        f"GET {path}?watch=1&resourceVersion={rv}&timeoutSeconds=600 HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()
    ours, body = [], b""
    for _ in range(_SERVE_READS):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        await reader.readuntil(b"\r\n\r\n")
        seconds, body = await _read_watch(reader, events)
        ours.append(events / seconds)
        writer.close()
    peer = []
    for _ in range(_SERVE_READS):
        ours_end, theirs = socket.socketpair()
        filler = threading.Thread(target=theirs.sendall, args=(body,), name="bench-sim-fill")
        reader, writer = await asyncio.open_connection(sock=ours_end)
        filler.start()
        seconds, _ = await _read_watch(reader, events)
        peer.append(events / seconds)
        filler.join()
        writer.close()
        theirs.close()
    served, ceiling = statistics.median(ours), statistics.median(peer)
    return Figure(
        "sim.watch_serve",
        served,
        f"events/s_({events}_events,_{len(body) / events / 1e3:.1f}_KB)",
        "socketpair_read",
        ceiling,
        "events/s",
        served / ceiling,
    )


@dataclass(frozen=True, slots=True)
class Run:
    """What a measure gets: the emulator (its URL and admin token) and the size's counts."""

    url: str
    token: str
    size: str
    n: int  # objects created (pods by sim.create; 10k at full size)
    events: int  # watch events (sim.watch_fanout, sim.watch_serve)

    def client(self) -> httpx.AsyncClient:
        """A keep-alive client with the admin's token, as every measure here uses."""
        return _client(self.url, self.token)


Measure = Callable[[Run], Awaitable[list[Figure]]]
_MEASURES: list[Measure] = []


def measure(fn: Measure) -> Measure:
    """Add ``fn`` to the figures ``bench sim`` prints (after those defined before it)."""
    _MEASURES.append(fn)
    return fn


async def _apply(url: str, token: str, n: int) -> Figure:
    """``sim.apply``: server-side applies/s (``application/apply-patch+yaml``, JSON bodies, one
    manager changing the replicas of ``n`` Deployments it applied before, ``_CONCURRENCY`` in
    flight). Peer: merge patches/s of the same change to the same Deployments in the same run;
    ratio applies / merge patches (the aim: >= 0.5)."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    labels = {"app": "bench-apply"}

    def body(name: str, replicas: int) -> bytes:
        return orjson.dumps(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "nginx:1.25",
                                    "ports": [{"containerPort": 80}],
                                }
                            ]
                        },
                    },
                },
            }
        )

    apply_type = "application/apply-patch+yaml"
    merge_type = "application/merge-patch+json"

    def apply(name: str, replicas: int) -> bytes:
        at = f"{path}/{name}?fieldManager=bench"
        return request("PATCH", at, token, body(name, replicas), apply_type)

    # The objects of either side made by the same manager's apply first (not timed); then the
    # applier changes its replicas on its own objects while merge patches change the others',
    # in alternating slices (no conflict: each object is written by one of the two).
    made = [apply(f"{side}-{i:05d}", 1) for side in ("a", "m") for i in range(n)]
    applies = [apply(f"a-{i:05d}", 2) for i in range(n)]
    merge = orjson.dumps({"spec": {"replicas": 3}})
    merges = [request("PATCH", f"{path}/m-{i:05d}", token, merge, merge_type) for i in range(n)]
    async with Connections(url, _CONCURRENCY) as c:
        await c.run(made, 201)
        applied_rate, merged_rate = await _alternating(c, c, applies, 200, merges)
    return Figure("sim.apply", applied_rate, "applies/s", "sim.merge_patch", merged_rate,
                  "patches/s", applied_rate / merged_rate)  # fmt: skip


@measure
async def _apply_figures(run: Run) -> list[Figure]:
    return [await _apply(run.url, run.token, run.n)]


async def _crd_create(url: str, token: str, n: int) -> Figure:
    """``sim.crd_create``: custom-resource creates/s (a CRD with a structural schema, defaults,
    an enum, a pattern and printer columns; pruned, defaulted, validated on each create). Peer:
    ConfigMap creates/s in the same run with the same concurrency; ratio ours / peer."""
    spec_schema = {
        "type": "object",
        "required": ["host"],
        "properties": {
            "host": {"type": "string", "pattern": "^[a-z0-9.-]+$", "maxLength": 253},
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "tier": {"type": "string", "enum": ["free", "paid"], "default": "free"},
            "ports": {"type": "array", "items": {"type": "integer"}},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "websites.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "websites", "kind": "Website"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                    "additionalPrinterColumns": [
                        {"name": "Host", "type": "string", "jsonPath": ".spec.host"}
                    ],
                }
            ],
        },
    }
    sites = "/apis/bench.example.com/v1/namespaces/default/websites"
    configmaps = "/api/v1/namespaces/default/configmaps"
    async with _client(url, token) as c:
        made = await c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
        made.raise_for_status()

    def site(i: int) -> bytes:
        body = {
            "apiVersion": "bench.example.com/v1",
            "kind": "Website",
            "metadata": {"name": f"w-{i:05d}", "labels": {"app": "bench"}},
            "spec": {"host": f"w{i}.example.com", "ports": [80, 443]},
        }
        return request("POST", sites, token, orjson.dumps(body))

    def configmap(i: int) -> bytes:
        body = {"metadata": {"name": f"crd-peer-{i:05d}"}, "data": {"host": f"w{i}"}}
        return request("POST", configmaps, token, orjson.dumps(body))

    async with Connections(url, _CONCURRENCY) as c:
        ours, peer = await _alternating(
            c, c, [site(i) for i in range(n)], 201, [configmap(i) for i in range(n)]
        )
    return Figure(
        "sim.crd_create", ours, "creates/s", "sim.create_configmap", peer, "creates/s", ours / peer
    )


@measure
async def _crd_create_figures(run: Run) -> list[Figure]:
    return [await _crd_create(run.url, run.token, run.n)]


async def _run(size: str) -> list[Figure]:
    n, repeats, events = _SIZES[size]
    with _emulator() as (url, token):
        figures = await _against_floor(url, token, n)
        figures.append(await _list(url, token, n, repeats))
        fanned = await _fanout(url, token, events, _WATCHERS, "fan")
        single = await _fanout(url, token, events, 1, "one")
        served = await _serve(url, token, events)
        figures.append(
            Figure(
                "sim.watch_fanout",
                fanned,
                f"events/s_({_WATCHERS}_watchers)",
                "sim.watch_single",
                single,
                "events/s",
                fanned / single,
            )
        )
        figures.append(served)
        run = Run(url, token, size, n, events)
        for more in _MEASURES:
            figures += await more(run)
    return figures


def run(size: str) -> list[Figure]:
    return asyncio.run(_run(size))
