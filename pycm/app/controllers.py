"""The controllers pycm can start, registered in the default registry with their init functions.

An init function receives the :class:`~pycm.app.context.ControllerContext`, builds the
controller (which registers the informers it needs) and returns the coroutine function that
runs it; StartControllers runs those only after every controller is built and the informer
factories are started, as KCM does.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from pycm.app.clients import DeploymentClientAdapter, ReplicaSetClientAdapter
from pycm.app.context import ControllerContext
from pycm.app.registry import ControllerDescriptor, Registry, default_registry
from pycm.controllers.deployment.controller import DeploymentController
from pycm.controllers.replicaset.controller import ReplicaSetController
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS

__all__ = ["Runnable", "register_all"]

Runnable = Callable[[], Coroutine[Any, Any, None]]


async def start_replicaset_controller(ctx: ControllerContext) -> Runnable:
    name = "replicaset-controller"
    factory = ctx.informer_factory
    controller = ReplicaSetController(
        rs_informer=factory.informer_for(REPLICASETS),
        pod_informer=factory.informer_for(PODS),
        client=ReplicaSetClientAdapter(ctx.client_for(name)),
        recorder=ctx.recorder_for(name),
        name="replicaset",
        clock=ctx.clock,
        bus=ctx.bus,
        metrics=ctx.metrics,
    )
    workers = ctx.config.replicaset_controller.concurrent_rs_syncs
    ctx.queues["replicaset"] = controller.controller
    return lambda: controller.run(workers)


async def start_deployment_controller(ctx: ControllerContext) -> Runnable:
    name = "deployment-controller"
    factory = ctx.informer_factory
    controller = DeploymentController(
        deployment_informer=factory.informer_for(DEPLOYMENTS),
        rs_informer=factory.informer_for(REPLICASETS),
        pod_informer=factory.informer_for(PODS),
        client=DeploymentClientAdapter(ctx.client_for(name)),
        recorder=ctx.recorder_for(name),
        name="deployment",
        clock=ctx.clock,
        bus=ctx.bus,
        metrics=ctx.metrics,
    )
    workers = ctx.config.deployment_controller.concurrent_deployment_syncs
    ctx.queues["deployment"] = controller.controller
    return lambda: controller.run(workers)


def register_all(registry: Registry) -> Registry:
    if "deployment" not in registry:
        registry.register(
            ControllerDescriptor(
                "deployment", start_deployment_controller, aliases=("deployment-controller",)
            )
        )
    if "replicaset" not in registry:
        registry.register(
            ControllerDescriptor(
                "replicaset", start_replicaset_controller, aliases=("replicaset-controller",)
            )
        )
    return registry


register_all(default_registry())
