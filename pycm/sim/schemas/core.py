"""core/v1: containers, pods and their templates, persistent volume claims."""

from __future__ import annotations

from pycm.sim.schemas.fields import LEAF, MAP, OPAQUE, ListOf, Struct, leaves
from pycm.sim.schemas.meta import LABEL_SELECTOR, OBJECT_META

__all__ = [
    "AFFINITY",
    "CONTAINER",
    "CONTAINER_STATUS",
    "ENV_FROM_SOURCE",
    "ENV_VAR",
    "EPHEMERAL_CONTAINER",
    "LIFECYCLE",
    "LOCAL_OBJECT_REFERENCE",
    "PERSISTENT_VOLUME_CLAIM_SPEC",
    "PERSISTENT_VOLUME_CLAIM_STATUS",
    "POD_SPEC",
    "POD_STATUS",
    "POD_TEMPLATE_SPEC",
    "PROBE",
    "RESOURCE_REQUIREMENTS",
    "SECURITY_CONTEXT",
    "TOLERATION",
    "VOLUME",
]

LOCAL_OBJECT_REFERENCE: Struct = leaves("name")
_NAME_OPTIONAL: Struct = leaves("name", "optional")
_KEY_SELECTOR: Struct = leaves("name", "key", "optional")
ENV_VAR: Struct = {
    **leaves("name", "value"),
    "valueFrom": {
        "fieldRef": leaves("apiVersion", "fieldPath"),
        "resourceFieldRef": leaves("containerName", "resource", "divisor"),
        "configMapKeyRef": _KEY_SELECTOR,
        "secretKeyRef": _KEY_SELECTOR,
        "fileKeyRef": leaves("volumeName", "path", "key", "optional"),
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
    "claims": ListOf(leaves("name", "request")),
}
_EXEC: Struct = leaves("command")
_HTTP_GET: Struct = {
    **leaves("path", "port", "host", "scheme", "protocol"),
    "httpHeaders": ListOf(leaves("name", "value")),
}
_TCP_SOCKET: Struct = leaves("port", "host")
PROBE: Struct = {
    "exec": _EXEC,
    "httpGet": _HTTP_GET,
    "tcpSocket": _TCP_SOCKET,
    "grpc": leaves("port", "service", "mode"),
    **leaves(
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
    "sleep": leaves("seconds"),
}
LIFECYCLE: Struct = {
    "postStart": _LIFECYCLE_HANDLER,
    "preStop": _LIFECYCLE_HANDLER,
    "stopSignal": LEAF,
}
SECURITY_CONTEXT: Struct = {
    "capabilities": leaves("add", "drop"),
    **leaves(
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
    **leaves(
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
    "ports": ListOf(leaves("name", "hostPort", "containerPort", "protocol", "hostIP")),
    "envFrom": ListOf(ENV_FROM_SOURCE),
    "env": ListOf(ENV_VAR),
    "resources": RESOURCE_REQUIREMENTS,
    "resizePolicy": ListOf(leaves("resourceName", "restartPolicy")),
    "restartPolicyRules": ListOf({"action": LEAF, "exitCodes": OPAQUE}),
    "volumeMounts": ListOf(
        leaves(
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
    "volumeDevices": ListOf(leaves("name", "devicePath")),
    "livenessProbe": PROBE,
    "readinessProbe": PROBE,
    "startupProbe": PROBE,
    "lifecycle": LIFECYCLE,
    "securityContext": SECURITY_CONTEXT,
}
EPHEMERAL_CONTAINER: Struct = {**CONTAINER, "targetContainerName": LEAF}

# Pods.

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
TOLERATION: Struct = leaves("key", "operator", "value", "effect", "tolerationSeconds")
AFFINITY: Struct = dict.fromkeys(("nodeAffinity", "podAffinity", "podAntiAffinity"), OPAQUE)
POD_SPEC: Struct = {
    "volumes": ListOf(VOLUME),
    "initContainers": ListOf(CONTAINER),
    "containers": ListOf(CONTAINER),
    "ephemeralContainers": ListOf(EPHEMERAL_CONTAINER),
    **leaves(
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
    "imagePullSecrets": ListOf(LOCAL_OBJECT_REFERENCE),
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
    **leaves(
        "name", "ready", "restartCount", "image", "imageID", "containerID", "started", "stopSignal"
    ),
    "state": dict.fromkeys(("waiting", "running", "terminated"), OPAQUE),
    "lastState": dict.fromkeys(("waiting", "running", "terminated"), OPAQUE),
    "allocatedResources": MAP,
    "resources": RESOURCE_REQUIREMENTS,
    **dict.fromkeys(("volumeMounts", "user", "allocatedResourcesStatus"), OPAQUE),
}
POD_STATUS: Struct = {
    **leaves(
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
        leaves(
            "type",
            "observedGeneration",
            "status",
            "lastProbeTime",
            "lastTransitionTime",
            "reason",
            "message",
        )
    ),
    "hostIPs": ListOf(leaves("ip")),
    "podIPs": ListOf(leaves("ip")),
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

# Persistent volume claims.

PERSISTENT_VOLUME_CLAIM_SPEC: Struct = {
    **leaves(
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
    **leaves("accessModes", "currentVolumeAttributesClassName", "phase"),
    "allocatedResourceStatuses": MAP,
    "allocatedResources": MAP,
    "capacity": MAP,
    **dict.fromkeys(("conditions", "healthStatus", "modifyVolumeStatus"), OPAQUE),
}
