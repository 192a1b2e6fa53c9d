"""Connection flood: what partial TLS connections cost the manager and the emulator, and whether
the manager keeps answering /healthz and renewing its Lease meanwhile (issue 40, item 1).

A ``pycm sim`` process (TLS) and a leader-elected ``pycm run --secure-port`` against it, both
with their default serving limits. This process opens N TLS connections to the manager's secure
port, completes each handshake and sends a request's first lines without the blank line that
ends its head — a partial request, held open — then closes them all. Meanwhile every 0.25 s it
probes /healthz on a new connection (as a kubelet does), reads the Lease, and samples the
manager's RSS (``VmRSS``: what the OS holds for it, not Python's objects). Then the same flood
against the emulator's port.

Figures (MB are 10^6 bytes):

- ``flood.manager_rss_growth_open``: peak RSS while the N are open minus the idle RSS before;
  peer: the aim, 150 MB for 3,000 connections (scaled to N), ratio aim / measured (≥ 1 meets it);
- ``flood.manager_rss_growth_after_close``: RSS ``settle`` seconds after closing them minus
  the idle RSS; peer: the aim, 50 MB (scaled), ratio aim / measured (≥ 1 meets it; a measured
  value at or below 0 shows as the aim over 0.1 MB);
- ``flood.manager_healthz_ok``: share of the /healthz probes answered 200 during the flood;
  peer: all of them (1), ratio measured / 1;
- ``flood.manager_renew_gap_max``: the longest time between two Lease renewals the probe saw,
  flood included; peer: the renew deadline, ratio deadline / measured (> 1: the lease was never
  in danger);
- ``flood.manager_tcp_only_rss_growth_open`` / ``…_after_close``: the same with N TCP
  connections that never start the TLS handshake (held until the handshake timeout, 10 s);
- ``flood.sim_rss_growth_open`` / ``flood.sim_rss_growth_after_close``: the TLS flood against
  the emulator.

A comment line per target gives the idle RSS, the connections open at the peak, and per
connection. Before the serving limits (issue 40): ~280 KB per connection on the manager, 3,000
→ 933 MB and unchanged 15 s after close, 3,000 more TCP-only ones → 1,035 MB; the emulator
1,000 → +280 MB.

Sizes: tiny — 100 connections, 0.25 s held, 0.5 s settle (it only keeps the bench working); full —
3,000 connections, 5 s held (within the 10 s handshake timeout), 15 s settle.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from bench.harness import Figure
from pycm.util.ports import free_port

_LINE = re.compile(r"pycm sim: serving (\S+) \(kubeconfig: (.+)\)")
START_TIMEOUT = 30.0
PROBE_EVERY = 0.25
LEASE, RENEW, RETRY = 4.0, 3.0, 1.0  # the demo's election timings
MB = 1e6
HEAD = b"GET /metrics HTTP/1.1\r\nHost: pycm\r\nUser-Agent: flood\r\n"  # no blank line


@dataclass(frozen=True, slots=True)
class Size:
    connections: int
    hold: float
    settle: float


SIZES = {"tiny": Size(100, 0.25, 0.5), "full": Size(3000, 5.0, 15.0)}


def _rss(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MB
    raise RuntimeError(f"no VmRSS for {pid}")


def _unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the flood's subject is the server's memory
    return context


@dataclass
class Watch:
    """What the probe saw while it ran."""

    healthz: list[bool] = field(default_factory=list)
    renewals: list[float] = field(default_factory=list)  # monotonic times a new renewTime showed
    peak_rss: float = 0.0


async def _healthz(port: int, context: ssl.SSLContext) -> bool:
    try:
        async with asyncio.timeout(2.0):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            try:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: pycm\r\nConnection: close\r\n\r\n")
                return (await reader.readline()).startswith(b"HTTP/1.1 200 ")
            finally:
                writer.transport.abort()
    except (OSError, TimeoutError, ssl.SSLError):
        return False


async def _probe(
    stop: asyncio.Event, watch: Watch, pid: int, port: int | None, lease: httpx.AsyncClient | None
) -> None:
    context = _unverified()
    last_renew = ""
    while not stop.is_set():
        watch.peak_rss = max(watch.peak_rss, _rss(pid))
        if port is not None:
            watch.healthz.append(await _healthz(port, context))
        if lease is not None:
            with contextlib.suppress(httpx.HTTPError):
                spec = (await lease.get("")).json().get("spec") or {}
                renew = str(spec.get("renewTime") or "")
                if renew and renew != last_renew:
                    last_renew = renew
                    watch.renewals.append(time.monotonic())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), PROBE_EVERY)


async def _partial(port: int, context: ssl.SSLContext | None) -> asyncio.StreamWriter | None:
    """A partial request over TLS; with no context, a TCP connection that never starts TLS."""
    try:
        async with asyncio.timeout(20.0):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except (OSError, TimeoutError, ssl.SSLError):
        return None
    if context is not None:
        writer.write(HEAD)
    return writer


async def _flood_once(
    pid: int,
    port: int,
    size: Size,
    *,
    healthz: bool,
    lease: httpx.AsyncClient | None,
    tls: bool = True,
) -> tuple[float, float, float, int, Watch]:
    """Idle RSS, peak growth while open, growth after settling, connections open, the watch."""
    idle = _rss(pid)
    watch = Watch()
    stop = asyncio.Event()
    probe = asyncio.create_task(
        _probe(stop, watch, pid, port if healthz else None, lease), name="flood-probe"
    )
    context = _unverified() if tls else None
    writers: list[asyncio.StreamWriter] = []
    for start in range(0, size.connections, 100):
        batch = min(100, size.connections - start)
        opened = await asyncio.gather(*(_partial(port, context) for _ in range(batch)))
        writers += [w for w in opened if w is not None]
    await asyncio.sleep(size.hold)
    open_now = sum(not w.transport.is_closing() for w in writers)
    peak = max(watch.peak_rss, _rss(pid)) - idle
    for writer in writers:
        writer.transport.abort()
    await asyncio.sleep(size.settle)
    after = _rss(pid) - idle
    # A gap needs two renewals: a short (tiny) flood may end before the second one. (Only
    # when the Lease is watched: a flood without it would wait the whole bound for nothing.)
    deadline = time.monotonic() + RENEW + 2 * RETRY
    while lease is not None and len(watch.renewals) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    stop.set()
    await probe
    return idle, peak, after, open_now, watch


def _max_gap(times: list[float]) -> float:
    return max((b - a for a, b in itertools.pairwise(times)), default=float("inf"))


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        kubeconfig = tmp / "kubeconfig"
        argv = [sys.executable, "-m", "pycm", "sim", "--port", "0", "--kubelet=off"]
        self.sim = subprocess.Popen(
            [*argv, "--kubeconfig-out", str(kubeconfig)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.sim.stdout is not None
        match = _LINE.search(self.sim.stdout.readline())
        if not match:
            self.sim.kill()
            raise RuntimeError("the emulator did not start")
        self.sim_url = match.group(1)
        self.sim_port = int(self.sim_url.rsplit(":", 1)[1])
        doc = yaml.safe_load(kubeconfig.read_text())
        self.token = doc["users"][0]["user"]["token"]
        self.ca = base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"])
        self.port = free_port()
        argv = [sys.executable, "-m", "pycm", "run", "--kubeconfig", str(kubeconfig)]
        argv += ["--leader-elect-lease-duration", f"{LEASE}s"]
        argv += ["--leader-elect-renew-deadline", f"{RENEW}s"]
        argv += ["--leader-elect-retry-period", f"{RETRY}s"]
        argv += ["--secure-port", str(self.port), "--bind-address", "127.0.0.1"]
        argv += ["--identity", "flood", "--cert-dir", str(tmp / "certs")]
        self.manager = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def lease_client(self) -> httpx.AsyncClient:
        context = ssl.create_default_context(cadata=self.ca.decode())
        return httpx.AsyncClient(
            base_url=f"{self.sim_url}/apis/coordination.k8s.io/v1/namespaces/kube-system"
            "/leases/pycm",
            headers={"Authorization": f"Bearer {self.token}"},
            verify=context,
            timeout=2.0,
        )

    async def wait_leading(self, lease: httpx.AsyncClient) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        context = _unverified()
        while time.monotonic() < deadline:
            if self.manager.poll() is not None:
                raise RuntimeError("pycm run exited early")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                holder = ((await lease.get("")).json().get("spec") or {}).get("holderIdentity")
                if holder == "flood" and await _healthz(self.port, context):
                    return
            await asyncio.sleep(0.1)
        raise RuntimeError("pycm run did not serve and lead in time")

    def close(self) -> None:
        for proc in (self.manager, self.sim):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (self.manager, self.sim):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.sim.stdout is not None:
            self.sim.stdout.close()


def _growth_figure(name: str, measured: float, aim: float) -> Figure:
    return Figure(name, measured, "MB", "aim", aim, "MB", aim / max(measured, 0.1))


async def _run(size: Size, tmp: Path) -> list[Figure]:
    procs = Processes(tmp)
    scale = size.connections / 3000
    try:
        async with procs.lease_client() as lease:
            await procs.wait_leading(lease)
            await asyncio.sleep(2 * RETRY)  # settled: informers synced, a few renewals made
            idle, peak, after, held, watch = await _flood_once(
                procs.manager.pid, procs.port, size, healthz=True, lease=lease
            )
            print(
                f"# manager: idle {idle:.1f} MB, {held} of {size.connections} connections open "
                f"at the peak, {peak * MB / max(held, 1) / 1e3:.1f} KB each; /healthz probes "
                f"{sum(watch.healthz)}/{len(watch.healthz)} ok; {len(watch.renewals)} renewals",
                flush=True,
            )
            t_idle, t_peak, t_after, t_held, t_watch = await _flood_once(
                procs.manager.pid, procs.port, size, healthz=True, lease=None, tls=False
            )
            print(
                f"# manager, TCP only (no TLS handshake): idle {t_idle:.1f} MB, {t_held} of "
                f"{size.connections} open at the peak, {t_peak * MB / max(t_held, 1) / 1e3:.1f} "
                f"KB each; /healthz probes {sum(t_watch.healthz)}/{len(t_watch.healthz)} ok",
                flush=True,
            )
            s_idle, s_peak, s_after, s_held, _ = await _flood_once(
                procs.sim.pid, procs.sim_port, size, healthz=False, lease=None
            )
            print(
                f"# sim: idle {s_idle:.1f} MB, {s_held} of {size.connections} connections open "
                f"at the peak, {s_peak * MB / max(s_held, 1) / 1e3:.1f} KB each",
                flush=True,
            )
    finally:
        procs.close()
    ok = sum(watch.healthz) / max(len(watch.healthz), 1)
    gap = _max_gap(watch.renewals)
    return [
        _growth_figure("flood.manager_rss_growth_open", peak, 150 * scale),
        _growth_figure("flood.manager_rss_growth_after_close", after, 50 * scale),
        Figure("flood.manager_healthz_ok", ok, "share", "all", 1.0, "share", ok),
        Figure("flood.manager_renew_gap_max", gap, "s", "renew_deadline", RENEW, "s", RENEW / gap),
        _growth_figure("flood.manager_tcp_only_rss_growth_open", t_peak, 150 * scale),
        _growth_figure("flood.manager_tcp_only_rss_growth_after_close", t_after, 50 * scale),
        _growth_figure("flood.sim_rss_growth_open", s_peak, 150 * scale),
        _growth_figure("flood.sim_rss_growth_after_close", s_after, 50 * scale),
    ]


def run(size: str) -> list[Figure]:
    tmp = Path(tempfile.mkdtemp(prefix="pycm-bench-flood-"))
    try:
        return asyncio.run(_run(SIZES[size], tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for figure in run(sys.argv[1] if len(sys.argv) > 1 else "tiny"):
        print(figure.line())
