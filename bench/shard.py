"""Sharded mode (``pycm run --sharded``): throughput under churn, memory per member, failover.

One emulator (its own process, ``ShardedListAndWatch`` on, no kubelet) holds N namespaces with
D Deployments each (2 pods a Deployment, each pod template carrying ~2 KB of annotations so the
caches weigh something). For each configuration — the singleton (one ``pycm run``, no
sharding: the peer) and 2 and 3 members (each its own ``pycm run --sharded`` process) — the
managers start, sync and converge (every Deployment has its pods); then writers scale the
Deployments between 2 and 3 replicas as fast as the emulator answers for ``churn`` seconds.

- ``shard.reconciles.<m>``: reconciles finished per second across the members during the churn
  (every member's trace file), peer the singleton's; ratio ours / peer. On this 2-core machine
  the emulator and the writers share the cores with the members: the comment line says how busy
  the emulator was (its CPU seconds per second of churn) — near 1.0, it is the limit.
- ``shard.rss_per_member.<m>``: the members' median RSS after converging, peer the aim
  ``member base + (singleton − base) / m``: the singleton's cache (its RSS less ``base``, a
  singleton's RSS on an empty emulator) divided among the members, on top of a member's own
  process base (a ``--sharded`` member alone on an empty emulator: the membership, the layout
  writer and its second StartControllers are fixed costs, printed beside). Both bases are
  measured after a churn of one Deployment made and deleted (its cache empty again), so that
  what every running manager holds whatever its share (the trace's event ring, full) is base,
  not cache; ratio aim / ours (≥ 1 meets the aim).
- ``shard.failover``: on the last configuration's members (3 at full size), once they have
  settled after its churn, one is sent SIGKILL and a Deployment in one of its
  namespaces is scaled at once; the figure is the time until the Deployment's status shows the
  new replicas (another member reconciled it), peer the bound (the member lease + 1.2 × its
  retry period + one relist); ratio measured / bound (≤ 1 is within).

Namespaces are named ``<6 hex digits>-shard``: kube's FNV-1a (KEP-5866's hash) barely spreads
names that differ only in their last characters, so names sharing a long prefix would land on
one member (docs/operations.md, "Sharding").

Sizes: tiny — 6 namespaces × 1 Deployment, churn 1 s, members 1 and 2, lease 2 s (< 25 s);
full — 60 × 5 (300 Deployments, 600 pods), churn 15 s, members 1, 2 and 3, lease 4 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench._sim_process import SimProcess, start_sim
from bench.harness import Figure, cpu_seconds
from pycm.util.ports import free_port

if TYPE_CHECKING:
    from pycm.sharding.layout import Layout

START_TIMEOUT = 60.0
RECONCILE_END = b'"kind":"reconcile.end"'
WRITERS = 8


@dataclass(frozen=True, slots=True)
class Size:
    namespaces: int
    deployments: int  # per namespace
    churn: float  # seconds
    members: tuple[int, ...]
    lease: float
    renew: float
    retry: float

    @property
    def failover_bound(self) -> float:
        # The dead member's lease, the survivors' next look (jittered retry), and their
        # relist of the share that moved to them (one retry period more, at most).
        return self.lease + 2.2 * self.retry


SIZES = {
    "tiny": Size(6, 1, 1.0, (2,), 2.0, 1.5, 0.5),
    "full": Size(60, 5, 15.0, (2, 3), 4.0, 3.0, 1.0),
}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def namespace_name(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()[:6] + "-shard"


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    # Weight for the caches: what real pods carry in annotations (config hashes, checksums).
    annotations = {f"bench.pycm.io/note-{i}": "x" * 200 for i in range(10)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


class Bench:
    def __init__(self, size: Size, tmp: Path) -> None:
        self.size = size
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        sim = start_sim(tmp / "kubeconfig", "--feature-gates=ShardedListAndWatch=true")
        self.emu, self.url, self.token, self.kubeconfig = (
            sim.process,
            sim.url,
            sim.token,
            sim.kubeconfig,
        )
        self.http = sim.client(timeout=10)
        self.namespaces = [namespace_name(i) for i in range(size.namespaces)]
        self.runs = 0

    # -- the managers -------------------------------------------------------------------------

    def start(self, members: int, *, sharded: bool) -> list[str]:
        """``members`` managers (sharded, or one singleton), their ring agreed."""
        self.runs += 1
        names = []
        for m in range(members):
            identity = f"m{self.runs}-{m}"
            argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", self.kubeconfig]
            argv += ["--secure-port", str(free_port()), "--bind-address", "127.0.0.1"]
            argv += ["--identity", identity, "--trace-file", str(self.trace(identity))]
            argv += ["--leader-elect=false", "--controllers=deployment,replicaset"]
            if sharded:
                argv += ["--sharded", f"--sharding-ring=r{self.runs}"]
                argv += [f"--sharding-lease-duration={self.size.lease}s"]
                argv += [f"--sharding-renew-deadline={self.size.renew}s"]
                argv += [f"--sharding-retry-period={self.size.retry}s"]
            with (self.tmp / f"{identity}.log").open("wb") as log:
                self.procs[identity] = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
            names.append(identity)
        if sharded:
            self._wait(lambda: self._ring_agrees(f"r{self.runs}", names), "the ring to agree")
        return names

    def trace(self, identity: str) -> Path:
        return self.tmp / f"{identity}.jsonl"

    def _ring_agrees(self, ring: str, names: list[str]) -> bool:
        from pycm.sharding.membership import LAYOUT_ANNOTATION, VIEW_ANNOTATION, layout_lease_name

        r = self.http.get(
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            params={"labelSelector": f"sharding.pycm.io/ring={ring}"},
        )
        leases = r.json()["items"]
        claims = {
            holder: (annotations.get(VIEW_ANNOTATION, ""), annotations.get(LAYOUT_ANNOTATION, ""))
            for lease in leases
            if (holder := (lease["spec"] or {}).get("holderIdentity", ""))
            for annotations in [lease["metadata"].get("annotations") or {}]
        }
        # The ring's layout Lease (no holder) when a member wrote one: every member on it.
        layout = next(
            (
                (lease["metadata"].get("annotations") or {}).get(LAYOUT_ANNOTATION, "")
                for lease in leases
                if lease["metadata"]["name"] == layout_lease_name(ring)
            ),
            "",
        )
        return sorted(claims) == sorted(names) and set(claims.values()) == {
            (",".join(sorted(names)), layout)
        }

    def _layout(self, ring: str) -> Layout:
        """The ring's layout as its members read it (the plain ring's when none was written)."""
        from pycm.sharding.layout import IDENTITY, Layout
        from pycm.sharding.membership import KNOTS_ANNOTATION, layout_lease_name

        r = self.http.get(
            f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{layout_lease_name(ring)}"
        )
        if r.status_code == 404:
            return IDENTITY
        r.raise_for_status()
        return Layout.decode(r.json()["metadata"]["annotations"][KNOTS_ANNOTATION])

    def stop(self, names: list[str]) -> None:
        for name in names:
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                self.trace(name).unlink()

    def _wait(self, done: Any, what: str, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    log = (self.tmp / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited while waiting for {what}:\n{log}")
            if done():
                return
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}")

    # -- the cluster --------------------------------------------------------------------------

    def seed(self) -> None:
        for namespace in self.namespaces:
            self._post("/api/v1/namespaces", {"metadata": {"name": namespace}})
            for d in range(self.size.deployments):
                path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
                self._post(path, _deployment(f"web-{d}"))

    def _post(self, path: str, body: dict[str, Any]) -> None:
        r = self.http.post(path, json=body)
        if r.status_code != 201:
            raise RuntimeError(f"POST {path}: {r.status_code} {r.text[:200]}")

    def converged(self, replicas: int) -> bool:
        """Every Deployment's status shows ``replicas`` replicas of its current generation."""
        r = self.http.get("/apis/apps/v1/deployments")
        items = r.json()["items"]
        return len(items) == self.size.namespaces * self.size.deployments and all(
            (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]
            and (d.get("status") or {}).get("replicas") == replicas
            and d["spec"]["replicas"] == replicas
            for d in items
        )

    def settled(self) -> bool:
        """Every Deployment's status caught up with its spec (whatever the churn left it at)."""
        items = self.http.get("/apis/apps/v1/deployments").json()["items"]
        return all(
            (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]
            and (d.get("status") or {}).get("replicas") == d["spec"]["replicas"]
            for d in items
        )

    def scale_all(self, replicas: int) -> None:
        for namespace in self.namespaces:
            for d in range(self.size.deployments):
                self._scale(self.http, namespace, f"web-{d}", replicas)

    @staticmethod
    def _scale(http: httpx.Client, namespace: str, name: str, replicas: int) -> None:
        r = http.patch(
            f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
            json={"spec": {"replicas": replicas}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        r.raise_for_status()

    def churn(self) -> tuple[int, float, float]:
        """Scale the Deployments between 2 and 3, ``WRITERS`` at a time, for the churn time;
        returns how many writes were made and the churn's wall-clock window (time.time())."""
        keys = [(ns, f"web-{d}") for ns in self.namespaces for d in range(self.size.deployments)]
        writes = 0
        window = [0.0, 0.0]

        async def writer(http: httpx.AsyncClient, offset: int, deadline: float) -> None:
            nonlocal writes
            i = offset
            while time.monotonic() < deadline:
                namespace, name = keys[i % len(keys)]
                replicas = 3 if (i // len(keys)) % 2 == 0 else 2
                r = await http.patch(
                    f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                    json={"spec": {"replicas": replicas}},
                    headers={"Content-Type": "application/merge-patch+json"},
                )
                r.raise_for_status()
                writes += 1
                i += WRITERS

        async def main() -> None:
            headers = {"Authorization": f"Bearer {self.token}"}
            clients = [
                httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)
                for _ in range(WRITERS)
            ]
            try:
                # Connected before the window opens: a new client's first request costs
                # ~1 s here (its set-up, not the emulator's answer).
                await asyncio.gather(*(c.get("/healthz") for c in clients))
                window[0] = time.time()
                deadline = time.monotonic() + self.size.churn
                await asyncio.gather(*(writer(c, w, deadline) for w, c in enumerate(clients)))
                window[1] = time.time()
            finally:
                for c in clients:
                    await c.aclose()

        asyncio.run(main())
        return writes, window[0], window[1]

    def reconciles_between(self, names: list[str], start_ns: int, end_ns: int) -> int:
        count = 0
        for name in names:
            for line in self.trace(name).read_bytes().splitlines():
                if RECONCILE_END in line:
                    ts = re.search(rb'"ts":(\d+)', line)
                    if ts and start_ns <= int(ts.group(1)) <= end_ns:
                        count += 1
        return count

    # -- one configuration --------------------------------------------------------------------

    def measure(self, members: int, *, failover: bool = False) -> tuple[float, float, float, float]:
        """(reconciles/s under churn, median RSS MiB after converging, emulator CPU share, and
        with ``failover`` the seconds :meth:`failover` took on these members, else 0)."""
        names = self.start(members, sharded=members > 1)
        try:
            self.scale_all(2)
            self._wait(lambda: self.converged(2), "the managers to converge", 120)
            time.sleep(0.5)
            rss = statistics.median(_rss_mib(self.procs[n].pid) for n in names)
            emu_cpu = cpu_seconds(self.emu.pid)
            writes, began, ended = self.churn()
            elapsed = ended - began
            emu_share = (cpu_seconds(self.emu.pid) - emu_cpu) / elapsed
            print(f"#   {members} member(s): {writes / elapsed:.0f} writes/s offered", flush=True)
            # Let the last reconciles of the window land in the trace files.
            time.sleep(1.0)
            reconciles = self.reconciles_between(names, int(began * 1e9), int(ended * 1e9))
            took = 0.0
            if failover:
                # The churn's backlog drained first: the figure is the move, not the queue.
                self._wait(self.settled, "the members to settle after the churn", 120)
                took = self.failover(names)
            return reconciles / elapsed, rss, emu_share, took
        finally:
            self.stop([n for n in names if n in self.procs])
            time.sleep(0.5)

    def empty_rss(self, *, sharded: bool) -> float:
        """A manager's RSS on an empty emulator of its own: the process base, no cache — of a
        singleton, or of a member (``--sharded``, alone on its ring: the membership, the layout
        writer and the second StartControllers are a member's fixed cost, not cache).

        Measured after a churn of one Deployment made and deleted over and over (its
        ReplicaSets collected with it), so that what every running manager holds whatever its
        share — the trace's ring of its last 8,192 events (~2 MiB full), the queues' and
        clients' steady state — is in the base, as it is in every member, and the cache is
        empty again when it is measured."""
        kind = "member" if sharded else "singleton"
        kubeconfig = self.tmp / f"empty-{kind}.kubeconfig"
        sim = start_sim(kubeconfig)
        emu = sim.process
        try:
            argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(kubeconfig)]
            argv += ["--secure-port", str(free_port()), "--bind-address", "127.0.0.1"]
            argv += ["--leader-elect=false", "--controllers=deployment,replicaset"]
            if sharded:
                argv += ["--sharded", "--sharding-ring=empty"]
            trace = self.tmp / f"empty-{kind}.jsonl"
            argv += ["--trace-file", str(trace)]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + START_TIMEOUT
                while b'"kind":"informers.started"' not in (
                    trace.read_bytes() if trace.exists() else b""
                ):
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the empty-cluster manager did not start")
                    time.sleep(0.1)
                time.sleep(1.0)  # its informers listed (nothing) and its workers run
                self._churn_one(sim)
                return _rss_mib(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=20)
        finally:
            emu.terminate()
            emu.wait(timeout=20)

    def _churn_one(self, sim: SimProcess) -> None:
        """Make and delete one Deployment for ``size.churn`` seconds; then wait until its
        ReplicaSets are collected and the manager's caches are empty again."""
        path = "/apis/apps/v1/namespaces/default/deployments"
        with sim.client(timeout=10) as http:
            until = time.monotonic() + self.size.churn
            made = 0
            while time.monotonic() < until:
                made += 1
                http.post(path, json=_deployment(f"base-{made}")).raise_for_status()
                time.sleep(0.2)  # reconciled: a ReplicaSet made, status written
                http.delete(f"{path}/base-{made}", params={"propagationPolicy": "Background"})
            rs = "/apis/apps/v1/namespaces/default/replicasets"
            self._wait(lambda: not http.get(rs).json()["items"], "the base's ReplicaSets gone")
            time.sleep(min(2.0, self.size.churn))  # it saw the deletes; its workers went idle

    def failover(self, names: list[str]) -> float:
        """SIGKILL the first of the running members and scale a Deployment of one of its
        namespaces at once: seconds until its status shows the new replicas (another member
        reconciled it after the dead one's lease)."""
        from pycm.api.sharding import hash_field
        from pycm.sharding.ring import Ring

        ring = Ring.of(names, layout=self._layout(f"r{self.runs}"))
        victim = names[0]
        namespace = next(ns for ns in self.namespaces if ring.owner(hash_field(ns)) == victim)
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web-0"
        process = self.procs.pop(victim)
        process.send_signal(signal.SIGKILL)
        process.wait()
        sent = time.monotonic()
        self._scale(self.http, namespace, "web-0", 4)
        deadline = sent + self.size.failover_bound * 4 + 10
        while time.monotonic() < deadline:
            d = self.http.get(path).json()
            status = d.get("status") or {}
            if (
                status.get("observedGeneration") == d["metadata"]["generation"]
                and status.get("replicas") == 4
            ):
                return time.monotonic() - sent
            time.sleep(0.02)
        raise RuntimeError("the killed member's namespace was not taken over")

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.http.close()
        self.emu.terminate()
        try:
            self.emu.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.emu.kill()


def run(size: str) -> list[Figure]:
    sz = SIZES[size]
    tmp = Path(tempfile.mkdtemp(prefix="pycm-bench-shard-"))
    bench = Bench(sz, tmp)
    figures: list[Figure] = []
    try:
        bench.seed()
        base = bench.empty_rss(sharded=False)
        # (tiny only keeps the bench working: one base for both, measured once)
        member_base = bench.empty_rss(sharded=True) if size != "tiny" else base
        single_rate, single_rss, single_emu, _ = bench.measure(1)
        print(
            f"# singleton: {single_rate:.0f} reconciles/s, RSS {single_rss:.1f} MiB "
            f"(process base {base:.1f} MiB; a member's {member_base:.1f} MiB), "
            f"emulator CPU {single_emu:.2f} s/s",
            flush=True,
        )
        took = 0.0
        for members in sz.members:
            last = members == sz.members[-1]  # its members then serve the failover figure
            rate, rss, emu, failed_over = bench.measure(members, failover=last)
            took = failed_over or took
            aim = member_base + (single_rss - base) / members  # a member's base + cache / m
            print(
                f"# {members} members: {rate:.0f} reconciles/s ({rate / members:.0f} a member), "
                f"RSS {rss:.1f} MiB a member (aim {aim:.1f}), emulator CPU {emu:.2f} s/s",
                flush=True,
            )
            figures.append(
                Figure(
                    f"shard.reconciles.{members}",
                    rate,
                    "reconciles/s",
                    "singleton",
                    single_rate,
                    "reconciles/s",
                    rate / single_rate if single_rate else 0.0,
                )
            )
            figures.append(
                Figure(
                    f"shard.rss_per_member.{members}",
                    rss,
                    "MiB",
                    "aim_base_plus_cache_share",
                    aim,
                    "MiB",
                    aim / rss if rss else 0.0,
                )
            )
        figures.append(
            Figure(
                "shard.failover",
                took,
                "s",
                "bound",
                sz.failover_bound,
                "s",
                took / sz.failover_bound,
            )
        )
    finally:
        bench.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return figures
