"""The manager in-process against the emulator: a controller's background task (add_runnable)
joins the controllers group — started after the informers, stopped before them; a plugin's
metadata-only informer is in pycm_informer_synced like a full one; with leader election a
controller's writes are fenced, its Events are not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pycm.app.options import ControllerManagerOptions
from pycm.app.registry import ControllerDescriptor, Registry
from pycm.app.run import Manager
from pycm.controller import ControllerContext, Runnable
from pycm.kube import Client, FencedError, load_config
from pycm.kube.resources import CONFIGMAPS, EVENTS, PODS
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


@pytest.mark.parametrize("leader_elect", [True, False], ids=["leader-elect", "no-election"])
@pytest.mark.asyncio
async def test_manager_controller_writes_fenced_only_with_election_events_never(
    leader_elect: bool,
) -> None:
    """With --leader-elect, a controller's client refuses writes while the gate is closed; its
    event recorder's writes still go out. Without election nothing is fenced."""
    outcome: dict[str, Any] = {}
    done = asyncio.Event()
    manager: Manager | None = None

    async def init(ctx: ControllerContext) -> Runnable | None:
        client = ctx.client_for("probe")
        recorder = ctx.recorder_for("probe")

        async def probe() -> None:
            assert manager is not None
            cm = {"metadata": {"name": "probe", "namespace": "default"}, "data": {}}
            created = await client.create(CONFIGMAPS, cm)
            outcome["fence"] = client.fence
            if manager.elector is not None:
                manager.elector.gate.close()  # as after a pause past the renew deadline
            try:
                await client.create(CONFIGMAPS, {**cm, "metadata": {**cm["metadata"], "name": "2"}})
                outcome["second"] = "sent"
            except FencedError as exc:
                outcome["second"] = str(exc)
            recorder.event(created, "Normal", "Probe", "recorded while fenced")
            done.set()
            await asyncio.Event().wait()

        ctx.add_runnable("probe", probe)
        return None

    async with run_emulator(tls=False, kubelet=False) as emu:
        registry = Registry()
        registry.register(ControllerDescriptor("probe", init))
        options = ControllerManagerOptions(registry)
        argv = [f"--kubeconfig={emu.kubeconfig_path}", "--secure-port=0", "--controllers=probe"]
        argv.append(f"--leader-elect={str(leader_elect).lower()}")
        assert options.parse(argv) == [] and options.validate() == []
        manager = Manager(options.config().complete(), bus=Bus(), registry=registry)
        run = asyncio.ensure_future(manager.run())
        await asyncio.wait_for(done.wait(), 30)
        async with await Client.connect(await load_config(str(emu.kubeconfig_path))) as api:
            async with asyncio.timeout(10):  # the recorder sends in the background
                while not [
                    e
                    for e in (await api.list(EVENTS, namespace="default"))["items"]
                    if e.get("reason") == "Probe"
                ]:
                    await asyncio.sleep(0.05)
        manager.request_stop()
        await asyncio.wait_for(run, 30)
    if leader_elect:
        assert manager.elector is not None and outcome["fence"] is manager.elector.gate
        assert str(outcome["second"]).startswith("create configmaps refused: not leading")
    else:
        assert (outcome["fence"], outcome["second"]) == (None, "sent")
