"""Leader-election failover: how long the Lease has no live leader after the leader goes away.

Three ``pycm run`` replicas on an emulator (each its own process; two at size tiny). The
leader is sent SIGKILL (it cannot release: the others wait out the lease) or SIGTERM
(ReleaseOnCancel: it writes an empty holder on its way out); the figure is the time from the
signal to the Lease naming a new holder, polled every 10 ms.

A second figure counts from the old leader's **last successful renew** instead of the signal:
the new holder's ``acquireTime`` minus the last ``renewTime`` the old leader wrote (both the
writers' clocks on this one machine). That is the interval client-go's bound is about, and the
jitter of the standbys' retries lets it exceed ``lease_duration + 1.2 × retry_period``: a
standby sees the renewal up to one jittered retry period (≤ 2.2 × retry) late, and takes over on
its first try after the lease ran out, up to one more. Its line has the same peer and ratio, and
a comment line lists every run.

The peer is the theoretical bound (client-go's algorithm): after a kill a candidate takes the
lease once ``lease_duration`` passes without a change it observed, and it looks every
``retry_period`` with up to 1.2 jitter — bound ``lease_duration + 1.2 × retry_period``; after a
release the next attempt wins — bound ``1.2 × retry_period``. Unlike most benchmarks here the
ratio is **measured / bound**: ≤ 1 is within the bound (a kill can beat it, because the last
renewal the standbys saw was up to one retry period before the kill).

``leader.failover_to_first_reconcile.warm`` and ``.cold``: with pods in the cluster (10k at full
size, ``bench.informers.realistic_pod``: ~5 KB of JSON each) and one ReplicaSet, two replicas
running the replicaset controller — both with ``--leader-elect-warm-standby``, or both without
— the leader is sent SIGKILL once the standby is ready (``/readyz``: a warm one's caches are
synced); the figure is the time from the signal to the first ``reconcile.begin`` in the
standby's trace. Peer: the same kill bound; ratio measured / bound. Warm, the takeover starts
its workers on caches it already holds; cold, it lists the pods first. Both pairs run at once,
each on a Lease of its own, and their leaders are killed one after the other, warm first in
every other run; a comment line lists every run.

Sizes: tiny — lease 1 s, renew 0.6 s, retry 0.25 s, one run each, two candidates, 60 pods
(< 30 s); full — the demo's 4 s / 3 s / 1 s, three candidates, the median of 5 runs each (3 of
each reconcile figure, 10k pods).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import orjson

from bench._kubehttp import PODS, HttpClient
from bench._sim_process import start_sim
from bench.harness import Figure
from bench.informers import TINY_WRITERS, WRITERS, realistic_pod
from pycm.util.ports import free_port

POLL = 0.01
START_TIMEOUT = 30.0


class ReplicaExited(RuntimeError):
    """A replica exited while a figure waited for it."""


@dataclass(frozen=True, slots=True)
class Timings:
    lease: float
    renew: float
    retry: float
    runs: int
    pods: int  # in the cluster for the first-reconcile figures
    reconcile_runs: int
    candidates: int  # replicas in the failover figures' election (two suffice to fail over)

    @property
    def kill_bound(self) -> float:
        return self.lease + 1.2 * self.retry

    @property
    def release_bound(self) -> float:
        return 1.2 * self.retry


SIZES = {
    "tiny": Timings(1.0, 0.6, 0.25, 1, 60, 1, 2),
    "full": Timings(4.0, 3.0, 1.0, 5, 10_000, 3, 3),
}
# The ReplicaSet the first-reconcile figures' replicas reconcile (its label matches no seeded
# pod: the seeded ones belong to ReplicaSets that do not exist, as after a cleanup).
PROBE_RS = "failover-probe"
RECONCILE_BEGIN = b'"kind":"reconcile.begin"'
LEASE_ACQUIRED = b'"kind":"lease.acquired"'


class Bench:
    def __init__(self, timings: Timings, tmp: Path) -> None:
        self.t = timings
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        self.started = 0
        sim = start_sim(tmp / "kubeconfig")
        self.emu, self.url, self.token, self.kubeconfig = (
            sim.process,
            sim.url,
            sim.token,
            sim.kubeconfig,
        )
        self.http = sim.client(timeout=5)
        self.lease = "pycm"  # the Lease of the failover figures
        self.leases: dict[str, str] = {}  # identity -> the Lease it takes part in

    def start(self, *extra: str, lease: str = "") -> str:
        self.started += 1
        identity = f"replica-{self.started}"
        port = free_port()
        argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", self.kubeconfig]
        argv += ["--leader-elect-lease-duration", f"{self.t.lease}s"]
        argv += ["--leader-elect-renew-deadline", f"{self.t.renew}s"]
        argv += ["--leader-elect-retry-period", f"{self.t.retry}s"]
        self.leases[identity] = lease = lease or self.lease
        argv += ["--leader-elect-resource-name", lease]
        argv += ["--secure-port", str(port), "--bind-address", "127.0.0.1"]
        argv += ["--identity", identity, "--trace-file", str(self.trace(identity)), *extra]
        with (self.tmp / f"{identity}.log").open("wb") as log:  # (the child keeps its own fd)
            self.procs[identity] = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        self.ports[identity] = port
        return identity

    def trace(self, identity: str) -> Path:
        return self.tmp / f"{identity}.jsonl"

    def lease_spec(self, lease: str = "") -> dict[str, object]:
        response = self.http.get(
            f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease or self.lease}"
        )
        if response.status_code != 200:
            return {}
        return dict(response.json().get("spec") or {})

    def holder(self, lease: str = "") -> str:
        return str(self.lease_spec(lease).get("holderIdentity") or "")

    def wait_ready(self) -> str:
        """Until a live replica leads and every live one has taken part in the election."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            live = [i for i, p in self.procs.items() if p.poll() is None]
            holder = self.holder()
            if holder in live and all(self._in_election(i) for i in live):
                time.sleep(2 * self.t.retry)  # every standby has observed the current record
                return holder
            time.sleep(0.05)
        raise RuntimeError("no leader elected")

    def _in_election(self, identity: str) -> bool:
        path = self.tmp / f"{identity}.jsonl"
        return path.exists() and b'"kind":"lease.' in path.read_bytes()

    def failover(self, sig: signal.Signals) -> tuple[float, float]:
        """Signal the leader; seconds until another replica holds the Lease, counted from the
        signal and from the old leader's last renew (the new acquireTime − the old renewTime)."""
        old = self.wait_ready()
        sent = time.monotonic()
        self.procs[old].send_signal(sig)
        self.procs[old].wait(timeout=20)  # it renews no more: the Lease holds its last renew
        last_renew = _micro_time(self.lease_spec().get("renewTime"))
        deadline = sent + self.t.kill_bound * 3 + 10
        while time.monotonic() < deadline:
            spec = self.lease_spec()
            holder = str(spec.get("holderIdentity") or "")
            if holder and holder != old:
                took = time.monotonic() - sent
                from_renew = _micro_time(spec.get("acquireTime")) - last_renew
                self.procs.pop(old)
                self.start()  # keep as many candidates for the next run
                return took, from_renew
            time.sleep(POLL)
        raise RuntimeError(f"no failover after {sig.name}")

    def signal_replicas(self, sig: signal.Signals) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(sig)

    def stop_replicas(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Signal every replica and wait for it (the next figures run replicas of their own)."""
        self.signal_replicas(sig)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def seed(self) -> None:
        """The pods (created once each: their managedFields are the emulator's own), and the
        one ReplicaSet the replicas reconcile."""
        writers = asyncio.Semaphore(TINY_WRITERS if self.t.pods < 1000 else WRITERS)

        async def main() -> None:
            client = HttpClient(self.url, self.token)

            async def create(i: int) -> None:
                pod = realistic_pod(i)
                pod["metadata"].pop("managedFields", None)
                async with writers:
                    await client.create(PODS, pod, "default")

            try:
                await asyncio.gather(*(create(i) for i in range(self.t.pods)))
            finally:
                await client.aclose()

        asyncio.run(main())
        labels = {"app": PROBE_RS}
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": PROBE_RS, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
        response = self.http.post("/apis/apps/v1/namespaces/default/replicasets", json=rs)
        if response.status_code != 201:
            raise RuntimeError(f"creating the ReplicaSet failed: {response.text}")

    def first_reconciles(self, run: int) -> dict[bool, tuple[float, float]]:
        """A warm pair and a cold pair of replicas, each on a Lease of its own; once each leader
        has reconciled and each standby (started after it) is ready, SIGKILL one leader, then
        the other (warm first in even runs). By warmth, seconds from each signal to that
        standby's first reconcile, and from its ``lease.acquired`` to that reconcile."""
        extra: dict[bool, list[str]] = {}
        leases: dict[bool, str] = {}
        for warm in (True, False):
            leases[warm] = f"pycm-{'warm' if warm else 'cold'}-{run}"
            extra[warm] = ["--controllers", "replicaset"]
            if warm:
                extra[warm].append("--leader-elect-warm-standby")
        # The leaders first, the standbys once the leaders have listed and reconciled: with
        # 10k pods, four replicas listing at once on a 2-core machine starve the leaders'
        # renewals (the emulator serves them on one event loop) past the renew deadline.
        leaders = {warm: self.start(*extra[warm], lease=leases[warm]) for warm in extra}
        deadline = time.monotonic() + START_TIMEOUT + 60  # a list of 10k pods included
        while not all(
            self.holder(leases[warm]) == leader
            and RECONCILE_BEGIN in self.trace(leader).read_bytes()
            for warm, leader in leaders.items()
        ):
            self._check_alive("a leader did not reconcile", deadline)
            time.sleep(0.05)
        standbys = {warm: self.start(*extra[warm], lease=leases[warm]) for warm in extra}
        deadline = time.monotonic() + START_TIMEOUT + 60
        while not all(self._in_election(s) and self._ready(s) for s in standbys.values()):
            self._check_alive("a standby is not ready", deadline)
            time.sleep(0.05)
        roles = {warm: (leaders[warm], standbys[warm]) for warm in extra}
        time.sleep(2 * self.t.retry)  # each standby has observed its leader's current record
        took: dict[bool, tuple[float, float]] = {}
        for warm in (run % 2 == 0, run % 2 == 1):
            leader, standby = roles[warm]
            killed_ns = time.time_ns()
            self.procs[leader].send_signal(signal.SIGKILL)
            self.procs[leader].wait(timeout=20)
            deadline = time.monotonic() + self.t.kill_bound * 3 + 60
            while (began := _first_after(self.trace(standby), RECONCILE_BEGIN, killed_ns)) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no reconcile after the failover (warm={warm})")
                time.sleep(POLL)
            acquired = _first_after(self.trace(standby), LEASE_ACQUIRED, killed_ns) or began
            took[warm] = ((began - killed_ns) / 1e9, (began - acquired) / 1e9)
        self.stop_replicas(signal.SIGKILL)  # nothing of theirs is measured any more
        return took

    def _check_alive(self, waiting_for: str, deadline: float) -> None:
        """Raise if a replica exited (a leader whose renewals starved exits 1) or time is up."""
        for identity, proc in self.procs.items():
            if proc.poll() is not None:
                lines = (self.tmp / f"{identity}.log").read_text(errors="replace").splitlines()
                raise ReplicaExited(
                    f"{identity} exited with status {proc.returncode}: " + " | ".join(lines[-3:])
                )
        if time.monotonic() > deadline:
            raise RuntimeError(waiting_for)

    def _ready(self, identity: str) -> bool:
        try:
            response = httpx.get(
                f"https://127.0.0.1:{self.ports[identity]}/readyz", verify=False, timeout=2
            )
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def close(self) -> None:
        for proc in [*self.procs.values(), self.emu]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.procs.values(), self.emu]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.http.close()


def _first_after(path: Path, kind: bytes, after_ns: int) -> int | None:
    """The ``ts`` of the first event of ``kind`` in the trace file ``path`` later than
    ``after_ns`` (unix ns), or None."""
    if not path.exists():
        return None
    for line in path.read_bytes().splitlines():
        if kind in line:
            ts = int(orjson.loads(line)["ts"])
            if ts > after_ns:
                return ts
    return None


def _micro_time(value: object) -> float:
    """A Lease MicroTime (RFC 3339 with microseconds, UTC) as seconds since the epoch."""
    if not isinstance(value, str) or not value:
        raise RuntimeError(f"the Lease has no time where one was expected: {value!r}")
    stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return stamp.timestamp()


def run(size: str) -> list[Figure]:
    timings = SIZES[size]
    tmp = Path(tempfile.mkdtemp(prefix="pycm-bench-leader-"))
    bench = Bench(timings, tmp)
    try:
        for _ in range(timings.candidates):
            bench.start()
        killed = [bench.failover(signal.SIGKILL) for _ in range(timings.runs)]
        releases = [bench.failover(signal.SIGTERM)[0] for _ in range(timings.runs)]
        bench.signal_replicas(signal.SIGTERM)  # they stop while the pods are written
        bench.seed()
        bench.stop_replicas()
        warm_runs: list[float] = []
        cold_runs: list[float] = []
        warm_acquired: list[float] = []  # from the standby's lease.acquired
        cold_acquired: list[float] = []
        attempt = 0
        while len(warm_runs) < timings.reconcile_runs:
            try:
                took = bench.first_reconciles(attempt)
            except ReplicaExited as exc:
                # Said, not hidden: on a loaded 2-core machine a leader listing 10k pods has
                # missed its renew deadline (3 s at full size) and exited, as it must.
                print(f"# first-reconcile run {attempt}: {exc}; run again", flush=True)
                bench.stop_replicas(signal.SIGKILL)
                if attempt >= timings.reconcile_runs + 1:
                    raise
            else:
                warm_runs.append(took[True][0])
                cold_runs.append(took[False][0])
                warm_acquired.append(took[True][1])
                cold_acquired.append(took[False][1])
            attempt += 1
    finally:
        bench.close()
        shutil.rmtree(tmp, ignore_errors=True)
    kills = [took for took, _ in killed]
    from_renews = [from_renew for _, from_renew in killed]
    kill, release = statistics.median(kills), statistics.median(releases)
    from_renew = statistics.median(from_renews)
    print(
        "# SIGKILL takeover from the last renew (s), every run: "
        + ", ".join(f"{x:.2f}" for x in from_renews)
        + f" (bound {timings.kill_bound:.2f}, worst case with jitter "
        f"{timings.lease + 4.4 * timings.retry:.2f})",
        flush=True,
    )
    warm, cold = statistics.median(warm_runs), statistics.median(cold_runs)
    print(
        f"# SIGKILL to the standby's first reconcile at {timings.pods} pods (s), every run: "
        f"warm {', '.join(f'{x:.2f}' for x in warm_runs)}; "
        f"cold {', '.join(f'{x:.2f}' for x in cold_runs)} (bound {timings.kill_bound:.2f}); "
        "from its lease.acquired: "
        f"warm {', '.join(f'{x:.2f}' for x in warm_acquired)}; "
        f"cold {', '.join(f'{x:.2f}' for x in cold_acquired)}",
        flush=True,
    )
    return [
        Figure(
            "leader.failover_kill",
            kill,
            "s",
            "bound",
            timings.kill_bound,
            "s",
            kill / timings.kill_bound,
        ),
        Figure(
            "leader.failover_kill_from_last_renew",
            from_renew,
            "s",
            "bound",
            timings.kill_bound,
            "s",
            from_renew / timings.kill_bound,
        ),
        Figure(
            "leader.failover_release",
            release,
            "s",
            "bound",
            timings.release_bound,
            "s",
            release / timings.release_bound,
        ),
        Figure(
            "leader.failover_to_first_reconcile.warm",
            warm,
            "s",
            "bound",
            timings.kill_bound,
            "s",
            warm / timings.kill_bound,
        ),
        Figure(
            "leader.failover_to_first_reconcile.cold",
            cold,
            "s",
            "bound",
            timings.kill_bound,
            "s",
            cold / timings.kill_bound,
        ),
    ]


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for figure in run(sys.argv[1] if len(sys.argv) > 1 else "tiny"):
        print(figure.line())
