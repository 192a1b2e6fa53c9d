"""The Deployment's probes against a real `pycm run`: a leader whose informers cannot sync (a
controller's informer whose list keeps failing — RBAC without list, say) is not ready, but it
is alive. Restarting it would not help and would make leadership flap,
so the liveness probe's path must not run the informers-synced check that readiness runs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pycm.sim.server import run_emulator
from tests.deploy.conftest import DEPLOY
from tests.support.manager import poll, start_manager, stop_manager

DEPLOYMENT = DEPLOY / "kubernetes" / "base" / "deployment.yaml"

_PLUGIN = """
import asyncio

from pycm.controller import ControllerDescriptor
from pycm.kube.resources import Resource

# An informer whose list fails for ever (as with RBAC without list). Through the builder a
# resource nobody serves stops the manager at start instead (tests/app/test_wait_for_resources.py),
# so the informer is asked of the factory directly.
WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)  # no such API


async def init(ctx):
    ctx.informer_factory.informer_for(WIDGETS)

    async def run():
        await asyncio.Event().wait()

    return run


descriptor = ControllerDescriptor("widgets", init)
"""


def _probe_paths() -> dict[str, str]:
    (container,) = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]["containers"]
    return {
        probe: container[probe]["httpGet"]["path"] for probe in ("livenessProbe", "readinessProbe")
    }


def _plugin(site: Path) -> None:
    info = site / "pycm_widgets-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pycm-widgets\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pycm.controllers]\nwidgets = pycm_widgets:descriptor\n"
    )
    (site / "pycm_widgets.py").write_text(textwrap.dedent(_PLUGIN))


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_deployment_liveness_probe_passes_while_informers_cannot_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _probe_paths()
    _plugin(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    async with run_emulator(tls=False, kubelet=False) as emu:
        manager = start_manager(emu.kubeconfig_path, tmp_path, "--controllers=*,widgets")
        try:
            async with httpx.AsyncClient(verify=False, timeout=5) as http:

                async def get(path: str) -> httpx.Response | None:
                    assert manager.proc.poll() is None, manager.log.read_text()
                    try:
                        return await http.get(f"{manager.url}{path}?verbose")
                    except httpx.TransportError:
                        return None

                async def unready() -> Any:
                    r = await get(paths["readinessProbe"])
                    return r is not None and "[-]informers-synced failed" in r.text

                await poll(unready, timeout=30)
                live = await get(paths["livenessProbe"])
                assert live is not None
                assert (live.status_code, "informers-synced" in live.text) == (200, False), (
                    paths["livenessProbe"],
                    live.text,
                )
        finally:
            code = await stop_manager(manager)
        assert code == 0, manager.log.read_text()[-3000:]
