"""``pycm run``'s start-up: from spawning the process to its ``/healthz`` answering 200.

One ``pycm sim`` (plain HTTP, no kubelet: ``bench._sim_process``); then ``n`` pairs of
``pycm run --leader-elect=false`` processes against it, one after the other, the two sides
alternated within each pair:

- ``startup.healthz``: seconds from spawn to the first ``/healthz`` 200 (polled every 10 ms)
  through :func:`pycm.cli.entry`, the ``pycm`` process's entry, which loads the command's
  modules with the cyclic collector paused and freezes them. Peer: ``collector_on``, the same
  command through :func:`pycm.cli.main` alone (what every start-up did before: the collector
  running its full collections over the modules as they load). Ratio ours / peer (a cost:
  lower is better).
- ``startup.cpu``: the process's CPU seconds (user + system, /proc) at that moment, with the
  same peer and ratio.

Medians over the pairs: a start-up is ~1 s of one core, and a shared machine moves it by tens of
percent between runs; the pairs keep both sides under the same load.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench._sim_process import start_sim
from bench.harness import Figure, cpu_seconds
from pycm.util.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
_PAIRS = {"tiny": 1, "full": 20}
_POLL = 0.01
_BOUND = 60.0  # seconds a start-up may take before the run is called failed
_SIDES = {
    "entry": "from pycm.cli import entry; raise SystemExit(entry())",
    "collector_on": "import sys; from pycm.cli import main; raise SystemExit(main(sys.argv[1:]))",
}


def _start_once(kubeconfig: Path, side: str) -> tuple[float, float]:
    """(seconds to /healthz 200, CPU seconds then) of one ``pycm run`` through ``side``."""
    port = free_port()
    argv = [sys.executable, "-c", _SIDES[side], "run", "--kubeconfig", str(kubeconfig)]
    argv += ["--leader-elect=false", "--secure-port", str(port), "--bind-address", "127.0.0.1"]
    url = f"https://127.0.0.1:{port}/healthz"
    began = time.monotonic()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # verify=False: the manager's self-signed serving certificate, on loopback only.
        with httpx.Client(verify=False, timeout=1.0) as client:
            while time.monotonic() - began < _BOUND:
                if process.poll() is not None:
                    raise RuntimeError(f"pycm run ({side}) exited {process.returncode}")
                try:
                    if client.get(url).status_code == 200:
                        return time.monotonic() - began, cpu_seconds(process.pid)
                except httpx.HTTPError:
                    pass
                time.sleep(_POLL)
        raise RuntimeError(f"pycm run ({side}) did not answer /healthz within {_BOUND:.0f}s")
    finally:
        process.terminate()
        process.wait(timeout=30)


def run(size: str) -> list[Figure]:
    pairs = _PAIRS[size]
    results: dict[str, list[tuple[float, float]]] = {side: [] for side in _SIDES}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        sim = start_sim(kubeconfig)
        try:
            for i in range(pairs):
                order = ("entry", "collector_on") if i % 2 == 0 else ("collector_on", "entry")
                for side in order:
                    results[side].append(_start_once(kubeconfig, side))
        finally:
            sim.process.terminate()
            sim.process.wait(timeout=30)

    def median(side: str, index: int) -> float:
        return statistics.median(sample[index] for sample in results[side])

    figures = []
    for name, index in (("startup.healthz", 0), ("startup.cpu", 1)):
        ours, peer = median("entry", index), median("collector_on", index)
        figures.append(Figure(name, ours, "s", "collector_on", peer, "s", ours / peer))
    return figures
