"""One trace per reconcile, tail-sampled, through ``pycm run`` exporting to a real OTLP/gRPC
receiver: every reconcile is the root of a trace of its own (never start-up's child), the
``--trace-sample-ratio 0.5`` share of the ordinary ones is exported (a binomially plausible
half, and exactly the trace ids the ratio rule picks, besides the causes exported ones link
to), every failed and slow one is exported; authorization reviews of the secure port are not
start-up's children either."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.events import Outcome
from pycm.trace.kinds import (
    ApiRequestCompleted,
    ReconcileFinished,
    ReconcileStarted,
    StartupBegan,
)
from pycm.trace.recorder import read_events
from pycm.util.sampling import TraceIdRatio
from tests.otel.receivers import otlp_grpc_receiver
from tests.otel.test_manager_export_e2e import _sigterm
from tests.support.manager import free_port, poll
from tests.support.manifests import workload

pytestmark = pytest.mark.e2e

DEPLOYMENTS = 30
RATIO = 0.5
SLOW_S = 0.3
# Two-sided 99.9% normal bound on a binomial count: |k − n·p| ≤ Z·√(n·p·(1−p)).
Z_999 = 3.29


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(
        tls=False, kubelet=True, pod_ready_delay=0.0, pod_terminate_delay=0.0
    ) as emu:
        yield emu


def _start(emu: Any, tmp_path: Path, endpoint: str, port: int) -> tuple[Any, Path, Any]:
    trace = tmp_path / "trace.jsonl"
    out = (tmp_path / "manager.log").open("wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "OTEL_"))}
    argv = [
        sys.executable,
        "-m",
        "pycm",
        "run",
        "--kubeconfig",
        str(emu.kubeconfig_path),
        "--secure-port",
        str(port),
        "--bind-address",
        "127.0.0.1",
        "--identity",
        "otel-sampling",
        "--leader-elect-resource-namespace",
        "default",
        "--kube-api-qps",
        "500",
        "--kube-api-burst",
        "1000",
        "--trace-file",
        str(trace),
        "--otlp-endpoint",
        endpoint,
        "--trace-sample-ratio",
        str(RATIO),
        "--trace-slow-threshold",
        f"{int(SLOW_S * 1000)}ms",
    ]
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    return proc, trace, out


@pytest.mark.asyncio
async def test_each_reconcile_is_its_own_tail_sampled_trace(cluster: Any, tmp_path: Path) -> None:
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    port = free_port()
    # Failed reconciles (the deployment controller's RS creates fail) and slow ones (the
    # replicaset controller's pod creates wait) among the rest — in different controllers, so no
    # reconcile is both (a failed deployment sync also writes its status: a slow status write
    # made some failed reconciles the only slow ones). The manager's user is "admin", as is this
    # test's, which creates only deployments.
    cluster.faults.add(kind="error", status=500, verb="create", resource="replicasets", count=4)
    cluster.faults.add(
        kind="latency", seconds=SLOW_S + 0.2, verb="create", resource="pods", count=4
    )
    async with otlp_grpc_receiver() as receiver:
        proc, trace, out = _start(cluster, tmp_path, receiver.endpoint, port)
        try:
            async with (
                httpx.AsyncClient(base_url=cluster.url, headers=admin, verify=False) as api,
                httpx.AsyncClient(verify=False, timeout=5) as secure,
            ):

                async def ready() -> bool:
                    assert proc.poll() is None, (tmp_path / "manager.log").read_text()
                    try:
                        r = await secure.get(f"https://127.0.0.1:{port}/readyz")
                    except httpx.TransportError:
                        return False
                    return r.status_code == 200

                await poll(ready, timeout=60)
                for i in range(DEPLOYMENTS):
                    r = await api.post(
                        "/apis/apps/v1/namespaces/default/deployments",
                        json=workload("Deployment", f"web-{i}"),
                    )
                    assert r.status_code == 201, r.text

                async def rolled_out() -> bool:
                    r = await api.get("/apis/apps/v1/namespaces/default/deployments")
                    items = r.json()["items"]
                    return len(items) == DEPLOYMENTS and all(
                        (d.get("status") or {}).get("availableReplicas") == 1 for d in items
                    )

                await poll(rolled_out, timeout=90, interval=0.5)
                # An authenticated request: the manager asks the API server to review the token.
                r = await secure.get(f"https://127.0.0.1:{port}/metrics", headers=admin)
                assert r.status_code == 200, r.text
                await asyncio.sleep(1.0)  # the last reconciles end; spans go out in 1 s batches
        finally:
            code, _ = await _sigterm(proc, out)
        spans = receiver.spans()
    assert code == 0, (tmp_path / "manager.log").read_text()

    events = list(read_events(trace))
    (startup,) = [e for e in events if isinstance(e, StartupBegan)]
    begins = [e for e in events if isinstance(e, ReconcileStarted)]
    ends = [e for e in events if isinstance(e, ReconcileFinished)]
    # N reconciles → N traces, each a root (linked to what enqueued it, not parented).
    assert len(begins) >= 2 * DEPLOYMENTS
    assert len({b.trace_id for b in begins}) == len(begins)
    assert all(b.parent_id == "" and b.trace_id != startup.trace_id for b in begins)
    assert {e.trace_id for e in ends} == {b.trace_id for b in begins}

    exported = {s.trace_id for s in spans if s.span.name.startswith("reconcile ")}
    failed = {e.trace_id for e in ends if e.outcome is Outcome.ERROR}
    slow = {e.trace_id for e in ends if e.dur_ns > SLOW_S * 1e9} - failed
    ordinary = {e.trace_id for e in ends} - failed - slow
    assert failed and slow, (len(failed), len(slow))
    assert failed <= exported, len(failed - exported)
    assert slow <= exported, len(slow - exported)
    # The ratio's share of the rest: binomially plausible, and exactly the rule's picks, with
    # the causes an exported reconcile links to (kept within the cause window).
    picked = {t for t in ordinary if TraceIdRatio(RATIO).sampled(t)}
    n, k = len(ordinary), len(picked)
    assert abs(k - n * RATIO) <= Z_999 * math.sqrt(n * RATIO * (1 - RATIO)), (k, n)
    linked = {
        link.trace_id.hex()
        for s in spans
        if s.span.name.startswith("reconcile ")
        for link in s.span.links
    }
    assert picked <= exported, len(picked - exported)
    assert (ordinary & exported) - picked <= linked
    # Every exported span of a reconcile's trace hangs off that reconcile, none off start-up.
    roots = {s.span_id: s for s in spans if s.span.name.startswith("reconcile ")}
    for s in spans:
        if s.trace_id in exported and s.span_id not in roots:
            assert s.parent_id in roots, s.span.name

    reviews = [
        e
        for e in events
        if isinstance(e, ApiRequestCompleted)
        and e.resource in ("tokenreviews", "subjectaccessreviews")
    ]
    assert reviews
    assert all(e.trace_id != startup.trace_id for e in reviews)
