"""The ReplicaSet controller's descriptor and init: built as a plugin is, through a
:class:`~pycm.controller.ControllerBuilder` (:func:`~pycm.controllers.builtin.built_in_builder`);
``pycm.app.controllers`` lists ``DESCRIPTOR`` (docs/controllers.md, "Adding a built-in
controller")."""

from __future__ import annotations

from typing import Final

from pycm.controller import ControllerContext, ControllerDescriptor, Runnable
from pycm.controller.worker import DEFAULT_MAX_RETRIES
from pycm.controllers.builtin import built_in_builder, feature_enabled
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
    workers = ctx.config.replicaset_controller.concurrent_rs_syncs
    builder = built_in_builder(ctx, NAME, workers=workers)
    ReplicaSetController(
        builder,
        client=ReplicaSetClientAdapter(ctx.client_for(COMPONENT)),
        recorder=ctx.recorder_for(COMPONENT),
        staleness_guard=feature_enabled(ctx, STALE_CONTROLLER_CONSISTENCY_REPLICASET),
        rs_metrics=(
            replicaset_metrics(ctx.metrics.queue.registry) if ctx.metrics is not None else None
        ),
        pod_deletion_cost=feature_enabled(ctx, POD_DELETION_COST),
        terminating_replicas=feature_enabled(ctx, DEPLOYMENT_REPLICASET_TERMINATING_REPLICAS),
    )
    return builder.run


DESCRIPTOR: Final = ControllerDescriptor(
    NAME,
    init,
    aliases=(COMPONENT,),
    requires=("replicasets.apps", "pods"),
    max_retries=DEFAULT_MAX_RETRIES,
)
