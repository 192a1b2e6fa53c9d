"""The manager in-process against the emulator: a controller's background task (add_runnable)
joins the controllers group — started after the informers, stopped before them; a plugin's
metadata-only informer is in pycm_informer_synced like a full one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pycm.app.options import ControllerManagerOptions
from pycm.app.registry import ControllerDescriptor, Registry
from pycm.app.run import Manager
from pycm.controller import ControllerContext, Runnable
from pycm.kube.resources import CONFIGMAPS, PODS
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus


def _probe_manager(kubeconfig: str, init: Any) -> Manager:
    """A manager (no election, no serving) running one controller, "probe", of ``init``."""
    registry = Registry()
    registry.register(ControllerDescriptor("probe", init))
    options = ControllerManagerOptions(registry)
    errors = options.parse(
        [
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            "--controllers=probe",
        ]
    )
    assert errors == [] and options.validate() == []
    return Manager(options.config().complete(), bus=Bus(), registry=registry)


@pytest.mark.asyncio
async def test_manager_plugin_background_task_runs_with_controllers_stopped_first() -> None:
    journal: list[str] = []
    running = asyncio.Event()

    async def init(ctx: ControllerContext) -> Runnable | None:
        ctx.informer_factory.informer_for(CONFIGMAPS)

        async def background() -> None:
            journal.append(f"started, informers started: {ctx.informers_started.is_set()}")
            running.set()
            try:
                await asyncio.Event().wait()
            finally:
                # Stopped first: the informers are still running when the controllers stop.
                informers = [
                    t.get_name()
                    for t in asyncio.all_tasks()
                    if t.get_name() == "informer:configmaps" and not t.done()
                ]
                journal.append(f"stopped, informers running: {informers}")

        ctx.add_runnable("probe background", background)
        return None

    async with run_emulator(tls=False, kubelet=False) as emu:
        manager = _probe_manager(emu.kubeconfig_path, init)
        run = asyncio.ensure_future(manager.run())
        await asyncio.wait_for(running.wait(), 30)
        manager.request_stop()
        assert await asyncio.wait_for(run, 30) == 0
    assert journal == [
        "started, informers started: True",
        "stopped, informers running: ['informer:configmaps']",
    ]


@pytest.mark.asyncio
async def test_manager_metadata_only_informer_reported_in_informer_synced() -> None:
    synced = asyncio.Event()

    async def init(ctx: ControllerContext) -> Runnable | None:
        full = ctx.informer_factory.informer_for(CONFIGMAPS)
        metadata = ctx.metadata_informer_factory.informer_for(PODS)

        async def run() -> None:
            await ctx.informers_started.wait()
            await full.wait_synced()
            await metadata.wait_synced()
            synced.set()
            await asyncio.Event().wait()

        return run

    async with run_emulator(tls=False, kubelet=False) as emu:
        manager = _probe_manager(emu.kubeconfig_path, init)
        run = asyncio.ensure_future(manager.run())
        try:
            await asyncio.wait_for(synced.wait(), 30)
            sample = manager.metrics_registry.get_sample_value
            assert sample("pycm_informer_synced", {"resource": "configmaps"}) == 1
            assert sample("pycm_informer_synced", {"resource": "pods"}) == 1
        finally:
            manager.request_stop()
            assert await asyncio.wait_for(run, 30) == 0
