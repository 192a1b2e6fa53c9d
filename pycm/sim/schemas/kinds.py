"""Each served kind's top-level type: its metadata and the structs of the group modules."""

from __future__ import annotations

from pycm.sim.schemas.apps import (
    DAEMON_SET_SPEC,
    DAEMON_SET_STATUS,
    DEPLOYMENT_SPEC,
    DEPLOYMENT_STATUS,
    REPLICA_SET_SPEC,
    REPLICA_SET_STATUS,
    STATEFUL_SET_SPEC,
    STATEFUL_SET_STATUS,
)
from pycm.sim.schemas.batch import CRON_JOB_SPEC, JOB_SPEC, JOB_STATUS
from pycm.sim.schemas.core import (
    LOCAL_OBJECT_REFERENCE,
    PERSISTENT_VOLUME_CLAIM_SPEC,
    PERSISTENT_VOLUME_CLAIM_STATUS,
    POD_SPEC,
    POD_STATUS,
)
from pycm.sim.schemas.fields import (
    CONDITION,
    LEAF,
    MAP,
    OPAQUE,
    Field,
    ListOf,
    Struct,
    leaves,
)
from pycm.sim.schemas.meta import LABEL_SELECTOR, OBJECT_META
from pycm.sim.schemas.networking import ENDPOINT, INGRESS_SPEC, NETWORK_POLICY_SPEC
from pycm.sim.schemas.rbac import AGGREGATION_RULE, POLICY_RULE, ROLE_REF, SUBJECT

__all__ = ["KINDS"]


def _kind(**fields: Field) -> Struct:
    return {"apiVersion": LEAF, "kind": LEAF, "metadata": OBJECT_META, **fields}


# Each served kind's top-level type; a kind not listed here is not pruned.
KINDS: dict[str, Struct] = {
    "Pod": _kind(spec=POD_SPEC, status=POD_STATUS),
    "Deployment": _kind(spec=DEPLOYMENT_SPEC, status=DEPLOYMENT_STATUS),
    "ReplicaSet": _kind(spec=REPLICA_SET_SPEC, status=REPLICA_SET_STATUS),
    "Lease": _kind(
        spec=leaves(
            "holderIdentity",
            "leaseDurationSeconds",
            "acquireTime",
            "renewTime",
            "leaseTransitions",
            "strategy",
            "preferredHolder",
        )
    ),
    # coordination.k8s.io/v1beta1 (KEP-4355): the candidate's versions, its Lease, the
    # coordinator's ping and the candidate's renewal.
    "LeaseCandidate": _kind(
        spec=leaves(
            "leaseName",
            "pingTime",
            "renewTime",
            "binaryVersion",
            "emulationVersion",
            "strategy",
        )
    ),
    "Node": _kind(spec=OPAQUE, status=OPAQUE),
    "Namespace": _kind(spec=leaves("finalizers"), status={"phase": LEAF, "conditions": OPAQUE}),
    "ConfigMap": _kind(data=MAP, binaryData=MAP, immutable=LEAF),
    "Secret": _kind(data=MAP, stringData=MAP, type=LEAF, immutable=LEAF),
    "Service": _kind(
        spec={
            **leaves(
                "allocateLoadBalancerNodePorts",
                "clusterIP",
                "clusterIPs",
                "externalIPs",
                "externalName",
                "externalTrafficPolicy",
                "healthCheckNodePort",
                "internalTrafficPolicy",
                "ipFamilies",
                "ipFamilyPolicy",
                "loadBalancerClass",
                "loadBalancerIP",
                "loadBalancerSourceRanges",
                "publishNotReadyAddresses",
                "sessionAffinity",
                "trafficDistribution",
                "type",
            ),
            "ports": ListOf(
                leaves("appProtocol", "name", "nodePort", "port", "protocol", "targetPort")
            ),
            "selector": MAP,
            "sessionAffinityConfig": {"clientIP": leaves("timeoutSeconds")},
        },
        status={"conditions": OPAQUE, "loadBalancer": OPAQUE},
    ),
    "PersistentVolumeClaim": _kind(
        spec=PERSISTENT_VOLUME_CLAIM_SPEC, status=PERSISTENT_VOLUME_CLAIM_STATUS
    ),
    "StatefulSet": _kind(spec=STATEFUL_SET_SPEC, status=STATEFUL_SET_STATUS),
    "DaemonSet": _kind(spec=DAEMON_SET_SPEC, status=DAEMON_SET_STATUS),
    "Job": _kind(spec=JOB_SPEC, status=JOB_STATUS),
    "CronJob": _kind(
        spec=CRON_JOB_SPEC,
        status={"active": OPAQUE, "lastScheduleTime": LEAF, "lastSuccessfulTime": LEAF},
    ),
    "Ingress": _kind(spec=INGRESS_SPEC, status={"loadBalancer": OPAQUE}),
    "EndpointSlice": _kind(
        addressType=LEAF,
        endpoints=ListOf(ENDPOINT),
        ports=ListOf(leaves("appProtocol", "name", "port", "protocol")),
    ),
    "HorizontalPodAutoscaler": _kind(
        spec={
            **leaves("maxReplicas", "minReplicas"),
            "scaleTargetRef": leaves("apiVersion", "kind", "name"),
            "metrics": OPAQUE,
            "behavior": OPAQUE,
        },
        status={
            **leaves("currentReplicas", "desiredReplicas", "lastScaleTime", "observedGeneration"),
            "conditions": ListOf({**CONDITION, "observedGeneration": LEAF}),
            "currentMetrics": OPAQUE,
        },
    ),
    "PodDisruptionBudget": _kind(
        spec={
            **leaves("maxUnavailable", "minAvailable", "unhealthyPodEvictionPolicy"),
            "selector": LABEL_SELECTOR,
        },
        status={
            **leaves(
                "currentHealthy",
                "desiredHealthy",
                "disruptionsAllowed",
                "expectedPods",
                "observedGeneration",
            ),
            "conditions": ListOf({**CONDITION, "observedGeneration": LEAF}),
            "disruptedPods": MAP,
        },
    ),
    "ServiceAccount": _kind(
        secrets=OPAQUE,
        imagePullSecrets=ListOf(LOCAL_OBJECT_REFERENCE),
        automountServiceAccountToken=LEAF,
    ),
    "Event": _kind(
        **dict.fromkeys(("involvedObject", "source", "series", "related"), OPAQUE),
        **leaves(
            "reason",
            "message",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "action",
            "reportingComponent",
            "reportingInstance",
        ),
    ),
    "Role": _kind(rules=ListOf(POLICY_RULE)),
    "ClusterRole": _kind(rules=ListOf(POLICY_RULE), aggregationRule=AGGREGATION_RULE),
    "RoleBinding": _kind(subjects=ListOf(SUBJECT), roleRef=ROLE_REF),
    "ClusterRoleBinding": _kind(subjects=ListOf(SUBJECT), roleRef=ROLE_REF),
    "NetworkPolicy": _kind(spec=NETWORK_POLICY_SPEC),
}
