"""JSON shape checks: what kube-apiserver's typed decoding refuses with a 400.

kube decodes a body into Go structs before it validates anything, so a ``spec`` that is a
boolean or a ``replicas`` that is a string fails as BadRequest ("cannot unmarshal …"), not as
Invalid. The emulator keeps plain dicts, so it checks the fields its own logic reads against
this compact schema first; unknown fields pass (kube drops them), ``null`` means absent.
"""

from __future__ import annotations

from typing import Any

from pycm.sim.errors import bad_request
from pycm.sim.quantity import FORMAT_ERROR, parse_quantity

__all__ = ["check_shape"]

STR, INT, BOOL, OBJ = "string", "integer", "boolean", "object"
QUANTITY = "quantity"  # a resource.Quantity: a string or a number that parses as one
# A schema is a type name, a dict (an object with typed fields), a one-element list (an array
# of that), or ("map", type) for an object whose values all have that type.
Schema = Any
MAP_STR = ("map", STR)

_OWNER_REF = {
    "apiVersion": STR,
    "kind": STR,
    "name": STR,
    "uid": STR,
    "controller": BOOL,
    "blockOwnerDeletion": BOOL,
}
_META = {
    "name": STR,
    "generateName": STR,
    "namespace": STR,
    "uid": STR,
    "resourceVersion": STR,
    "generation": INT,
    "deletionTimestamp": STR,
    "deletionGracePeriodSeconds": INT,
    "labels": MAP_STR,
    "annotations": MAP_STR,
    "finalizers": [STR],
    "ownerReferences": [_OWNER_REF],
}
_CONTAINER: dict[str, Schema] = {
    "name": STR,
    "image": STR,
    "imagePullPolicy": STR,
    "command": [STR],
    "args": [STR],
    "ports": [{"containerPort": INT, "name": STR, "protocol": STR}],
    "env": [{"name": STR, "value": STR}],
    "resources": {"limits": ("map", QUANTITY), "requests": ("map", QUANTITY)},
}
_POD_SPEC = {
    "containers": [_CONTAINER],
    "initContainers": [_CONTAINER],
    "nodeName": STR,
    "restartPolicy": STR,
    "terminationGracePeriodSeconds": INT,
    "schedulerName": STR,
    "serviceAccountName": STR,
    "readinessGates": [OBJ],
}
_SELECTOR: dict[str, Schema] = {
    "matchLabels": MAP_STR,
    "matchExpressions": [{"key": STR, "operator": STR, "values": [STR]}],
}
_POD_TEMPLATE = {"metadata": _META, "spec": _POD_SPEC}
_WORKLOAD_SPEC = {
    "replicas": INT,
    "minReadySeconds": INT,
    "revisionHistoryLimit": INT,
    "progressDeadlineSeconds": INT,
    "paused": BOOL,
    "selector": _SELECTOR,
    "template": _POD_TEMPLATE,
    "strategy": {"type": STR, "rollingUpdate": OBJ},
}
_CONDITIONS = [{"type": STR, "status": STR}]
_WORKLOAD_STATUS = {
    "replicas": INT,
    "readyReplicas": INT,
    "availableReplicas": INT,
    "updatedReplicas": INT,
    "observedGeneration": INT,
    "conditions": _CONDITIONS,
}
# Deployments and ReplicaSets also report terminatingReplicas (an *int32, 1.33+).
_RS_STATUS = {**_WORKLOAD_STATUS, "terminatingReplicas": INT}
_NETWORK_POLICY_PORT = {"protocol": STR, "endPort": INT}
_PEER = {
    "podSelector": _SELECTOR,
    "namespaceSelector": _SELECTOR,
    "ipBlock": {"cidr": STR, "except": [STR]},
}
_POLICY_RULE = {
    key: [STR] for key in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
}
_BINDING: dict[str, Schema] = {
    "roleRef": {"apiGroup": STR, "kind": STR, "name": STR},
    "subjects": [{"kind": STR, "apiGroup": STR, "name": STR, "namespace": STR}],
}
_KINDS: dict[str, dict[str, Schema]] = {
    "Pod": {
        "spec": _POD_SPEC,
        "status": {
            "phase": STR,
            "podIP": STR,
            "conditions": _CONDITIONS,
            "containerStatuses": [{"name": STR, "ready": BOOL, "restartCount": INT}],
        },
    },
    "Deployment": {"spec": _WORKLOAD_SPEC, "status": _RS_STATUS},
    "ReplicaSet": {"spec": _WORKLOAD_SPEC, "status": _RS_STATUS},
    "Node": {
        "spec": {"unschedulable": BOOL, "taints": [OBJ]},
        "status": {"conditions": _CONDITIONS, "addresses": [OBJ], "nodeInfo": MAP_STR},
    },
    "Namespace": {"spec": {"finalizers": [STR]}, "status": {"phase": STR}},
    "ConfigMap": {"data": MAP_STR, "binaryData": MAP_STR, "immutable": BOOL},
    "Secret": {"type": STR, "immutable": BOOL},
    "Service": {
        "spec": {
            "type": STR,
            "clusterIP": STR,
            "clusterIPs": [STR],
            "externalName": STR,
            "sessionAffinity": STR,
            "selector": MAP_STR,
            "ports": [{"name": STR, "port": INT, "nodePort": INT, "protocol": STR}],
        }
    },
    "StatefulSet": {"spec": _WORKLOAD_SPEC, "status": _WORKLOAD_STATUS},
    "DaemonSet": {"spec": _WORKLOAD_SPEC, "status": _WORKLOAD_STATUS},
    "Job": {"spec": _WORKLOAD_SPEC},
    "PersistentVolumeClaim": {
        "spec": {"accessModes": [STR], "storageClassName": STR, "volumeMode": STR}
    },
    "EndpointSlice": {"addressType": STR, "endpoints": [{"addresses": [STR]}], "ports": [OBJ]},
    "Lease": {
        "spec": {
            "holderIdentity": STR,
            "leaseDurationSeconds": INT,
            "leaseTransitions": INT,
            "acquireTime": STR,
            "renewTime": STR,
            "strategy": STR,
            "preferredHolder": STR,
        }
    },
    "LeaseCandidate": {
        "spec": {
            "leaseName": STR,
            "pingTime": STR,
            "renewTime": STR,
            "binaryVersion": STR,
            "emulationVersion": STR,
            "strategy": STR,
        }
    },
    "NetworkPolicy": {
        "spec": {
            "podSelector": _SELECTOR,
            "policyTypes": [STR],
            "ingress": [{"ports": [_NETWORK_POLICY_PORT], "from": [_PEER]}],
            "egress": [{"ports": [_NETWORK_POLICY_PORT], "to": [_PEER]}],
        }
    },
    "Role": {"rules": [_POLICY_RULE]},
    "ClusterRole": {
        "rules": [_POLICY_RULE],
        "aggregationRule": {"clusterRoleSelectors": [_SELECTOR]},
    },
    "RoleBinding": _BINDING,
    "ClusterRoleBinding": _BINDING,
    "Event": {
        "involvedObject": {"kind": STR, "namespace": STR, "name": STR, "uid": STR},
        "reason": STR,
        "message": STR,
        "type": STR,
        "count": INT,
        "source": {"component": STR, "host": STR},
    },
}


