"""OpenAPI schema definitions, generated from the schemas the emulator validates and prunes with.

One walk over :data:`pycm.sim.schemas.KINDS` (and each served custom resource's
``openAPIV3Schema``) gives the definitions both documents carry, in Swagger 2.0 form with refs
``#/definitions/<name>`` (the v3 documents rewrite them, see :mod:`.documents`):

- a top-level kind is ``io.k8s.api.<package>.<version>.<Kind>`` (kube's Go package path: the
  group's first label, ``core`` for the legacy group) with ``x-kubernetes-group-version-kind``,
  which is how kubectl finds the schema of the object it validates or patches;
- a struct the schemas name (``schemas.DEPLOYMENT_SPEC`` …, :data:`NAMED_STRUCTS`) is a definition
  of its own under kube's name, so kubectl's messages name it as they do against a cluster
  (``unknown field "replicass" in io.k8s.api.apps.v1.DeploymentSpec``); other structs are
  inlined, with ``properties`` and no ``type`` — kube-openapi's parser (kubectl 1.20) reads a
  ``type: object`` as a map and would then want ``additionalProperties``;
- a leaf's type comes from :data:`LEAF_TYPES` by field name (names whose type is the same
  wherever the schemas declare them), or for a name typed differently in different structs from
  :data:`LEAF_TYPES_IN` by the struct holding it; tests/sim/test_openapi.py holds every leaf to
  the ``kubernetes`` client's models at its path. Every OPAQUE field is untyped — kubectl
  accepts any value there, as the emulator does;
- lists carry their merge keys twice: ``x-kubernetes-patch-merge-key`` / ``-patch-strategy``
  (kubectl's client-side apply computes its strategic merge patch from them) and
  ``x-kubernetes-list-type`` / ``-list-map-keys`` (server-side apply's view, the one
  :mod:`pycm.sim.listrules` holds).

Not described: field descriptions (kube's come from Go comments; ``kubectl explain`` prints the
field's name and type and an empty description), ``required`` lists (the server's validation
answers with kube's own messages instead), kinds without a schema (the reviews, never stored).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from pycm.sim import schemas
from pycm.sim.listrules import ATOMIC_MAPS, LIST_KEYS, SET_LISTS
from pycm.sim.patch import MERGE_KEYS, MERGE_PRIMITIVES
from pycm.sim.resources import Registry, Resource
from pycm.sim.schemas import Kept, ListOf, Struct

__all__ = [
    "LEAF_TYPES",
    "LEAF_TYPES_IN",
    "NAMED_STRUCTS",
    "OBJECT_META",
    "CustomSchema",
    "CustomSchemas",
    "Definitions",
    "ServedSchema",
    "build_definitions",
    "custom_definitions_v3",
    "kind_definition_name",
]

Schema = dict[str, Any]
Definitions = dict[str, Schema]

GVK_EXTENSION = "x-kubernetes-group-version-kind"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."

# The structs of pycm.sim.schemas that kube publishes as definitions of their own (looked up by
# name, so a struct the schemas module drops or renames is simply inlined).
NAMED_STRUCTS: dict[str, str] = {
    "OBJECT_META": OBJECT_META,
    "OWNER_REFERENCE": _META + "OwnerReference",
    "LABEL_SELECTOR": _META + "LabelSelector",
    "ENV_VAR": _CORE + "EnvVar",
    "ENV_FROM_SOURCE": _CORE + "EnvFromSource",
    "RESOURCE_REQUIREMENTS": _CORE + "ResourceRequirements",
    "PROBE": _CORE + "Probe",
    "LIFECYCLE": _CORE + "Lifecycle",
    "SECURITY_CONTEXT": _CORE + "SecurityContext",
    "CONTAINER": _CORE + "Container",
    "EPHEMERAL_CONTAINER": _CORE + "EphemeralContainer",
    "VOLUME": _CORE + "Volume",
    "TOLERATION": _CORE + "Toleration",
    "AFFINITY": _CORE + "Affinity",
    "POD_SPEC": _CORE + "PodSpec",
    "POD_TEMPLATE_SPEC": _CORE + "PodTemplateSpec",
    "CONTAINER_STATUS": _CORE + "ContainerStatus",
    "POD_STATUS": _CORE + "PodStatus",
    "DEPLOYMENT_SPEC": _APPS + "DeploymentSpec",
    "DEPLOYMENT_STATUS": _APPS + "DeploymentStatus",
    "REPLICA_SET_SPEC": _APPS + "ReplicaSetSpec",
    "REPLICA_SET_STATUS": _APPS + "ReplicaSetStatus",
    "PERSISTENT_VOLUME_CLAIM_SPEC": _CORE + "PersistentVolumeClaimSpec",
    "PERSISTENT_VOLUME_CLAIM_STATUS": _CORE + "PersistentVolumeClaimStatus",
    "STATEFUL_SET_SPEC": _APPS + "StatefulSetSpec",
    "STATEFUL_SET_STATUS": _APPS + "StatefulSetStatus",
    "DAEMON_SET_SPEC": _APPS + "DaemonSetSpec",
    "DAEMON_SET_STATUS": _APPS + "DaemonSetStatus",
    "JOB_SPEC": "io.k8s.api.batch.v1.JobSpec",
    "JOB_STATUS": "io.k8s.api.batch.v1.JobStatus",
    "CRON_JOB_SPEC": "io.k8s.api.batch.v1.CronJobSpec",
    "INGRESS_SPEC": "io.k8s.api.networking.v1.IngressSpec",
    "NETWORK_POLICY_SPEC": "io.k8s.api.networking.v1.NetworkPolicySpec",
    "NETWORK_POLICY_PORT": "io.k8s.api.networking.v1.NetworkPolicyPort",
    "ENDPOINT": "io.k8s.api.discovery.v1.Endpoint",
    "POLICY_RULE": "io.k8s.api.rbac.v1.PolicyRule",
    "ROLE_REF": "io.k8s.api.rbac.v1.RoleRef",
    "SUBJECT": "io.k8s.api.rbac.v1.Subject",
    "AGGREGATION_RULE": "io.k8s.api.rbac.v1.AggregationRule",
}

_STRING: Schema = {"type": "string"}
_INT32: Schema = {"type": "integer", "format": "int32"}
_INT64: Schema = {"type": "integer", "format": "int64"}
_BOOL: Schema = {"type": "boolean"}
_TIME: Schema = {"type": "string", "format": "date-time"}
_STRINGS: Schema = {"type": "array", "items": {"type": "string"}}
# kube publishes an IntOrString as a string of this format; kubectl's validation takes any
# scalar for a string, so ``maxSurge: 1`` and ``maxSurge: 25%`` both pass.
_INT_OR_STRING: Schema = {"type": "string", "format": "int-or-string"}

# Leaf fields' types by JSON name — only names whose type is the same in every struct of the
# schemas that declares them as leaves (tests/sim/test_openapi.py holds this to the API's models).
LEAF_TYPES: dict[str, Schema] = {
    **dict.fromkeys(
        (
            "apiVersion",
            "kind",
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "image",
            "workingDir",
            "imagePullPolicy",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "nodeName",
            "hostname",
            "subdomain",
            "schedulerName",
            "priorityClassName",
            "runtimeClassName",
            "preemptionPolicy",
            "phase",
            "message",
            "reason",
            "mountPath",
            "subPath",
            "subPathExpr",
            "mountPropagation",
            "devicePath",
            "fieldPath",
            "containerName",
            "operator",
            "effect",
            "holderIdentity",
            "leaseName",
            "binaryVersion",
            "emulationVersion",
            "qosClass",
            "nominatedNodeName",
            "hostIP",
            "podIP",
            "imageID",
            "containerID",
            "prefix",
            "key",
            "value",
            "action",
            "reportingComponent",
            "reportingInstance",
            # The kinds operators own (Services, Jobs, StatefulSets, Ingresses, ...).
            "addressType",
            "apiGroup",
            "appProtocol",
            "clusterIP",
            "completedIndexes",
            "completionMode",
            "concurrencyPolicy",
            "currentRevision",
            "currentVolumeAttributesClassName",
            "divisor",
            "externalName",
            "externalTrafficPolicy",
            "failedIndexes",
            "host",
            "hostnameOverride",
            "ingressClassName",
            "internalTrafficPolicy",
            "ip",
            "ipFamilyPolicy",
            "loadBalancerClass",
            "loadBalancerIP",
            "managedBy",
            "mode",
            "path",
            "pathType",
            "podManagementPolicy",
            "podReplacementPolicy",
            "preferredHolder",
            "procMount",
            "protocol",
            "recursiveReadOnly",
            "request",
            "resize",
            "resource",
            "resourceName",
            "restartPolicy",
            "schedule",
            "scheme",
            "secretName",
            "service",
            "serviceName",
            "sessionAffinity",
            "status",
            "stopSignal",
            "storageClassName",
            "strategy",
            "targetContainerName",
            "timeZone",
            "trafficDistribution",
            "type",
            "unhealthyPodEvictionPolicy",
            "updateRevision",
            "volumeAttributesClassName",
            "volumeMode",
            "volumeName",
            "whenDeleted",
            "whenScaled",
            "zone",
            "cidr",
        ),
        _STRING,
    ),
    **dict.fromkeys(
        (
            "replicas",
            "minReadySeconds",
            "revisionHistoryLimit",
            "progressDeadlineSeconds",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "terminatingReplicas",
            "fullyLabeledReplicas",
            "collisionCount",
            "containerPort",
            "hostPort",
            "restartCount",
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
            "priority",
            "leaseDurationSeconds",
            "leaseTransitions",
            "count",
            "active",
            "backoffLimit",
            "backoffLimitPerIndex",
            "completions",
            "currentHealthy",
            "currentNumberScheduled",
            "currentReplicas",
            "desiredHealthy",
            "desiredNumberScheduled",
            "desiredReplicas",
            "disruptionsAllowed",
            "expectedPods",
            "failedJobsHistoryLimit",
            "healthCheckNodePort",
            "maxFailedIndexes",
            "maxReplicas",
            "minReplicas",
            "nodePort",
            "number",
            "numberAvailable",
            "numberMisscheduled",
            "numberReady",
            "numberUnavailable",
            "parallelism",
            "partition",
            "start",
            "successfulJobsHistoryLimit",
            "ttlSecondsAfterFinished",
            "updatedNumberScheduled",
            "endPort",
        ),
        _INT32,
    ),
    **dict.fromkeys(
        (
            "generation",
            "observedGeneration",
            "deletionGracePeriodSeconds",
            "activeDeadlineSeconds",
            "tolerationSeconds",
            "runAsUser",
            "runAsGroup",
            "seconds",
            "startingDeadlineSeconds",
            "terminationGracePeriodSeconds",
        ),
        _INT64,
    ),
    **dict.fromkeys(
        (
            "paused",
            "controller",
            "blockOwnerDeletion",
            "optional",
            "stdin",
            "stdinOnce",
            "tty",
            "readOnly",
            "privileged",
            "runAsNonRoot",
            "readOnlyRootFilesystem",
            "allowPrivilegeEscalation",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "shareProcessNamespace",
            "automountServiceAccountToken",
            "enableServiceLinks",
            "setHostnameAsFQDN",
            "hostUsers",
            "started",
            "immutable",
            "allocateLoadBalancerNodePorts",
            "manualSelector",
            "publishNotReadyAddresses",
            "serving",
            "suspend",
        ),
        _BOOL,
    ),
    **dict.fromkeys(
        (
            "creationTimestamp",
            "deletionTimestamp",
            "lastTransitionTime",
            "lastUpdateTime",
            "lastProbeTime",
            "startTime",
            "acquireTime",
            "renewTime",
            "pingTime",
            "firstTimestamp",
            "lastTimestamp",
            "eventTime",
            "completionTime",
            "lastScaleTime",
            "lastScheduleTime",
            "lastSuccessfulTime",
        ),
        _TIME,
    ),
    **dict.fromkeys(
        (
            "finalizers",
            "command",
            "args",
            "values",
            "add",
            "drop",
            "accessModes",
            "addresses",
            "bindMountOptions",
            "clusterIPs",
            "externalIPs",
            "hosts",
            "ipFamilies",
            "loadBalancerSourceRanges",
            "verbs",
            "apiGroups",
            "resources",
            "resourceNames",
            "nonResourceURLs",
            "except",
            "policyTypes",
        ),
        _STRINGS,
    ),
    **dict.fromkeys(("maxSurge", "maxUnavailable", "minAvailable", "targetPort"), _INT_OR_STRING),
}

# Leaves whose name has more than one type across the schemas, typed by the struct that holds
# them: (the holder, the field), the holder being a named definition's short name
# (``JobStatus``), a kind, or the field an inline struct sits under (``httpGet``, ``ports``).
# Looked up before LEAF_TYPES.
LEAF_TYPES_IN: dict[tuple[str, str], Schema] = {
    **dict.fromkeys(
        (
            ("JobStatus", "ready"),
            ("JobStatus", "failed"),
            ("JobStatus", "succeeded"),
            ("JobStatus", "terminating"),
            ("ports", "port"),  # a Service's, an EndpointSlice's
            ("grpc", "port"),
        ),
        _INT32,
    ),
    **dict.fromkeys(
        (
            ("uncountedTerminatedPods", "failed"),
            ("uncountedTerminatedPods", "succeeded"),
        ),
        _STRINGS,
    ),
    **dict.fromkeys(
        (("ContainerStatus", "ready"), ("conditions", "ready"), ("conditions", "terminating")),
        _BOOL,
    ),
    **dict.fromkeys(
        (("httpGet", "port"), ("tcpSocket", "port"), ("NetworkPolicyPort", "port")),
        _INT_OR_STRING,
    ),
}


@dataclass(frozen=True, slots=True)
class ServedSchema:
    """One served version of a custom resource and its ``openAPIV3Schema`` (None: the CRD
    gives none, and the document then describes only apiVersion, kind and metadata)."""

    group: str
    version: str
    kind: str
    schema: Mapping[str, Any] | None


class CustomSchema(Protocol):
    """What the documents read of one served custom resource version (a :class:`ServedSchema`,
    or the CRD registry's own record with the same attributes)."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def schema(self) -> Mapping[str, Any] | None: ...


# The CRD registry's view for the documents: every served version of every established CRD.
CustomSchemas = Callable[[], Iterable[CustomSchema]]


def is_builtin_group(group: str) -> bool:
    """A group of Kubernetes' own (a CRD's group has a dot and is not ``*.k8s.io``)."""
    return "." not in group or group.endswith(".k8s.io")


def kind_definition_name(group: str, version: str, kind: str) -> str:
    """kube's definition name: a built-in's Go package path, a CRD's reversed group."""
    if not group:
        return f"io.k8s.api.core.{version}.{kind}"
    if is_builtin_group(group):
        return f"io.k8s.api.{group.split('.', 1)[0]}.{version}.{kind}"
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def _ref(name: str) -> Schema:
    return {"$ref": "#/definitions/" + name}


class _Builder:
    def __init__(self) -> None:
        self.definitions: Definitions = {}
        self._names = {
            id(struct): name
            for attr, name in NAMED_STRUCTS.items()
            if isinstance(struct := getattr(schemas, attr, None), dict)
        }

    def struct(self, struct: Struct, holder: str) -> Schema:
        """A struct: a ref to its definition when it has a name, else inlined (``holder``:
        the field it sits under, for :data:`LEAF_TYPES_IN`)."""
        name = self._names.get(id(struct))
        if name is None:
            return self._properties(struct, holder)
        if name not in self.definitions:
            self.definitions[name] = {}  # reserved first: a struct may nest itself
            body = self._properties(struct, name.rsplit(".", 1)[-1])
            if name.endswith(".LabelSelector"):
                body["x-kubernetes-map-type"] = "atomic"
            self.definitions[name] = body
        return _ref(name)

    def _properties(self, struct: Struct, holder: str) -> Schema:
        return {"properties": {k: self.field(k, v, holder) for k, v in struct.items()}}

    def field(self, name: str, field: schemas.Field, holder: str) -> Schema:
        if isinstance(field, ListOf):
            return self._list(name, self.struct(field.item, name))
        if isinstance(field, dict):
            schema = self.struct(field, name)
            if name in ATOMIC_MAPS and "$ref" not in schema:
                schema["x-kubernetes-map-type"] = "atomic"
            return schema
        if field is Kept.MAP:
            return {"type": "object", "additionalProperties": {"type": "string"}}
        if field is Kept.LEAF:
            typed = LEAF_TYPES_IN.get((holder, name)) or LEAF_TYPES.get(name)
            if typed is None:
                return {}
            if typed.get("type") == "array":
                return self._list(name, dict(typed["items"]))
            return dict(typed)
        return {}  # OPAQUE: any value

    @staticmethod
    def _list(name: str, items: Schema) -> Schema:
        schema: Schema = {"type": "array", "items": items}
        merge_key = MERGE_KEYS.get(name)
        if merge_key is not None:
            schema["x-kubernetes-patch-merge-key"] = merge_key
            schema["x-kubernetes-patch-strategy"] = "merge"
        elif name in MERGE_PRIMITIVES:
            schema["x-kubernetes-patch-strategy"] = "merge"
        if name in LIST_KEYS:
            schema["x-kubernetes-list-type"] = "map"
            schema["x-kubernetes-list-map-keys"] = list(LIST_KEYS[name][0])
        elif name in SET_LISTS:
            schema["x-kubernetes-list-type"] = "set"
        else:
            schema["x-kubernetes-list-type"] = "atomic"
        return schema

    def kind(self, res: Resource, struct: Struct) -> None:
        name = kind_definition_name(res.group, res.version, res.kind)
        body = self._properties(struct, res.kind)
        body[GVK_EXTENSION] = [{"group": res.group, "kind": res.kind, "version": res.version}]
        self.definitions[name] = body

    def custom(self, served: CustomSchema) -> None:
        name = kind_definition_name(served.group, served.version, served.kind)
        body = custom_schema_v2(served.schema or {})
        properties = dict(body.get("properties") or {})
        properties.setdefault("apiVersion", dict(_STRING))
        properties.setdefault("kind", dict(_STRING))
        self.struct(schemas.OBJECT_META, "metadata")
        properties["metadata"] = _ref(OBJECT_META)
        body.pop("type", None)  # a struct has no type here (see the module docstring)
        body["properties"] = properties
        body[GVK_EXTENSION] = [
            {"group": served.group, "kind": served.kind, "version": served.version}
        ]
        self.definitions[name] = body


# The keys of a CRD's structural schema Swagger 2.0 has (kube's ToStructuralOpenAPIV2 keeps
# these; nullable, oneOf/anyOf/not and the v3-only keys have no v2 form).
_V2_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "enum",
        "multipleOf",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-embedded-resource",
    }
)


