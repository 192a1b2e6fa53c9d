"""The Deployment controller's descriptor: how the manager knows it, and its init.

The init builds it as a plugin is built: a :class:`~pycm.controller.ControllerBuilder` from the
context (its workers from ``--concurrent-deployment-syncs``, the queue KCM's FIFO unless
``--controller-priority-queue``, KCM's 15 retries from the descriptor), the controller declaring
its watches on it, and the builder's runnable returned. ``pycm.app.controllers`` lists
``DESCRIPTOR`` among the built-ins (the one line a built-in adds there).
"""

from __future__ import annotations

from typing import Final

from pycm.controller import ControllerBuilder, ControllerContext, ControllerDescriptor, Runnable
from pycm.controller.worker import DEFAULT_MAX_RETRIES
from pycm.controllers.deployment.client import DeploymentClientAdapter
from pycm.controllers.deployment.controller import DeploymentController

__all__ = ["DESCRIPTOR", "FEATURE_GATES", "init"]

NAME: Final = "deployment"
# The client's user agent and the events' source component (KCM's controller name).
COMPONENT: Final = "deployment-controller"
# The feature gates it reads (KCM's names; pycm.app.features holds their defaults and stages).
STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT: Final = "StaleControllerConsistencyDeployment"
DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS: Final = "DeploymentReplicaSetTerminatingReplicas"
FEATURE_GATES: Final = (
    STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT,
    DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS,
)


async def init(ctx: ControllerContext) -> Runnable:
    # ctx.config: the manager's CompletedConfig (typed Any below pycm.app).
    config = ctx.config
    gates = config.feature_gates
    builder = ControllerBuilder(
        ctx,
        NAME,
        workers=config.deployment_controller.concurrent_deployment_syncs,
        priority_queue=config.controllers.priority_queue,
        check_served=False,
    )
    DeploymentController(
        builder,
        client=DeploymentClientAdapter(ctx.client_for(COMPONENT)),
        recorder=ctx.recorder_for(COMPONENT),
        staleness_guard=gates.enabled(STALE_CONTROLLER_CONSISTENCY_DEPLOYMENT),
        terminating_replicas=gates.enabled(DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS),
    )
    return builder.run


DESCRIPTOR: Final = ControllerDescriptor(
    NAME,
    init,
    aliases=(COMPONENT,),
    requires=("deployments.apps", "replicasets.apps", "pods"),
    max_retries=DEFAULT_MAX_RETRIES,
)
