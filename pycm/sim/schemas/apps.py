"""apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets."""

from __future__ import annotations

from pycm.sim.schemas.core import (
    PERSISTENT_VOLUME_CLAIM_SPEC,
    PERSISTENT_VOLUME_CLAIM_STATUS,
    POD_TEMPLATE_SPEC,
)
from pycm.sim.schemas.fields import CONDITION, LEAF, ListOf, Struct, leaves
from pycm.sim.schemas.meta import LABEL_SELECTOR, OBJECT_META

__all__ = [
    "DAEMON_SET_SPEC",
    "DAEMON_SET_STATUS",
    "DEPLOYMENT_SPEC",
    "DEPLOYMENT_STATUS",
    "REPLICA_SET_SPEC",
    "REPLICA_SET_STATUS",
    "STATEFUL_SET_SPEC",
    "STATEFUL_SET_STATUS",
]

DEPLOYMENT_SPEC: Struct = {
    **leaves(
        "replicas",
        "minReadySeconds",
        "revisionHistoryLimit",
        "paused",
        "progressDeadlineSeconds",
        # KEP-5882's alpha field (gate DeploymentPodReplacementPolicy): declared so that a
        # write keeps it for the strategy to drop or validate, as kube's type does.
        "podReplacementPolicy",
    ),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    "strategy": {"type": LEAF, "rollingUpdate": leaves("maxUnavailable", "maxSurge")},
}
DEPLOYMENT_STATUS: Struct = {
    **leaves(
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "terminatingReplicas",
        "collisionCount",
    ),
    "conditions": ListOf(
        leaves("type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message")
    ),
}
REPLICA_SET_SPEC: Struct = {
    **leaves("replicas", "minReadySeconds"),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
}
REPLICA_SET_STATUS: Struct = {
    **leaves(
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "terminatingReplicas",
        "observedGeneration",
    ),
    "conditions": ListOf(leaves("type", "status", "lastTransitionTime", "reason", "message")),
}

# StatefulSets and DaemonSets.

STATEFUL_SET_SPEC: Struct = {
    **leaves(
        "minReadySeconds", "podManagementPolicy", "replicas", "revisionHistoryLimit", "serviceName"
    ),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    "updateStrategy": {"type": LEAF, "rollingUpdate": leaves("maxUnavailable", "partition")},
    "volumeClaimTemplates": ListOf(
        {
            "apiVersion": LEAF,
            "kind": LEAF,
            "metadata": OBJECT_META,
            "spec": PERSISTENT_VOLUME_CLAIM_SPEC,
            "status": PERSISTENT_VOLUME_CLAIM_STATUS,
        }
    ),
    "ordinals": leaves("start"),
    "persistentVolumeClaimRetentionPolicy": leaves("whenDeleted", "whenScaled"),
}
STATEFUL_SET_STATUS: Struct = {
    **leaves(
        "availableReplicas",
        "collisionCount",
        "currentReplicas",
        "currentRevision",
        "observedGeneration",
        "readyReplicas",
        "replicas",
        "updateRevision",
        "updatedReplicas",
    ),
    "conditions": ListOf(CONDITION),
}
DAEMON_SET_SPEC: Struct = {
    **leaves("minReadySeconds", "revisionHistoryLimit"),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    "updateStrategy": {"type": LEAF, "rollingUpdate": leaves("maxUnavailable", "maxSurge")},
}
DAEMON_SET_STATUS: Struct = {
    **leaves(
        "collisionCount",
        "currentNumberScheduled",
        "desiredNumberScheduled",
        "numberAvailable",
        "numberMisscheduled",
        "numberReady",
        "numberUnavailable",
        "observedGeneration",
        "updatedNumberScheduled",
    ),
    "conditions": ListOf(CONDITION),
}