# Each kind's whole schema, its metadata included.
_SCHEMAS: dict[str, dict[str, Schema]] = {
    kind: {"metadata": _META, **schema} for kind, schema in _KINDS.items()
}


def _type_ok(value: Any, type_: str) -> bool:
    if type_ == STR:
        return isinstance(value, str)
    if type_ == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == BOOL:
        return isinstance(value, bool)
    if type_ == QUANTITY:
        return _quantity_error(value) is None
    return isinstance(value, dict)


def _quantity_error(value: Any) -> str | None:
    """Why ``value`` is not a Quantity (kube's own message), or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return FORMAT_ERROR  # Quantity's decoding parses the raw JSON (``true``, ``{``) as text
    try:
        parse_quantity(value if isinstance(value, str) else repr(value))
    except ValueError as err:
        return str(err)
    return None


# Go's names for the structs above, for kube's decoding message (a struct not named here is
# reported as the one holding it; a kind's spec and status are <Kind>Spec and <Kind>Status).
_STRUCT_NAMES = {
    id(_META): "ObjectMeta",
    id(_OWNER_REF): "OwnerReference",
    id(_CONTAINER): "Container",
    id(_CONTAINER["ports"][0]): "ContainerPort",
    id(_CONTAINER["env"][0]): "EnvVar",
    id(_CONTAINER["resources"]): "ResourceRequirements",
    id(_POD_SPEC): "PodSpec",
    id(_POD_TEMPLATE): "PodTemplateSpec",
    id(_SELECTOR): "LabelSelector",
    id(_SELECTOR["matchExpressions"][0]): "LabelSelectorRequirement",
    id(_KINDS["Service"]["spec"]["ports"][0]): "ServicePort",
    id(_POLICY_RULE): "PolicyRule",
    id(_NETWORK_POLICY_PORT): "NetworkPolicyPort",
    id(_PEER): "NetworkPolicyPeer",
    id(_PEER["ipBlock"]): "IPBlock",
    id(_BINDING["roleRef"]): "RoleRef",
    id(_BINDING["subjects"][0]): "Subject",
}
# Go integer fields that are int64 (the rest the emulator checks are int32).
_INT64 = frozenset(
    {
        "generation",
        "observedGeneration",
        "deletionGracePeriodSeconds",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
    }
)
# The version a kind is served at when it is not v1, for the message.
_VERSIONS = {"LeaseCandidate": "v1beta1", "HorizontalPodAutoscaler": "v2"}


def json_name(value: Any) -> str:
    """encoding/json's name for a JSON value's type."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _struct_name(schema: Schema, field: str, holder: str, top: bool) -> str:
    named = _STRUCT_NAMES.get(id(schema))
    if named is not None:
        return named
    if top and field in ("spec", "status"):
        return holder + field.title()  # a kind's own: DeploymentSpec
    return holder


