"""The ReplicaSet controller's descriptor: how the manager knows it, and its init.

The init builds it as a plugin is built: a :class:`~pycm.controller.ControllerBuilder` from the
context (its workers from ``--concurrent-replicaset-syncs``, the queue KCM's FIFO unless
``--controller-priority-queue``, KCM's 15 retries from the descriptor), the controller declaring
its watches on it, and the builder's runnable returned. ``pycm.app.controllers`` lists
``DESCRIPTOR`` among the built-ins (the one line a built-in adds there).
"""

from __future__ import annotations

from typing import Final

from pycm.controller import ControllerBuilder, ControllerContext, ControllerDescriptor, Runnable
from pycm.controller.worker import DEFAULT_MAX_RETRIES
from pycm.controllers.replicaset.client import ReplicaSetClientAdapter
from pycm.controllers.replicaset.controller import ReplicaSetController
from pycm.controllers.replicaset.metrics import replicaset_metrics

__all__ = ["DESCRIPTOR", "FEATURE_GATES", "init"]

NAME: Final = "replicaset"
# The client's user agent and the events' source component (KCM's controller name).
COMPONENT: Final = "replicaset-controller"
# The feature gates it reads (KCM's names; pycm.app.features holds their defaults and stages).
STALE_CONTROLLER_CONSISTENCY_REPLICASET: Final = "StaleControllerConsistencyReplicaSet"
POD_DELETION_COST: Final = "PodDeletionCost"
DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS: Final = "DeploymentReplicaSetTerminatingReplicas"
FEATURE_GATES: Final = (
    STALE_CONTROLLER_CONSISTENCY_REPLICASET,
    POD_DELETION_COST,
    DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS,
)


async def init(ctx: ControllerContext) -> Runnable:
    # ctx.config: the manager's CompletedConfig (typed Any below pycm.app).
    config = ctx.config
    gates = config.feature_gates
    builder = ControllerBuilder(
        ctx,
        NAME,
        workers=config.replicaset_controller.concurrent_rs_syncs,
        priority_queue=config.controllers.priority_queue,
        check_served=False,
    )
    ReplicaSetController(
        builder,
        client=ReplicaSetClientAdapter(ctx.client_for(COMPONENT)),
        recorder=ctx.recorder_for(COMPONENT),
        staleness_guard=gates.enabled(STALE_CONTROLLER_CONSISTENCY_REPLICASET),
        rs_metrics=(
            replicaset_metrics(ctx.metrics.queue.registry) if ctx.metrics is not None else None
        ),
        pod_deletion_cost=gates.enabled(POD_DELETION_COST),
        terminating_replicas=gates.enabled(DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS),
    )
    return builder.run


DESCRIPTOR: Final = ControllerDescriptor(
    NAME,
    init,
    aliases=(COMPONENT,),
    requires=("replicasets.apps", "pods"),
    max_retries=DEFAULT_MAX_RETRIES,
)
