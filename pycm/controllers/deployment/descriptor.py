"""The Deployment controller's descriptor and init: built as a plugin is, through a
:class:`~pycm.controller.ControllerBuilder` (:func:`~pycm.controllers.builtin.built_in_builder`);
``pycm.app.controllers`` lists ``DESCRIPTOR`` (docs/controllers.md, "Adding a built-in
controller")."""

from __future__ import annotations

from typing import Final

from pycm.controller import ControllerContext, ControllerDescriptor, Runnable
from pycm.controller.worker import DEFAULT_MAX_RETRIES
from pycm.controllers.builtin import built_in_builder, feature_enabled
from pycm.controllers.deployment.client import DeploymentClientAdapter
from pycm.controllers.deployment.controller import DeploymentController

__all__ = ["DESCRIPTOR", "FEATURE_GATES", "init"]

NAME: Final = "deployment"
# The client's user agent and the events' source component (KCM's controller name).
COMPONENT: Final = "deployment-controller"
# The feature gates it reads (KCM's names; pycm.app.features holds their defaults and stages).
STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT: Final = "StaleControllerConsistencyDeployment"
DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS: Final = "DeploymentReplicaSetTerminatingReplicas"
DEPLOYMENT_POD_REPLACEMENT_POLICY: Final = "DeploymentPodReplacementPolicy"
FEATURE_GATES: Final = (
    STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT,
    DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS,
    DEPLOYMENT_POD_REPLACEMENT_POLICY,
)


async def init(ctx: ControllerContext) -> Runnable:
    workers = ctx.config.deployment_controller.concurrent_deployment_syncs
    builder = built_in_builder(ctx, NAME, workers=workers)
    DeploymentController(
        builder,
        client=DeploymentClientAdapter(ctx.client_for(COMPONENT)),
        recorder=ctx.recorder_for(COMPONENT),
        staleness_guard=feature_enabled(ctx, STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT),
        terminating_replicas=feature_enabled(ctx, DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS),
        pod_replacement_policy=feature_enabled(ctx, DEPLOYMENT_POD_REPLACEMENT_POLICY),
    )
    return builder.run


DESCRIPTOR: Final = ControllerDescriptor(
    NAME,
    init,
    aliases=(COMPONENT,),
    requires=("deployments.apps", "replicasets.apps", "pods"),
    max_retries=DEFAULT_MAX_RETRIES,
)
