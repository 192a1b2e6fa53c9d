"""The OTel link resolves on a real OTLP receiver: ``pycm run`` on the emulator, exporting over
OTLP/gRPC with ``--trace-sample-ratio 0`` (only failed and slow reconciles are kept, and the
causes they link to). A Deployment is created; its reconcile creates the ReplicaSet (fast and
ok: sampled out, held for the cause window); the ReplicaSet's reconcile, enqueued by that
write's watch event, fails (the emulator fails its pod create) and is kept. Its link names the
deployment reconcile, and the receiver got that span too — which it would not without the
cause window: nothing else keeps a fast, ok reconcile at ratio 0."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.events import Outcome
from pycm.trace.kinds import ReconcileFinished, ReconcileResult
from pycm.trace.recorder import read_events
from tests.otel.receivers import Received, attrs, otlp_grpc_receiver
from tests.otel.test_manager_export_e2e import _create_deployment, _sigterm, _start

pytestmark = pytest.mark.e2e

SLOW = "30s"  # nothing here is slow: only the failure keeps a reconcile
_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


def _failed_replicaset_reconciles(spans: list[Received]) -> list[Received]:
    return [
        s
        for s in spans
        if s.span.name == "reconcile replicaset"
        and s.span.status.code == _STATUS_ERROR
        and s.span.links
    ]


@pytest.mark.asyncio
async def test_kept_reconcile_link_resolves_to_its_sampled_out_cause(
    cluster: Any, tmp_path: Path
) -> None:
    # The replicaset controller's first pod create fails: its reconcile fails and is kept.
    cluster.faults.add(kind="error", status=500, verb="create", resource="pods", count=1)
    async with otlp_grpc_receiver() as receiver:
        proc, trace, out = _start(
            cluster,
            tmp_path,
            receiver.endpoint,
            "--trace-sample-ratio",
            "0",
            "--trace-slow-threshold",
            SLOW,
        )
        try:
            await receiver.wait_for(lambda s: any(x.span.name == "pycm.startup" for x in s), 30)
            await _create_deployment(cluster)
            await receiver.wait_for(lambda s: bool(_failed_replicaset_reconciles(s)), 20)
        finally:
            code, _ = await _sigterm(proc, out)  # flushes what was kept
        spans = receiver.spans()
    assert code == 0, (tmp_path / "manager.log").read_text()

    by_ids = {(s.trace_id, s.span_id): s for s in spans}
    # The first failed one: enqueued by a watch event of the ReplicaSet (a retry would link to
    # the failed reconcile before it).
    effect, *_ = _failed_replicaset_reconciles(spans)
    (link,) = effect.span.links
    assert attrs(link.attributes)["pycm.trigger.kind"] == "ReplicaSet", attrs(link.attributes)
    target = (link.trace_id.hex(), link.span_id.hex())
    assert target in by_ids, "the kept reconcile's link does not resolve: its cause was dropped"
    cause = by_ids[target]
    assert cause.span.name == "reconcile deployment"
    assert cause.attributes["k8s.deployment.name"] == "web"
    assert cause.parent_id == "" and cause.span.status.code != _STATUS_ERROR
    # Its API calls came with it (the ReplicaSet's create among them).
    calls = [s.span.name for s in spans if s.parent_id == cause.span_id]
    assert "POST replicasets" in calls, calls

    # Nothing but the link kept it: it ended ok, fast, and ratio 0 keeps no ordinary reconcile.
    (end,) = [
        e
        for e in read_events(trace)
        if isinstance(e, ReconcileFinished) and (e.trace_id, e.span_id) == target
    ]
    assert end.outcome is Outcome.OK and end.result is not ReconcileResult.ERROR
    assert end.dur_ns < 30e9
