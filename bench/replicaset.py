"""The ReplicaSet controller scaling one ReplicaSet from 0 to ``n`` ready pods, end to end.

The emulator runs in its own process (``python -m pycm sim --port 0 --tls=false --kubelet
on --pod-ready-delay 0``: the kubelet binds and readies a pod in one write, so the figure is the
manager's and the API's cost, not a simulated start-up) and ``pycm run`` in another
(``--controllers replicaset``, no leader election, ``--trace-file``). The manager's client
limits are raised (``--kube-api-qps 5000 --kube-api-burst 5000``): at KCM's default 20 qps the
figure would only measure the client rate limiter (1000 creates take 50 s).

- ``replicaset.scale``: seconds from the ``spec.replicas`` update to ``status.readyReplicas ==
  n`` (polled every 20 ms). Peer: the minimum number of API writes such a scale-up needs
  (``n`` pod creates and one ReplicaSet status update); ratio: our writes / that minimum
  (1 is ideal; it is a cost, so lower is better).
- ``replicaset.scale_calls``: our API writes in that window (``api.request`` events of the
  manager's trace, list and watch excluded), same peer and ratio.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.harness import Figure
from pycm.trace.recorder import read_events
from pycm.util.ports import free_port

_SIZES = {"tiny": 20, "full": 1000}
_SIM_LINE = re.compile(r"^pycm sim: serving (\S+) \(kubeconfig: (.+)\)$")
_START_TIMEOUT = 30.0
_POLL = 0.02
_READS = frozenset({"list", "watch", "get"})


@dataclass
class Cluster:
    """An emulator process and a ``pycm run`` process against it."""

    url: str
    token: str
    kubeconfig: Path
    trace: Path
    manager: subprocess.Popen[bytes]
    sim: subprocess.Popen[str]

    def api(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def _stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=_START_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(
    done: Callable[[], bool], timeout: float, what: str, interval: float = _POLL
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not done within {timeout}s")
        time.sleep(interval)


@contextlib.contextmanager
def cluster(
    controllers: str,
    *,
    watch_window: int = 1_000_000,
    manager_args: tuple[str, ...] = (),
) -> Iterator[Cluster]:
    """An instant-kubelet emulator and a manager running ``controllers``; both stopped after.
    (``watch_window``: the events the emulator keeps for watches to resume from; a million,
    so that no bench's informer is ever sent a 410.)"""
    with tempfile.TemporaryDirectory(prefix="bench-controllers-") as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("KUBECONFIG", None)
        kubeconfig = tmp / "kubeconfig"
        sim_argv = [
            sys.executable,
            "-m",
            "pycm",
            "sim",
            "--port",
            "0",
            "--tls=false",
            "--kubelet",
            "on",
        ]
        sim_argv += ["--pod-ready-delay", "0s", "--pod-terminate-delay", "0s", "--nodes", "4"]
        sim_argv += ["--watch-window", str(watch_window), "--kubeconfig-out", str(kubeconfig)]
        sim = subprocess.Popen(
            sim_argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        manager: subprocess.Popen[bytes] | None = None
        try:
            assert sim.stdout is not None
            line = sim.stdout.readline().strip()
            match = _SIM_LINE.match(line)
            if match is None:
                raise RuntimeError(f"pycm sim did not start: {line!r}")
            token = str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])
            port, trace = free_port(), tmp / "trace.jsonl"
            manager = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pycm",
                    "run",
                    "--kubeconfig",
                    str(kubeconfig),
                    "--leader-elect=false",
                    "--secure-port",
                    str(port),
                    "--bind-address",
                    "127.0.0.1",
                    "--trace-file",
                    str(trace),
                    "--controllers",
                    controllers,
                    "--kube-api-qps",
                    "5000",
                    "--kube-api-burst",
                    "5000",
                    *manager_args,
                ],
                stdout=(tmp / "manager.log").open("wb"),
                stderr=subprocess.STDOUT,
                env=env,
            )

            def ready() -> bool:
                if manager is not None and manager.poll() is not None:
                    raise RuntimeError((tmp / "manager.log").read_text())
                try:
                    r = httpx.get(f"https://127.0.0.1:{port}/readyz", verify=False, timeout=2)
                except httpx.TransportError:
                    return False
                return r.status_code == 200

            wait_until(ready, _START_TIMEOUT, "pycm run ready", interval=0.05)
            yield Cluster(match.group(1), token, kubeconfig, trace, manager, sim)
        finally:
            if manager is not None:
                _stop(manager)
            _stop(sim)
            if sim.stdout is not None:
                sim.stdout.close()


def writes_between(trace: Path, start_ns: int, end_ns: int) -> int:
    """The manager's API writes recorded between two wall-clock instants (reads excluded)."""
    return sum(
        1
        for e in read_events(trace)
        if e.KIND == "api.request"
        and start_ns <= e.ts <= end_ns
        and getattr(e, "verb", "") not in _READS
        and getattr(e, "resource", "") in ("pods", "replicasets", "deployments")
    )


def _replicaset(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "replicas": n,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def run(size: str) -> list[Figure]:
    n = _SIZES[size]
    rs_path = "/apis/apps/v1/namespaces/default/replicasets"
    with cluster("replicaset") as c:
        with c.api() as api:
            created = api.post(rs_path, json=_replicaset(0))
            created.raise_for_status()

            def observed() -> bool:
                rs = api.get(f"{rs_path}/bench").json()
                return bool((rs.get("status") or {}).get("observedGeneration") == 1)

            wait_until(observed, 10, "ReplicaSet observed")
            start_ns = time.time_ns()
            start = time.perf_counter()
            patch = api.patch(
                f"{rs_path}/bench",
                content=b'{"spec":{"replicas":%d}}' % n,
                headers={"Content-Type": "application/merge-patch+json"},
            )
            patch.raise_for_status()

            def ready() -> bool:
                status = api.get(f"{rs_path}/bench").json().get("status") or {}
                return bool(status.get("readyReplicas") == n and status.get("replicas") == n)

            wait_until(ready, 600, f"{n} ready pods")
            seconds = time.perf_counter() - start
            end_ns = time.time_ns()
        _stop(c.manager)  # flushes the trace file
        calls = writes_between(c.trace, start_ns, end_ns)
    minimum = n + 1
    return [
        Figure(
            "replicaset.scale", seconds, "s", "minimum_api_calls", minimum, "calls", calls / minimum
        ),
        Figure(
            "replicaset.scale_calls",
            calls,
            "calls",
            "minimum_api_calls",
            minimum,
            "calls",
            calls / minimum,
        ),
    ]
