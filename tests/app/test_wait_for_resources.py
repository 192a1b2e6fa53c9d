"""A controller whose kind is not served: the manager stops at start-up with one line naming
the controller and the kind (exit 1) — or, with --wait-for-resources (or the descriptor's
wait_for_resources), waits with a failing readyz check named after the kind and starts the
controller once discovery serves it (its informers, its reconciles)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from pycm.app.options import ControllerManagerOptions
from pycm.app.registry import ControllerDescriptor, Registry
from pycm.app.run import Manager
from pycm.controller import ControllerBuilder, ControllerContext, Request, Result, Runnable
from pycm.kube import Client, load_config
from pycm.kube.resources import Resource
from pycm.sim.server import run_emulator
from pycm.trace.bus import Bus

CHECK = "waiting-for:Website.v1.example.com"
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
WEBSITE_CRD = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "examples/website-operator/deploy/crd.yaml").read_text()
)


def _manager(kubeconfig: Any, descriptor: ControllerDescriptor, *flags: str) -> Manager:
    registry = Registry()
    registry.register(descriptor)
    options = ControllerManagerOptions(registry)
    errors = options.parse(
        [
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            f"--controllers={descriptor.name}",
            *flags,
        ]
    )
    assert errors == [] and options.validate() == []
    return Manager(options.config().complete(), bus=Bus(), registry=registry)


def _website_controller(reconciled: list[str], inits: list[str] | None = None) -> Any:
    async def init(ctx: ControllerContext) -> Runnable:
        try:
            websites = await ctx.resource_for("example.com", "v1", "Website")  # first
        except Exception:
            if inits is not None:
                inits.append("not served")
            raise
        if inits is not None:
            inits.append("served")
        builder = ControllerBuilder(ctx, "website").for_(websites)

        async def reconcile(request: Request) -> Result:
            reconciled.append(request.key)
            return Result()

        return builder.complete(reconcile)

    return init


async def _readyz(manager: Manager) -> dict[str, str | None]:
    return {
        check.name: await manager.health.run(check, "readyz")
        for check in manager.health.checks("readyz")
    }


@pytest.mark.asyncio
async def test_kind_not_served_stops_start_up_with_one_line_exit_1(
    caplog: pytest.LogCaptureFixture,
) -> None:
    descriptor = ControllerDescriptor("website", _website_controller([]))
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        manager = _manager(emu.kubeconfig_path, descriptor)
        with caplog.at_level("ERROR", logger="pycm.app"):
            assert await asyncio.wait_for(manager.run(), 30) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        "controller 'website' (registered in code) failed to start: "
        'no matches for kind "Website" in version "example.com/v1"'
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("flags", "descriptor_waits"),
    [
        pytest.param(["--wait-for-resources"], False, id="flag"),
        pytest.param([], True, id="descriptor"),
    ],
)
async def test_wait_for_resources_readyz_names_kind_then_runs_once_served(
    flags: list[str], descriptor_waits: bool
) -> None:
    inits: list[str] = []
    reconciled: list[str] = []
    descriptor = ControllerDescriptor(
        "website", _website_controller(reconciled, inits), wait_for_resources=descriptor_waits
    )
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        manager = _manager(emu.kubeconfig_path, descriptor, *flags)
        run = asyncio.ensure_future(manager.run())
        try:
            for _ in range(300):
                if CHECK in await _readyz(manager):
                    break
                await asyncio.sleep(0.05)
            assert (await _readyz(manager))[CHECK] == "Website in example.com/v1 is not served"
            # Still failing after discovery was read again (every 2 s) and still had none.
            for _ in range(200):
                if inits.count("not served") >= 2:
                    break
                await asyncio.sleep(0.05)
            assert inits.count("not served") >= 2
            assert (await _readyz(manager))[CHECK] == "Website in example.com/v1 is not served"
            # The CRD is installed: the kind becomes served.
            config = await load_config(kubeconfig=str(emu.kubeconfig_path), qps=-1)
            async with await Client.connect(config, bus=Bus()) as client:
                await client.create(CRDS, WEBSITE_CRD)
            for _ in range(300):
                if (await _readyz(manager))[CHECK] is None:
                    break
                await asyncio.sleep(0.05)
            assert (await _readyz(manager))[CHECK] is None
            assert inits[-1] == "served" and set(inits[:-1]) == {"not served"}
            ctx = manager.context
            assert ctx is not None and "website" in ctx.queues
            tasks = {t.get_name() for t in asyncio.all_tasks() if not t.done()}
            assert "informer:websites.example.com" in tasks  # started after the late init
            # And it reconciles: an object of the kind, created now, reaches the controller.
            websites = await ctx.resource_for("example.com", "v1", "Website")
            await ctx.client_for("test").create(
                websites, {"metadata": {"name": "shop", "namespace": "default"}}
            )
            for _ in range(300):
                if reconciled:
                    break
                await asyncio.sleep(0.05)
            assert reconciled == ["default/shop"]
            assert not run.done()
        finally:
            manager.request_stop()
            assert await asyncio.wait_for(run, 30) == 0


@pytest.mark.asyncio
async def test_builder_resource_not_served_stops_the_manager_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A controller given a Resource constant of a kind nobody serves: its informer would
    retry list-and-watch for ever (NotFound) and /readyz fail with no word of why."""
    websites = Resource("example.com", "v1", "websites", "Website", True)

    async def init(ctx: ControllerContext) -> Runnable:
        async def reconcile(request: Request) -> Result:
            return Result()

        return ControllerBuilder(ctx, "website").for_(websites).complete(reconcile)

    descriptor = ControllerDescriptor("website", init)
    async with run_emulator(tls=False, kubelet=False, nodes=0) as emu:
        manager = _manager(emu.kubeconfig_path, descriptor)
        with caplog.at_level("ERROR", logger="pycm.app"):
            assert await asyncio.wait_for(manager.run(), 30) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, errors
    assert errors[0].startswith("controller 'website' (registered in code)")
    assert errors[0].endswith("no matches for example.com/v1, Resource=websites")
