"""The schemas of the kinds the emulator serves, as data: which fields kube's Go types declare.

kube-apiserver decodes a body into the Go type of its resource, so a field the type does not
declare is dropped (see :mod:`pycm.sim.pruning`). Here each Go struct is a :data:`Struct`, a
mapping from its JSON field names to what the field holds:

- another :data:`Struct` (a nested object: its fields are checked in turn);
- :class:`ListOf` a struct (a list of objects: each item is checked);
- :attr:`Kept.LEAF` (a scalar, a list of scalars, an int-or-string, a time);
- :attr:`Kept.MAP` (string keys to scalars: labels, annotations, resource quantities,
  nodeSelector, a ConfigMap's data; the keys are data, never pruned);
- :attr:`Kept.OPAQUE` (a struct, or a list of them, not declared here: kept whole, unchecked).

A struct declared here is declared *completely* (current Kubernetes, 1.37 — the installed
``kubernetes`` client's models; tests/sim/test_schemas.py checks each against them): pruning a
field a real cluster keeps would lose a user's data, which is worse than keeping a typo. When in
doubt a sub-structure is OPAQUE.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["KINDS", "Field", "Kept", "ListOf", "Struct"]


class Kept(enum.Enum):
    """A field whose value is kept as it is (see the module docstring)."""

    LEAF = "leaf"
    MAP = "map"
    OPAQUE = "opaque"


@dataclass(frozen=True, slots=True)
class ListOf:
    """A list whose items are each a ``item`` struct."""

    item: Struct


Struct: TypeAlias = "dict[str, Field]"
Field: TypeAlias = "Struct | ListOf | Kept"

LEAF, MAP, OPAQUE = Kept.LEAF, Kept.MAP, Kept.OPAQUE


def _leaves(*names: str) -> Struct:
    return dict.fromkeys(names, LEAF)


# ---------------------------------------------------------------- meta/v1

OWNER_REFERENCE: Struct = _leaves(
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"
)
OBJECT_META: Struct = {
    **_leaves(
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "finalizers",
    ),
    "labels": MAP,
    "annotations": MAP,
    "ownerReferences": ListOf(OWNER_REFERENCE),
    "managedFields": OPAQUE,
}
LABEL_SELECTOR: Struct = {
    "matchLabels": MAP,
    "matchExpressions": ListOf(_leaves("key", "operator", "values")),
}

# ---------------------------------------------------------------- core/v1: containers

_LOCAL_OBJECT_REFERENCE: Struct = _leaves("name")
_NAME_OPTIONAL: Struct = _leaves("name", "optional")
_KEY_SELECTOR: Struct = _leaves("name", "key", "optional")
ENV_VAR: Struct = {
    **_leaves("name", "value"),
    "valueFrom": {
        "fieldRef": _leaves("apiVersion", "fieldPath"),
        "resourceFieldRef": _leaves("containerName", "resource", "divisor"),
        "configMapKeyRef": _KEY_SELECTOR,
        "secretKeyRef": _KEY_SELECTOR,
        "fileKeyRef": _leaves("volumeName", "path", "key", "optional"),
    },
}
ENV_FROM_SOURCE: Struct = {
    "prefix": LEAF,
    "configMapRef": _NAME_OPTIONAL,
    "secretRef": _NAME_OPTIONAL,
}
RESOURCE_REQUIREMENTS: Struct = {
    "limits": MAP,
    "requests": MAP,
    "claims": ListOf(_leaves("name", "request")),
}
_EXEC: Struct = _leaves("command")
_HTTP_GET: Struct = {
    **_leaves("path", "port", "host", "scheme", "protocol"),
    "httpHeaders": ListOf(_leaves("name", "value")),
}
_TCP_SOCKET: Struct = _leaves("port", "host")
PROBE: Struct = {
    "exec": _EXEC,
    "httpGet": _HTTP_GET,
    "tcpSocket": _TCP_SOCKET,
    "grpc": _leaves("port", "service", "mode"),
    **_leaves(
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
        "terminationGracePeriodSeconds",
    ),
}
_LIFECYCLE_HANDLER: Struct = {
    "exec": _EXEC,
    "httpGet": _HTTP_GET,
    "tcpSocket": _TCP_SOCKET,
    "sleep": _leaves("seconds"),
}
LIFECYCLE: Struct = {
    "postStart": _LIFECYCLE_HANDLER,
    "preStop": _LIFECYCLE_HANDLER,
    "stopSignal": LEAF,
}
SECURITY_CONTEXT: Struct = {
    "capabilities": _leaves("add", "drop"),
    **_leaves(
        "privileged",
        "runAsUser",
        "runAsGroup",
        "runAsNonRoot",
        "readOnlyRootFilesystem",
        "allowPrivilegeEscalation",
        "procMount",
    ),
    "seLinuxOptions": OPAQUE,
    "windowsOptions": OPAQUE,
    "seccompProfile": OPAQUE,
    "appArmorProfile": OPAQUE,
}
CONTAINER: Struct = {
    **_leaves(
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "restartPolicy",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "stdin",
        "stdinOnce",
        "tty",
    ),
    "ports": ListOf(_leaves("name", "hostPort", "containerPort", "protocol", "hostIP")),
    "envFrom": ListOf(ENV_FROM_SOURCE),
    "env": ListOf(ENV_VAR),
    "resources": RESOURCE_REQUIREMENTS,
    "resizePolicy": ListOf(_leaves("resourceName", "restartPolicy")),
    "restartPolicyRules": ListOf({"action": LEAF, "exitCodes": OPAQUE}),
    "volumeMounts": ListOf(
        _leaves(
            "name",
            "readOnly",
            "recursiveReadOnly",
            "mountPath",
            "subPath",
            "mountPropagation",
            "subPathExpr",
            "bindMountOptions",
        )
    ),
    "volumeDevices": ListOf(_leaves("name", "devicePath")),
    "livenessProbe": PROBE,
    "readinessProbe": PROBE,
    "startupProbe": PROBE,
    "lifecycle": LIFECYCLE,
    "securityContext": SECURITY_CONTEXT,
}
EPHEMERAL_CONTAINER: Struct = {**CONTAINER, "targetContainerName": LEAF}

# ---------------------------------------------------------------- core/v1: pods

# Every volume source is a struct of its own, kept whole.
VOLUME: Struct = {
    "name": LEAF,
    **dict.fromkeys(
        (
            "hostPath",
            "emptyDir",
            "gcePersistentDisk",
            "awsElasticBlockStore",
            "gitRepo",
            "secret",
            "nfs",
            "iscsi",
            "glusterfs",
            "persistentVolumeClaim",
            "rbd",
            "flexVolume",
            "cinder",
            "cephfs",
            "flocker",
            "downwardAPI",
            "fc",
            "azureFile",
            "configMap",
            "vsphereVolume",
            "quobyte",
            "azureDisk",
            "photonPersistentDisk",
            "projected",
            "portworxVolume",
            "scaleIO",
            "storageos",
            "csi",
            "ephemeral",
            "image",
        ),
        OPAQUE,
    ),
}
TOLERATION: Struct = _leaves("key", "operator", "value", "effect", "tolerationSeconds")
AFFINITY: Struct = dict.fromkeys(("nodeAffinity", "podAffinity", "podAntiAffinity"), OPAQUE)
POD_SPEC: Struct = {
    "volumes": ListOf(VOLUME),
    "initContainers": ListOf(CONTAINER),
    "containers": ListOf(CONTAINER),
    "ephemeralContainers": ListOf(EPHEMERAL_CONTAINER),
    **_leaves(
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "nodeName",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
        "hostname",
        "hostnameOverride",
        "subdomain",
        "schedulerName",
        "priorityClassName",
        "priority",
        "runtimeClassName",
        "enableServiceLinks",
        "preemptionPolicy",
        "setHostnameAsFQDN",
        "hostUsers",
    ),
    "nodeSelector": MAP,
    "overhead": MAP,
    "securityContext": OPAQUE,
    "imagePullSecrets": ListOf(_LOCAL_OBJECT_REFERENCE),
    "affinity": AFFINITY,
    "tolerations": ListOf(TOLERATION),
    "resources": RESOURCE_REQUIREMENTS,
    # Structs (or lists of them) clients rarely write: kept whole.
    **dict.fromkeys(
        (
            "hostAliases",
            "dnsConfig",
            "readinessGates",
            "topologySpreadConstraints",
            "os",
            "schedulingGates",
            "resourceClaims",
            "schedulingGroup",
            "evictionResponders",
        ),
        OPAQUE,
    ),
}
POD_TEMPLATE_SPEC: Struct = {"metadata": OBJECT_META, "spec": POD_SPEC}
CONTAINER_STATUS: Struct = {
    **_leaves(
        "name", "ready", "restartCount", "image", "imageID", "containerID", "started", "stopSignal"
    ),
    "state": dict.fromkeys(("waiting", "running", "terminated"), OPAQUE),
    "lastState": dict.fromkeys(("waiting", "running", "terminated"), OPAQUE),
    "allocatedResources": MAP,
    "resources": RESOURCE_REQUIREMENTS,
    **dict.fromkeys(("volumeMounts", "user", "allocatedResourcesStatus"), OPAQUE),
}
POD_STATUS: Struct = {
    **_leaves(
        "observedGeneration",
        "phase",
        "message",
        "reason",
        "nominatedNodeName",
        "hostIP",
        "podIP",
        "startTime",
        "qosClass",
        "resize",
    ),
    "conditions": ListOf(
        _leaves(
            "type",
            "observedGeneration",
            "status",
            "lastProbeTime",
            "lastTransitionTime",
            "reason",
            "message",
        )
    ),
    "hostIPs": ListOf(_leaves("ip")),
    "podIPs": ListOf(_leaves("ip")),
    "initContainerStatuses": ListOf(CONTAINER_STATUS),
    "containerStatuses": ListOf(CONTAINER_STATUS),
    "ephemeralContainerStatuses": ListOf(CONTAINER_STATUS),
    "allocatedResources": MAP,
    "resources": RESOURCE_REQUIREMENTS,
    **dict.fromkeys(
        (
            "resourceClaimStatuses",
            "extendedResourceClaimStatus",
            "nodeAllocatableResourceClaimStatuses",
            "volumeHealth",
        ),
        OPAQUE,
    ),
}

# ---------------------------------------------------------------- apps/v1

DEPLOYMENT_SPEC: Struct = {
    **_leaves(
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
    "strategy": {"type": LEAF, "rollingUpdate": _leaves("maxUnavailable", "maxSurge")},
}
DEPLOYMENT_STATUS: Struct = {
    **_leaves(
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
        _leaves("type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message")
    ),
}
REPLICA_SET_SPEC: Struct = {
    **_leaves("replicas", "minReadySeconds"),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
}
REPLICA_SET_STATUS: Struct = {
    **_leaves(
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "terminatingReplicas",
        "observedGeneration",
    ),
    "conditions": ListOf(_leaves("type", "status", "lastTransitionTime", "reason", "message")),
}

_CONDITION: Struct = _leaves("type", "status", "lastTransitionTime", "reason", "message")

# ---------------------------------------------------------------- core/v1: claims

PERSISTENT_VOLUME_CLAIM_SPEC: Struct = {
    **_leaves(
        "accessModes",
        "storageClassName",
        "volumeAttributesClassName",
        "volumeMode",
        "volumeName",
    ),
    "resources": {"limits": MAP, "requests": MAP},
    "selector": LABEL_SELECTOR,
    "dataSource": OPAQUE,
    "dataSourceRef": OPAQUE,
}
PERSISTENT_VOLUME_CLAIM_STATUS: Struct = {
    **_leaves("accessModes", "currentVolumeAttributesClassName", "phase"),
    "allocatedResourceStatuses": MAP,
    "allocatedResources": MAP,
    "capacity": MAP,
    **dict.fromkeys(("conditions", "healthStatus", "modifyVolumeStatus"), OPAQUE),
}

# ---------------------------------------------------------------- apps/v1: the other two

STATEFUL_SET_SPEC: Struct = {
    **_leaves(
        "minReadySeconds", "podManagementPolicy", "replicas", "revisionHistoryLimit", "serviceName"
    ),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    "updateStrategy": {"type": LEAF, "rollingUpdate": _leaves("maxUnavailable", "partition")},
    "volumeClaimTemplates": ListOf(
        {
            "apiVersion": LEAF,
            "kind": LEAF,
            "metadata": OBJECT_META,
            "spec": PERSISTENT_VOLUME_CLAIM_SPEC,
            "status": PERSISTENT_VOLUME_CLAIM_STATUS,
        }
    ),
    "ordinals": _leaves("start"),
    "persistentVolumeClaimRetentionPolicy": _leaves("whenDeleted", "whenScaled"),
}
STATEFUL_SET_STATUS: Struct = {
    **_leaves(
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
    "conditions": ListOf(_CONDITION),
}
DAEMON_SET_SPEC: Struct = {
    **_leaves("minReadySeconds", "revisionHistoryLimit"),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    "updateStrategy": {"type": LEAF, "rollingUpdate": _leaves("maxUnavailable", "maxSurge")},
}
DAEMON_SET_STATUS: Struct = {
    **_leaves(
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
    "conditions": ListOf(_CONDITION),
}

# ---------------------------------------------------------------- batch/v1

JOB_SPEC: Struct = {
    **_leaves(
        "activeDeadlineSeconds",
        "backoffLimit",
        "backoffLimitPerIndex",
        "completionMode",
        "completions",
        "managedBy",
        "manualSelector",
        "maxFailedIndexes",
        "parallelism",
        "podReplacementPolicy",
        "suspend",
        "ttlSecondsAfterFinished",
    ),
    "selector": LABEL_SELECTOR,
    "template": POD_TEMPLATE_SPEC,
    **dict.fromkeys(("podFailurePolicy", "scheduling", "successPolicy"), OPAQUE),
}
JOB_STATUS: Struct = {
    **_leaves(
        "active",
        "completedIndexes",
        "completionTime",
        "failed",
        "failedIndexes",
        "ready",
        "startTime",
        "succeeded",
        "terminating",
    ),
    "conditions": ListOf({**_CONDITION, "lastProbeTime": LEAF}),
    "uncountedTerminatedPods": _leaves("failed", "succeeded"),
}
CRON_JOB_SPEC: Struct = {
    **_leaves(
        "concurrencyPolicy",
        "failedJobsHistoryLimit",
        "schedule",
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "suspend",
        "timeZone",
    ),
    "jobTemplate": {"metadata": OBJECT_META, "spec": JOB_SPEC},
}

# ---------------------------------------------------------------- networking, discovery, policy

_INGRESS_BACKEND: Struct = {
    "service": {"name": LEAF, "port": _leaves("name", "number")},
    "resource": _leaves("apiGroup", "kind", "name"),
}
INGRESS_SPEC: Struct = {
    "ingressClassName": LEAF,
    "defaultBackend": _INGRESS_BACKEND,
    "rules": ListOf(
        {
            "host": LEAF,
            "http": {
                "paths": ListOf({"path": LEAF, "pathType": LEAF, "backend": _INGRESS_BACKEND})
            },
        }
    ),
    "tls": ListOf(_leaves("hosts", "secretName")),
}
ENDPOINT: Struct = {
    **_leaves("addresses", "hostname", "nodeName", "zone"),
    "conditions": _leaves("ready", "serving", "terminating"),
    "deprecatedTopology": MAP,
    "hints": OPAQUE,
    "targetRef": OPAQUE,
}

# ---------------------------------------------------------------- the kinds


def _kind(**fields: Field) -> Struct:
    return {"apiVersion": LEAF, "kind": LEAF, "metadata": OBJECT_META, **fields}


# Each served kind's top-level type; a kind not listed here is not pruned.
KINDS: dict[str, Struct] = {
    "Pod": _kind(spec=POD_SPEC, status=POD_STATUS),
    "Deployment": _kind(spec=DEPLOYMENT_SPEC, status=DEPLOYMENT_STATUS),
    "ReplicaSet": _kind(spec=REPLICA_SET_SPEC, status=REPLICA_SET_STATUS),
    "Lease": _kind(
        spec=_leaves(
            "holderIdentity",
            "leaseDurationSeconds",
            "acquireTime",
            "renewTime",
            "leaseTransitions",
            "strategy",
            "preferredHolder",
        )
    ),
    "Node": _kind(spec=OPAQUE, status=OPAQUE),
    "Namespace": _kind(spec=_leaves("finalizers"), status={"phase": LEAF, "conditions": OPAQUE}),
    "ConfigMap": _kind(data=MAP, binaryData=MAP, immutable=LEAF),
    "Secret": _kind(data=MAP, stringData=MAP, type=LEAF, immutable=LEAF),
    "Service": _kind(
        spec={
            **_leaves(
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
                _leaves("appProtocol", "name", "nodePort", "port", "protocol", "targetPort")
            ),
            "selector": MAP,
            "sessionAffinityConfig": {"clientIP": _leaves("timeoutSeconds")},
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
        ports=ListOf(_leaves("appProtocol", "name", "port", "protocol")),
    ),
    "HorizontalPodAutoscaler": _kind(
        spec={
            **_leaves("maxReplicas", "minReplicas"),
            "scaleTargetRef": _leaves("apiVersion", "kind", "name"),
            "metrics": OPAQUE,
            "behavior": OPAQUE,
        },
        status={
            **_leaves("currentReplicas", "desiredReplicas", "lastScaleTime", "observedGeneration"),
            "conditions": ListOf({**_CONDITION, "observedGeneration": LEAF}),
            "currentMetrics": OPAQUE,
        },
    ),
    "PodDisruptionBudget": _kind(
        spec={
            **_leaves("maxUnavailable", "minAvailable", "unhealthyPodEvictionPolicy"),
            "selector": LABEL_SELECTOR,
        },
        status={
            **_leaves(
                "currentHealthy",
                "desiredHealthy",
                "disruptionsAllowed",
                "expectedPods",
                "observedGeneration",
            ),
            "conditions": ListOf({**_CONDITION, "observedGeneration": LEAF}),
            "disruptedPods": MAP,
        },
    ),
    "ServiceAccount": _kind(
        secrets=OPAQUE,
        imagePullSecrets=ListOf(_LOCAL_OBJECT_REFERENCE),
        automountServiceAccountToken=LEAF,
    ),
    "Event": _kind(
        **dict.fromkeys(("involvedObject", "source", "series", "related"), OPAQUE),
        **_leaves(
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
}