def _go_type(schema: Schema, field: str, holder: str, top: bool) -> str:
    """Go's name for the type ``schema`` stands for (``field``: its JSON name)."""
    if isinstance(schema, tuple):
        return "map[string]string"
    if isinstance(schema, list):
        return "[]" + _go_type(schema[0], field, holder, top)
    if isinstance(schema, dict):
        return "v1." + _struct_name(schema, field, holder, top)
    if schema == INT:
        return "int64" if field in _INT64 else "int32"
    if schema == QUANTITY:
        return "resource.Quantity"
    return {STR: "string", BOOL: "bool"}.get(schema, "v1." + field[:1].upper() + field[1:])


Mismatch = tuple[Any, str, str, str]


def _mismatch(value: Any, schema: Schema, path: str, struct: str, field: str) -> Mismatch | None:
    """The first field (in schema order) whose JSON type ``schema`` refuses, as encoding/json
    reports it: (the value, the Go struct holding the field, its path without indices, the
    field's Go type)."""
    if value is None:
        return None
    top = "." not in path
    if isinstance(schema, str):
        if _type_ok(value, schema):
            return None
        return value, struct, path, _go_type(schema, field, struct, top)
    if isinstance(schema, tuple):
        if not isinstance(value, dict):
            return value, struct, path, _go_type(schema, field, struct, top)
        for item in value.values():
            if item is not None and not _type_ok(item, schema[1]):
                return item, struct, path, _go_type(schema[1], field, struct, top)
        return None
    if isinstance(schema, list):
        if not isinstance(value, list):
            return value, struct, path, _go_type(schema, field, struct, top)
        for item in value:
            found = _mismatch(item, schema[0], path, struct, field)
            if found:
                return found
        return None
    if not isinstance(value, dict):
        return value, struct, path, _go_type(schema, field, struct, top)
    inner = _struct_name(schema, field, struct, top) if path else struct
    for key, sub in schema.items():
        found = _mismatch(value.get(key), sub, f"{path}.{key}" if path else key, inner, key)
        if found:
            return found
    return None


def _fits(value: Any, schema: Schema) -> bool:
    """Whether ``_mismatch`` finds nothing wrong: the same checks, walking the value's own fields
    (a few) instead of every field the schema names (dozens), and building no paths."""
    if value is None:
        return True
    if type(schema) is str:
        return _type_ok(value, schema)
    if type(schema) is tuple:
        if type(value) is not dict:
            return False
        return all(item is None or _type_ok(item, schema[1]) for item in value.values())
    if type(schema) is list:
        if type(value) is not list:
            return False
        return all(_fits(item, schema[0]) for item in value)
    if type(value) is not dict:
        return False
    for key, item in value.items():
        sub = schema.get(key)
        if sub is not None and item is not None and not _fits(item, sub):
            return False
    return True


def check_shape(kind: str, obj: Any) -> None:
    """Raise 400 BadRequest if a field the emulator reads has the wrong JSON type."""
    schema = _SCHEMAS.get(kind) or {"metadata": _META}
    if _fits(obj, schema):
        return  # the common case; _mismatch finds (and names) the first bad field in schema order
    found = _mismatch(obj, schema, "", kind, "")
    if found is None:
        return
    value, struct, path, want = found
    version = _VERSIONS.get(kind, "v1")
    if want == "resource.Quantity":
        why = _quantity_error(value)
        raise bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {why}')
    raise bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal '
        f"{json_name(value)} into Go struct field {struct}.{path} of type {want}"
    )
