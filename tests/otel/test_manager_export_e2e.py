"""``pycm run`` on the emulator exporting to an in-test OTLP/gRPC receiver: the start-up trace,
reconcile traces of a Deployment rollout, resource attributes; and a stalled receiver."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.recorder import read_events
from pycm.util.ports import free_port
from tests.otel.receivers import Received, otlp_grpc_receiver
from tests.support.manager import record_traceparents

pytestmark = pytest.mark.e2e

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


def _start(emu: Any, tmp_path: Path, endpoint: str, *extra: str) -> tuple[Any, Path, Any]:
    trace = tmp_path / "trace.jsonl"
    out = (tmp_path / "manager.log").open("wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "OTEL_"))}
    env.update({"POD_NAME": "pycm-e2e-0", "POD_NAMESPACE": "kube-system"})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycm",
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--secure-port",
            str(free_port()),
            "--bind-address",
            "127.0.0.1",
            "--identity",
            "otel-e2e",
            "--leader-elect-resource-namespace",
            "default",
            "--trace-file",
            str(trace),
            "--otlp-endpoint",
            endpoint,
            *extra,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
    )
    return proc, trace, out


async def _sigterm(proc: Any, out: Any, limit: float = 25.0) -> tuple[int, float]:
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() - start < limit:
        await asyncio.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    out.close()
    return proc.returncode, time.monotonic() - start


async def _create_deployment(emu: Any) -> None:
    headers = {"Authorization": f"Bearer {emu.admin_token}"}
    async with httpx.AsyncClient(base_url=emu.url, headers=headers, verify=False) as api:
        created = await api.post("/apis/apps/v1/namespaces/default/deployments", json=DEPLOYMENT)
        assert created.status_code == 201, created.text


def _reconciles(spans: list[Received], controller: str) -> list[Received]:
    return [s for s in spans if s.span.name == f"reconcile {controller}"]


@pytest.mark.asyncio
async def test_manager_exports_startup_and_reconcile_traces(cluster: Any, tmp_path: Path) -> None:
    traceparents = record_traceparents(cluster)
    async with otlp_grpc_receiver() as receiver:
        proc, _, out = _start(cluster, tmp_path, receiver.endpoint, "--trace-sample-ratio", "1")
        try:
            await receiver.wait_for(lambda s: any(x.span.name == "pycm.startup" for x in s), 30)
            await _create_deployment(cluster)

            def rollout(spans: list[Received]) -> bool:
                deploys = _reconciles(spans, "deployment")
                ids = {s.span_id for s in spans}
                with_calls = [d for d in deploys if any(s.parent_id == d.span_id for s in spans)]
                return bool(with_calls) and any(d.span.links for d in deploys) and bool(ids)

            spans = await receiver.wait_for(rollout, 30)
            # Let the ReplicaSet's pods be created and their spans flushed (1 s batches).
            await asyncio.sleep(1.5)
        finally:
            code, _ = await _sigterm(proc, out)
        spans = receiver.spans()
    assert code == 0, (tmp_path / "manager.log").read_text()

    (startup,) = [s for s in spans if s.span.name == "pycm.startup"]
    children = {s.span.name for s in spans if s.trace_id == startup.trace_id}
    for expected in (
        "flags.parsed",
        "server.handler_chain_built",
        "server.serving_started",
        "lease.acquire",
        "controller.init deployment",
        "controller.init replicaset",
        "informers.started",
        "informer.synced",
    ):
        assert expected in children, sorted(children)
    assert any(name.startswith("informer.list") for name in children), sorted(children)
    assert {s.parent_id for s in spans if s.trace_id == startup.trace_id and s is not startup}
    assert startup.resource["service.name"] == "pycm"
    assert startup.resource["service.instance.id"] == "otel-e2e"
    assert startup.resource["k8s.pod.name"] == "pycm-e2e-0"
    assert startup.resource["k8s.namespace.name"] == "kube-system"

    deploys = _reconciles(spans, "deployment")
    assert deploys
    web = [d for d in deploys if d.attributes.get("k8s.deployment.name") == "web"]
    assert web, [d.attributes for d in deploys]
    root = next(d for d in web if any(s.parent_id == d.span_id for s in spans))
    assert root.attributes["k8s.namespace.name"] == "default"
    assert root.attributes["pycm.controller"] == "deployment"
    assert "pycm.queue.wait_ms" in root.attributes and "pycm.result" in root.attributes
    assert root.attributes.get("k8s.deployment.uid")
    calls = [s for s in spans if s.parent_id == root.span_id]
    assert calls and all(c.span.kind == c.span.SPAN_KIND_CLIENT for c in calls)
    assert all(c.trace_id == root.trace_id for c in calls)
    call = calls[0].attributes
    assert call["http.request.method"] in ("GET", "POST", "PUT", "PATCH", "DELETE")
    assert call["server.address"] == "127.0.0.1"
    assert call["url.path"].startswith("/apis/apps/v1/namespaces/") or call["url.path"].startswith(
        "/api/v1/namespaces/"
    )
    assert "http.response.status_code" in call and "k8s.resource" in call
    # The apiserver saw each call's CLIENT span as its parent, sampled (ratio 1 keeps all).
    for c in calls:
        assert f"00-{c.trace_id}-{c.span_id}-01" in traceparents, (c.span_id, traceparents[:5])
    linked = [d for d in deploys if d.span.links]
    assert linked
    link = linked[0].span.links[0]
    assert len(link.trace_id) == 16 and len(link.span_id) == 8
    assert any(kv.key == "pycm.trigger.event" for kv in link.attributes)
    assert _reconciles(spans, "replicaset")


@pytest.mark.asyncio
async def test_manager_keeps_reconciling_with_a_stalled_receiver(
    cluster: Any, tmp_path: Path
) -> None:
    async with otlp_grpc_receiver(stall=True) as receiver:
        proc, trace, out = _start(cluster, tmp_path, receiver.endpoint, "--trace-sample-ratio", "1")
        try:
            deadline = time.monotonic() + 30

            def ended() -> int:
                if not trace.exists():
                    return 0
                return sum(1 for e in read_events(trace) if e.KIND == "reconcile.end")

            while time.monotonic() < deadline:
                if trace.exists() and any(
                    e.KIND == "informers.started" for e in read_events(trace)
                ):
                    break
                await asyncio.sleep(0.2)
            before = ended()
            await _create_deployment(cluster)
            while time.monotonic() < deadline and ended() < before + 3:
                await asyncio.sleep(0.2)
            assert ended() >= before + 3, "reconciles stopped while the collector stalled"
        finally:
            code, took = await _sigterm(proc, out)
        assert receiver.spans() == []
    assert code == 0, (tmp_path / "manager.log").read_text()
    # SIGTERM with an unanswering collector: the sink's flush is bounded (3 s).
    assert took < 15.0
