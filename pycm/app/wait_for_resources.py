"""--wait-for-resources (or a descriptor's ``wait_for_resources``): a controller whose kind is
not served yet (a CRD not installed) waits for it instead of stopping the manager. Its task
polls discovery by running the init again, then starts the informers it asked for and runs
it; meanwhile a readyz check named after the kind fails."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from pycm.app.context import ControllerGate
from pycm.app.runnables import Group, RunnableGroups
from pycm.controller import ControllerContext, ControllerDescriptor, Runnable
from pycm.kube.restmapper import NoKindMatchError
from pycm.server import HealthRegistry
from pycm.util.clock import Clock

__all__ = ["RESOURCE_POLL_INTERVAL", "wait_for_resource"]

log = logging.getLogger("pycm.app")

# How often a controller waiting for its kind (--wait-for-resources) reads discovery again: a
# CRD is served within a second or two of its creation.
RESOURCE_POLL_INTERVAL = 2.0


def _check_name(exc: NoKindMatchError) -> str:
    return f"waiting-for:{exc.kind or exc.plural}.{exc.version}.{exc.group}".rstrip(".")


def wait_for_resource(
    ctx: ControllerContext,
    descriptor: ControllerDescriptor,
    missing: NoKindMatchError,
    *,
    init: Callable[[], Awaitable[Runnable | None]],
    health: HealthRegistry,
    clock: Clock,
    groups: RunnableGroups,
    gate: ControllerGate | None,
    before_start: Callable[[], None] | None = None,
) -> None:
    """The controller's task joins the CONTROLLERS group: every RESOURCE_POLL_INTERVAL it
    runs ``init`` again, until no NoKindMatchError comes out. Meanwhile a readyz check named
    after the kind (``waiting-for:Website.v1.example.com``) fails, and one warning says which
    controller waits for what. ``gate``: the elector's reconcile gate, put on the queues the
    late init registered; ``before_start()``: run once the late init has built the controller,
    before its informers start (a sharded member gates its keys and shards its informers)."""
    log.warning(
        "controller %r waits for %s to be served (--wait-for-resources); /readyz fails until it is",
        descriptor.name,
        missing.what,
    )
    waiting: dict[str, NoKindMatchError] = {"kind": missing}

    def add_check(exc: NoKindMatchError) -> None:
        name = _check_name(exc)

        async def served() -> str | None:
            now = waiting.get("kind")  # what the last try found missing (None: started)
            return None if now is None or _check_name(now) != name else f"{exc.what} is not served"

        with contextlib.suppress(ValueError):  # (two controllers may wait for one kind)
            health.add(name, served, livez=False)

    add_check(missing)

    async def wait_then_run() -> None:
        while True:
            await clock.sleep(RESOURCE_POLL_INTERVAL)
            try:
                runnable = await init()
            except NoKindMatchError as exc:
                if _check_name(exc) != _check_name(waiting["kind"]):
                    add_check(exc)  # it now waits for another of its kinds
                waiting["kind"] = exc
                continue
            break
        waiting.clear()
        log.info("controller %r: its resources are served; starting it", descriptor.name)
        if before_start is not None:
            before_start()
        ctx.informer_factory.start()
        ctx.metadata_informer_factory.start()
        if gate is not None:
            for controller in ctx.queues.values():
                controller.gate = gate
        if runnable is not None:
            await runnable()

    groups.add(Group.CONTROLLERS, f"controller {descriptor.name}", wait_then_run)
