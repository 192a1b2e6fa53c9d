"""What the queues hold, end to end: a real ``pycm run`` against the emulator.

- A ReplicaSet create failing under an injected fault (500) makes the Deployment's key back off:
  ``GET /debug/pycm/queues`` shows it with its retries, last error and next retry, and the state
  snapshot's queue contents say the same.
- A plugin controller whose sync hangs while its ConfigMap exists, with
  ``--stuck-worker-threshold=1s``: ``queue.stuck`` names the key and the worker, the queues
  endpoint shows the key processing by that worker, and deleting the ConfigMap lets it go
  (``queue.unstuck``).
"""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from pycm.sim.server import run_emulator
from pycm.trace.kinds import WorkerStuck, WorkerUnstuck
from pycm.trace.recorder import read_events
from tests.support.manager import poll, start_manager, stop_manager
from tests.support.manifests import workload

pytestmark = pytest.mark.e2e

QUEUES = "/debug/pycm/queues"


@pytest_asyncio.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_emulator(tls=False, kubelet=False, pod_ready_delay=0.0) as emu:
        yield emu


@pytest.mark.asyncio
async def test_failing_sync_backs_off_in_debug_queues_with_retries_and_next_retry(
    cluster: Any, tmp_path: Path
) -> None:
    cluster.faults.add(
        kind="error", status=500, verb="create", resource="replicasets", count=10_000
    )
    manager = start_manager(cluster.kubeconfig_path, tmp_path, "--controllers=deployment")
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    try:
        async with (
            httpx.AsyncClient(base_url=cluster.url, headers=admin) as api,
            httpx.AsyncClient(verify=False, timeout=5, headers=admin) as http,
        ):
            # No credentials: refused like the other debug routes.
            anonymous = httpx.AsyncClient(verify=False, timeout=5)
            async with anonymous:

                async def serving() -> int:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    try:
                        return (await anonymous.get(f"{manager.url}{QUEUES}")).status_code
                    except httpx.TransportError:
                        return 0

                assert await poll(serving, timeout=30) == 403
            r = await api.post(
                "/apis/apps/v1/namespaces/default/deployments", json=workload("Deployment", "web")
            )
            assert r.status_code == 201, r.text

            async def backing_off() -> dict[str, Any] | None:
                r = await http.get(f"{manager.url}{QUEUES}", params={"controller": "deployment"})
                assert r.status_code == 200, r.text
                entries = r.json()["controllers"]["deployment"]["backing_off"]
                found = [e for e in entries if e["key"] == "default/web" and e["last_error"]]
                return found[0] if found else None

            entry = await poll(backing_off, timeout=30, interval=0.01)
            assert entry["retries"] >= 1
            assert entry["next_retry_in_s"] <= 1000.0
            assert entry["next_retry_at"].endswith("Z")
            assert "500" in entry["last_error"] or "nternal" in entry["last_error"], entry

            unknown = await http.get(f"{manager.url}{QUEUES}", params={"controller": "nope"})
            assert unknown.status_code == 404
            assert "deployment" in unknown.json()["error"]
            bad = await http.get(f"{manager.url}{QUEUES}", params={"limit": "many"})
            assert bad.status_code == 400

            # The state folded from events says the same (what the TUI and dashboard show).
            async def folded() -> bool:
                state = (await http.get(f"{manager.url}/debug/pycm/state")).json()
                queue = state["queues"]["e2e-manager"]["deployment"]
                return any(
                    b["key"] == "default/web" and b["retries"] >= 1
                    for b in queue["contents"]["backing_off"]
                )

            await poll(folded, timeout=30, interval=0.01)
    finally:
        code = await stop_manager(manager)
    assert code == 0, manager.log.read_text()


_HANG_PLUGIN = """
from pycm.controller import ControllerBuilder, ControllerDescriptor, Result
from pycm.kube.resources import CONFIGMAPS


async def init(ctx):
    builder = ControllerBuilder(ctx, "hang", workers=2).for_(CONFIGMAPS)
    configmaps = builder.lister(CONFIGMAPS)

    async def reconcile(request):
        # ConfigMap "hang" holds its worker for as long as it exists.
        while request.name == "hang" and configmaps.get(request.namespace, "hang") is not None:
            await ctx.clock.sleep(0.05)
        return Result(action="noop")

    return builder.complete(reconcile)


descriptor = ControllerDescriptor("hang", init, enabled_by_default=False, requires=("configmaps",))
"""


def _install_hang_plugin(site: Path) -> None:
    info = site / "pycm_hang_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pycm-hang-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pycm.controllers]\nhang = pycm_hang_plugin:descriptor\n"
    )
    (site / "pycm_hang_plugin.py").write_text(textwrap.dedent(_HANG_PLUGIN))


@pytest.mark.asyncio
async def test_hung_sync_is_named_by_the_stuck_worker_mark_then_let_go(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _install_hang_plugin(site)
    monkeypatch.setenv("PYTHONPATH", str(site))
    manager = start_manager(
        cluster.kubeconfig_path, tmp_path, "--controllers=hang", "--stuck-worker-threshold=1s"
    )
    admin = {"Authorization": f"Bearer {cluster.admin_token}"}
    path = "/api/v1/namespaces/default/configmaps"
    try:
        async with (
            httpx.AsyncClient(base_url=cluster.url, headers=admin) as api,
            httpx.AsyncClient(verify=False, timeout=5, headers=admin) as http,
        ):
            for name in ("hang", "fine"):
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
                assert (await api.post(path, json=body)).status_code == 201

            async def held() -> dict[str, Any] | None:
                assert manager.proc.poll() is None, manager.log.read_text()
                try:
                    r = await http.get(f"{manager.url}{QUEUES}", params={"controller": "hang"})
                except httpx.TransportError:
                    return None
                if r.status_code != 200:
                    return None
                processing = r.json()["controllers"]["hang"]["processing"]
                found = [p for p in processing if p["key"] == "default/hang" and p["for_s"] > 1.5]
                return found[0] if found else None

            entry = await poll(held, timeout=30)
            assert entry["worker"] in (0, 1)
            assert entry["task"] == f"hang: worker {entry['worker']}"

            def marks() -> list[Any]:
                return [
                    e
                    for e in read_events(manager.trace)
                    if isinstance(e, WorkerStuck | WorkerUnstuck)
                ]

            async def marked() -> list[Any]:
                return marks()

            (stuck,) = await poll(marked, timeout=15)
            assert isinstance(stuck, WorkerStuck)
            assert (stuck.controller, stuck.key, stuck.worker) == (
                "hang",
                "default/hang",
                entry["worker"],
            )
            assert stuck.threshold_s == 1.0 and 1.0 <= stuck.processing_s < 3.0
            state = (await http.get(f"{manager.url}/debug/pycm/state")).json()
            contents = state["queues"]["e2e-manager"]["hang"]["contents"]
            assert contents["stuck"] == {"default/hang": entry["worker"]}

            assert (await api.delete(f"{path}/hang")).status_code == 200

            async def let_go() -> bool:
                return [type(e) for e in marks()] == [WorkerStuck, WorkerUnstuck]

            await poll(let_go, timeout=15)
    finally:
        code = await stop_manager(manager)
    assert code == 0, manager.log.read_text()
