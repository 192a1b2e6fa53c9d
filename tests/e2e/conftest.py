"""E2E fixtures: an in-process emulator, real ``pycm run`` processes, and a Lease recorder.

Each replica has its own user (a token in ``system:masters``) and kubeconfig, so a fault can
target one replica's requests. The recorder watches the Lease from the test and keeps every
version the API server stored, with the local time it arrived: the lease history the tests
judge (one holder at a time, takeover times).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import signal
import ssl
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio

from pycm.kube import LEASES, Client, KubeError, load_config
from pycm.leaderelection.record import LeaderElectionRecord
from pycm.sim.auth import UserInfo
from pycm.sim.kubeconfig import write_kubeconfig
from pycm.sim.server import Emulator, run_emulator
from pycm.util.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE, LEASE = "kube-system", "pycm"

# Short election timings: lease 2 s, renew deadline 1.5 s, retry 0.5 s (client-go's ratios).
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.5
# Slack on top of each theoretical bound: process scheduling, the poll interval, a loaded CI box.
SLACK = 2.0
START_TIMEOUT = 30.0  # a pycm run process imports, serves and joins the election in ~2-4 s


@dataclass(frozen=True, slots=True)
class Seen:
    """One stored version of the Lease, as the recorder received it."""

    at: float  # time.monotonic() on arrival
    record: LeaderElectionRecord

    @property
    def holder(self) -> str:
        return self.record.holder_identity


@dataclass
class LeaseRecorder:
    history: list[Seen] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def holder(self) -> str:
        return self.history[-1].holder if self.history else ""

    def holders_after(self, at: float) -> list[str]:
        return [s.holder for s in self.history if s.at >= at]

    async def wait_for(
        self, predicate: Callable[[str], bool], timeout: float, after: float = 0.0
    ) -> float:
        """The arrival time of the first version (at or after ``after``) whose holder satisfies
        ``predicate``, waiting up to ``timeout`` seconds for one."""
        async with asyncio.timeout(timeout):
            while True:
                for seen in self.history:
                    if seen.at >= after and predicate(seen.holder):
                        return seen.at
                self.changed.clear()
                await self.changed.wait()

    async def run(self, client: Client) -> None:
        rv = None
        while True:
            try:
                if rv is None:
                    listed = await client.list(
                        LEASES, namespace=NAMESPACE, field_selector=f"metadata.name={LEASE}"
                    )
                    rv = listed["metadata"]["resourceVersion"]
                    for item in listed.get("items") or []:
                        self._add(item)
                async with client.watch(
                    LEASES,
                    namespace=NAMESPACE,
                    field_selector=f"metadata.name={LEASE}",
                    resource_version=rv,
                ) as stream:
                    async for event in stream:
                        rv = event.object["metadata"].get("resourceVersion", rv)
                        if event.type in ("ADDED", "MODIFIED"):
                            self._add(event.object)
            except KubeError:
                rv = None
                await asyncio.sleep(0.05)

    def _add(self, obj: dict[str, object]) -> None:
        spec = obj.get("spec")
        record = LeaderElectionRecord.from_lease_spec(spec if isinstance(spec, dict) else None)
        self.history.append(Seen(time.monotonic(), record))
        self.changed.set()


def assert_one_holder_at_a_time(history: list[Seen], lease_duration: float) -> None:
    """Never two holders with overlapping valid terms: whenever B replaces A without A
    releasing first, B's acquireTime is at least A's last renewTime + the lease duration
    (minus a little for rounding to microseconds and the scheduling of the writes)."""
    for prev, cur in itertools.pairwise(history):
        a, b = prev.record, cur.record
        if a.holder_identity and b.holder_identity and a.holder_identity != b.holder_identity:
            gap = (b.acquire_time_ns - a.renew_time_ns) / 1e9
            assert gap >= lease_duration - 0.1, (
                f"{b.holder_identity} acquired {gap:.2f}s after {a.holder_identity}'s last "
                f"renewal, inside its {lease_duration}s term"
            )


@dataclass
class Replica:
    identity: str
    port: int
    trace_file: Path
    log_file: Path
    process: asyncio.subprocess.Process

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def events(self, kind: str) -> list[dict[str, object]]:
        if not self.trace_file.exists():
            return []
        out = []
        for line in self.trace_file.read_bytes().splitlines():
            with contextlib.suppress(orjson.JSONDecodeError):
                obj = orjson.loads(line)
                if obj.get("kind") == kind:
                    out.append(obj)
        return out

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")[-3000:]

    async def exit_code(self, timeout: float) -> int:
        async with asyncio.timeout(timeout):
            return await self.process.wait()


class Cluster:
    """The emulator and the replicas of one test."""

    def __init__(self, emu: Emulator, tmp: Path) -> None:
        self.emu = emu
        self.tmp = tmp
        self.replicas: dict[str, Replica] = {}
        self.leases = LeaseRecorder()

    def kubeconfig_for(self, user: str) -> Path:
        token = secrets.token_urlsafe(24)
        self.emu.authenticator.add(token, UserInfo(user, user, ("system:masters",)))
        path = self.tmp / f"{user}.kubeconfig"
        write_kubeconfig(path, self.emu.url, token, self.emu.ca_pem)
        return path

    def user_of(self, request: Any) -> str:
        """The user an emulator request authenticated as ("" without a known token)."""
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        info = self.emu.authenticator.authenticate(token) if token else None
        return info.name if info is not None else ""

    async def start(self, identity: str, *extra: str) -> Replica:
        """Start ``pycm run`` as ``identity`` with the short election timings (and ``extra``
        flags after them)."""
        kubeconfig = self.kubeconfig_for(identity)
        port = free_port()
        trace, log = self.tmp / f"{identity}.jsonl", self.tmp / f"{identity}.log"
        argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(kubeconfig)]
        argv += ["--leader-elect-lease-duration", f"{LEASE_DURATION}s"]
        argv += ["--leader-elect-renew-deadline", f"{RENEW_DEADLINE}s"]
        argv += ["--leader-elect-retry-period", f"{RETRY_PERIOD}s"]
        argv += ["--secure-port", str(port), "--bind-address", "127.0.0.1"]
        argv += ["--cert-dir", str(self.tmp / f"certs-{identity}")]
        argv += ["--identity", identity, "--trace-file", str(trace), *extra]
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out
            )
        replica = Replica(identity, port, trace, log, process)
        self.replicas[identity] = replica
        return replica

    async def start_all(self, *identities: str) -> list[Replica]:
        replicas = [await self.start(i) for i in identities]
        await asyncio.gather(*(self.wait_serving(r) for r in replicas))
        return replicas

    async def wait_serving(self, replica: Replica) -> None:
        """Until the replica's /healthz answers (it serves before it joins the election)."""
        async with asyncio.timeout(START_TIMEOUT):
            while True:
                if replica.process.returncode is not None:
                    pytest.fail(f"{replica.identity} exited early:\n{replica.log()}")
                if await self.healthz(replica) is not None:
                    return
                await asyncio.sleep(0.1)

    async def healthz(self, replica: Replica, path: str = "/healthz") -> int | None:
        cert = self.tmp / f"certs-{replica.identity}" / "pycm.crt"
        if not cert.exists():
            return None
        try:
            context = ssl.create_default_context(cafile=str(cert))
            async with httpx.AsyncClient(verify=context, timeout=2.0) as http:
                # /healthz is always allowed; its sub-checks need an authorized user.
                headers = {"Authorization": f"Bearer {self.emu.admin_token}"}
                return (await http.get(replica.url + path, headers=headers)).status_code
        except (httpx.HTTPError, ssl.SSLError, OSError):
            return None

    def leader(self) -> Replica:
        return self.replicas[self.leases.holder]

    async def stop(self) -> None:
        for replica in self.replicas.values():
            if replica.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(replica.process.pid, signal.SIGCONT)
                    replica.process.kill()
        for replica in self.replicas.values():
            await replica.process.wait()


@contextlib.asynccontextmanager
async def running_cluster(tmp_path: Path, **emulator: Any) -> AsyncIterator[Cluster]:
    """An emulator (``emulator``: its options) and the lease recorder watching it."""
    async with run_emulator(tls=False, kubelet=False, **emulator) as emu:
        cluster = Cluster(emu, tmp_path)
        config = await load_config(str(cluster.kubeconfig_for("observer")))
        async with await Client.connect(config) as client:
            recorder = asyncio.create_task(cluster.leases.run(client), name="lease-recorder")
            try:
                yield cluster
            finally:
                await cluster.stop()
                recorder.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await recorder


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with running_cluster(tmp_path) as running:
        yield running