def custom_schema_v2(schema: Mapping[str, Any], depth: int = 0) -> Schema:
    """A CRD's structural schema in the Swagger 2.0 form kubectl reads: an int-or-string and a
    node that keeps unknown fields lose their type and properties (kubectl then accepts any
    value, as the server does); a node with properties is a struct (no ``type``). Bounded by
    the depth a CRD's schema may have (the CRD registry refuses deeper ones)."""
    if depth > 64 or not isinstance(schema, Mapping):
        return {}
    if schema.get("x-kubernetes-int-or-string") is True:
        return {k: v for k, v in schema.items() if k in ("description",)}
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return {k: v for k, v in schema.items() if k in ("description",)}
    out: Schema = {k: v for k, v in schema.items() if k in _V2_KEYS}
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        out.pop("type", None)
        out["properties"] = {str(k): custom_schema_v2(v, depth + 1) for k, v in properties.items()}
    elif out.get("type") == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = custom_schema_v2(extra, depth + 1)
        else:
            out.pop("type")  # an object of unknown shape: any value
    items = schema.get("items")
    if out.get("type") == "array":
        out["items"] = custom_schema_v2(items, depth + 1) if isinstance(items, Mapping) else {}
    return out


def custom_definitions_v3(custom: Iterable[CustomSchema]) -> Definitions:
    """The custom resources' definitions for the v3 documents: their ``openAPIV3Schema`` as
    the CRD gives it (nullable, int-or-string and the rest kept: OpenAPI 3 says them), with
    apiVersion, kind, metadata (a ref, v2 form: the documents rewrite it) and the GVK."""
    out: Definitions = {}
    for served in custom:
        body: Schema = orjson.loads(orjson.dumps(served.schema or {"type": "object"}))
        properties = dict(body.get("properties") or {})
        properties.setdefault("apiVersion", dict(_STRING))
        properties.setdefault("kind", dict(_STRING))
        properties["metadata"] = _ref(OBJECT_META)
        body["type"] = "object"
        body["properties"] = properties
        body[GVK_EXTENSION] = [
            {"group": served.group, "kind": served.kind, "version": served.version}
        ]
        out[kind_definition_name(served.group, served.version, served.kind)] = body
    return out


def build_definitions(registry: Registry, custom: Iterable[CustomSchema] = ()) -> Definitions:
    """Every definition of the served built-in kinds that have a schema, and of ``custom``'s."""
    builder = _Builder()
    for res in registry.resources.values():
        struct = schemas.KINDS.get(res.kind) if is_builtin_group(res.group) else None
        if struct is not None and res.stored:
            builder.kind(res, struct)
    for served in custom:
        builder.custom(served)
    return dict(sorted(builder.definitions.items()))
