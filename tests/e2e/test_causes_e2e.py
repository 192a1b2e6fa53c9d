"""Why did it run, against the real thing: ``pycm sim``, a ``pycm run`` recording its trace, and
kubectl as the outside writer. Every reconcile of a rollout names its true cause: the
ReplicaSet reconcile after ``kubectl create deployment`` links to the Deployment reconcile that
created the ReplicaSet, a pod add to the ReplicaSet reconcile that created the pod, ``kubectl
scale`` is named by its field manager with ``spec.replicas``, and nothing links to start-up."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pycm.trace.codec import decode
from pycm.trace.kinds import ApiRequestCompleted, ReconcileStarted, StartupBegan
from tests.e2e.test_first_session import _kubectl_runner
from tests.sim.conftest import start_sim, stop_sim
from tests.sim.conftest_kubectl import kubectl
from tests.support.manager import start_manager, stop_manager

__all__ = ["kubectl"]

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]


def _events(trace: Path) -> list[Any]:
    return [decode(line) for line in trace.read_bytes().splitlines() if line.strip()]


@pytest.mark.asyncio
async def test_a_rollouts_reconciles_name_their_true_causes(kubectl: Path, tmp_path: Path) -> None:
    sim = start_sim([], tmp_path)
    manager = start_manager(sim.kubeconfig, tmp_path)
    try:
        run = _kubectl_runner(kubectl, sim.kubeconfig, tmp_path)
        # The manager is up and its caches synced before kubectl writes: watch events, not a list.
        ready = await asyncio.to_thread(run, "get", "--raw", "/readyz")
        assert ready.returncode == 0, ready.stderr
        for _ in range(300):
            if manager.trace.exists() and b"controller.started" in manager.trace.read_bytes():
                break
            await asyncio.sleep(0.1)
        created = await asyncio.to_thread(
            run, "create", "deployment", "web", "--image=nginx", "--replicas=2"
        )
        assert created.returncode == 0, created.stderr
        status = await asyncio.to_thread(
            run, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150
        )
        assert status.returncode == 0, f"{status.stderr}\n{manager.log.read_text()}"
        scaled = await asyncio.to_thread(run, "scale", "deployment/web", "--replicas=3")
        assert scaled.returncode == 0, scaled.stderr
        status = await asyncio.to_thread(
            run, "rollout", "status", "deployment/web", "--timeout=120s", timeout=150
        )
        assert status.returncode == 0, f"{status.stderr}\n{manager.log.read_text()}"
        await asyncio.sleep(1.0)  # the last status writes' reconciles
    finally:
        code = await stop_manager(manager)
        assert stop_sim(sim) == 0
    assert code == 0, manager.log.read_text()

    events = _events(manager.trace)
    begins = [e for e in events if isinstance(e, ReconcileStarted)]
    by_span = {b.span_id: b for b in begins}
    startup = [e for e in events if isinstance(e, StartupBegan)]
    assert startup and begins
    startup_spans = {s.span_id for s in startup}
    # Nothing links to start-up, nor to any span that is not a reconcile of this manager.
    assert not [b for b in begins if b.trigger_span_id in startup_spans]
    linked = [b for b in begins if b.trigger_span_id]
    assert linked and all(b.trigger_span_id in by_span for b in linked), [
        (b.key, b.trigger_event, b.trigger_span_id)
        for b in linked
        if b.trigger_span_id not in by_span
    ]

    # The Deployment reconcile created the ReplicaSet; the ReplicaSet's reconcile says so.
    creates = [
        e
        for e in events
        if isinstance(e, ApiRequestCompleted) and e.verb == "create" and e.resource == "replicasets"
    ]
    assert len(creates) == 1 and creates[0].code == 201 and creates[0].resource_version
    rs_key = f"default/{creates[0].name}"
    rs_added = [
        b
        for b in begins
        if b.controller == "replicaset" and b.key == rs_key and b.trigger_event == "add"
    ]
    assert rs_added, [(b.controller, b.key, b.trigger_event) for b in begins]
    cause = rs_added[0]
    assert (cause.trigger_kind, cause.trigger_object, cause.trigger_rv) == (
        "ReplicaSet",
        rs_key,
        creates[0].resource_version,
    )
    assert (cause.trigger_controller, cause.trigger_key, cause.trigger_verb) == (
        "deployment",
        "default/web",
        "create",
    )
    creator = by_span[cause.trigger_span_id]
    assert (creator.controller, creator.key) == ("deployment", "default/web")
    assert cause.trigger_trace_id == creator.trace_id
    assert creates[0].parent_id == creator.span_id  # the write was made in that reconcile

    # Pods the ReplicaSet reconcile created bring it back, naming that reconcile (as the newest
    # cause, or as the first of the events merged while the key waited).
    pod_causes = [
        span
        for b in begins
        if b.controller == "replicaset"
        for kind, span in (
            (b.trigger_kind, b.trigger_span_id),
            (b.first_trigger_kind, b.first_trigger_span_id),
        )
        if kind == "Pod" and span
    ]
    assert pod_causes
    assert all(by_span[span].controller == "replicaset" for span in pod_causes)

    # kubectl's writes are outside the manager: named by their field manager, never linked.
    outside = [b for b in begins if b.controller == "deployment" and b.trigger_writer]
    assert outside and all(not b.trigger_span_id for b in outside)
    assert any(b.trigger_writer.startswith("kubectl") for b in outside)
    scale = [b for b in outside if "spec.replicas" in b.trigger_paths.split(",")]
    assert scale, [(b.trigger_writer, b.trigger_paths) for b in outside]
    assert scale[0].trigger_event == "update" and scale[0].trigger_writer.startswith("kubectl")
    # Merged events are counted, with the first named.
    assert all(b.first_trigger_event for b in begins if b.trigger_merged > 1)
