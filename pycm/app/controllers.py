"""The built-in controllers' descriptors, and the registry ``pycm run`` builds from them.

Built-ins and plugins take one path: a :class:`~pycm.controller.ControllerDescriptor` whose
init receives the :class:`~pycm.controller.ControllerContext`, builds the controller (which
registers the informers it needs) and returns the coroutine function that runs it; the
manager runs those only after every controller is built and the informer factories are
started, as KCM does.

:func:`build_registry` is called explicitly — by the command before it parses flags, and by
the manager when it is given none — so importing this module registers nothing anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

from pycm.app.clients import DeploymentClientAdapter, ReplicaSetClientAdapter
from pycm.app.config import CompletedConfig
from pycm.app.features import (
    DEPLOYMENT_POD_REPLACEMENT_POLICY,
    DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS,
    POD_DELETION_COST,
    STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT,
    STALE_CONTROLLER_CONSISTENCY_REPLICASET,
)
from pycm.app.registry import BUILT_IN, IN_CODE, Registry, default_registry, load_plugins
from pycm.controller import ControllerContext, ControllerDescriptor, Runnable
from pycm.controllers.deployment.controller import DeploymentController
from pycm.controllers.replicaset.controller import ReplicaSetController
from pycm.controllers.replicaset.metrics import replicaset_metrics
from pycm.kube.resources import DEPLOYMENTS, PODS, REPLICASETS

__all__ = ["BUILT_INS", "DEPLOYMENT", "REPLICASET", "Runnable", "build_registry"]


async def start_replicaset_controller(ctx: ControllerContext) -> Runnable:
    name = "replicaset-controller"
    config: CompletedConfig = ctx.config
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
        staleness_guard=config.feature_gates.enabled(STALE_CONTROLLER_CONSISTENCY_REPLICASET),
        rs_metrics=(
            replicaset_metrics(ctx.metrics.queue.registry) if ctx.metrics is not None else None
        ),
        pod_deletion_cost=config.feature_gates.enabled(POD_DELETION_COST),
        terminating_replicas=config.feature_gates.enabled(
            DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS
        ),
    )
    if config.controllers.priority_queue:
        controller.controller.use_priority_queue()
    workers = config.replicaset_controller.concurrent_rs_syncs
    ctx.register_queue("replicaset", controller.controller)
    return lambda: controller.run(workers)


async def start_deployment_controller(ctx: ControllerContext) -> Runnable:
    name = "deployment-controller"
    config: CompletedConfig = ctx.config
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
        staleness_guard=config.feature_gates.enabled(STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT),
        terminating_replicas=config.feature_gates.enabled(
            DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS
        ),
        pod_replacement_policy=config.feature_gates.enabled(DEPLOYMENT_POD_REPLACEMENT_POLICY),
    )
    if config.controllers.priority_queue:
        controller.controller.use_priority_queue()
    workers = config.deployment_controller.concurrent_deployment_syncs
    ctx.register_queue("deployment", controller.controller)
    return lambda: controller.run(workers)


DEPLOYMENT = ControllerDescriptor(
    "deployment",
    start_deployment_controller,
    aliases=("deployment-controller",),
    requires=("deployments.apps", "replicasets.apps", "pods"),
)
REPLICASET = ControllerDescriptor(
    "replicaset",
    start_replicaset_controller,
    aliases=("replicaset-controller",),
    requires=("replicasets.apps", "pods"),
)
BUILT_INS = (DEPLOYMENT, REPLICASET)


def build_registry(
    *,
    plugins: bool = True,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> Registry:
    """A fresh registry: the built-ins, the descriptors registered in code on
    :func:`~pycm.app.registry.default_registry`, then (``plugins``) those of the entry-point
    group ``pycm.controllers`` (or of ``entry_points``, for tests). Raises
    :class:`~pycm.app.registry.RegistryError` / ``PluginError`` on a collision or a broken
    plugin."""
    registry = Registry()
    for descriptor in BUILT_INS:
        registry.register(descriptor, source=BUILT_IN)
    for descriptor in default_registry():
        registry.register(descriptor, source=IN_CODE)
    if plugins:
        load_plugins(registry, entry_points)
    return registry
