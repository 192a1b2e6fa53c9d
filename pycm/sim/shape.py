"""JSON shape checks: what kube-apiserver's typed decoding refuses with a 400.

kube decodes a body into Go structs before it validates anything, so a ``spec`` that is a
boolean or a ``replicas`` that is a string fails as BadRequest ("cannot unmarshal …"), not as
Invalid. The emulator keeps plain dicts, so it checks the fields its own logic reads against
this compact schema first; unknown fields pass (kube drops them), ``null`` means absent.
"""

from __future__ import annotations

from typing import Any

from pycm.sim.errors import bad_request

__all__ = ["check_shape"]

STR, INT, BOOL, OBJ = "string", "integer", "boolean", "object"
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
_CONTAINER = {
    "name": STR,
    "image": STR,
    "imagePullPolicy": STR,
    "command": [STR],
    "args": [STR],
    "ports": [{"containerPort": INT, "name": STR, "protocol": STR}],
    "env": [{"name": STR, "value": STR}],
    "resources": {"limits": MAP_STR, "requests": MAP_STR},
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
_SELECTOR = {
    "matchLabels": MAP_STR,
    "matchExpressions": [{"key": STR, "operator": STR, "values": [STR]}],
}
_WORKLOAD_SPEC = {
    "replicas": INT,
    "minReadySeconds": INT,
    "revisionHistoryLimit": INT,
    "progressDeadlineSeconds": INT,
    "paused": BOOL,
    "selector": _SELECTOR,
    "template": {"metadata": _META, "spec": _POD_SPEC},
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
_POLICY_RULE = {
    key: [STR] for key in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
}
_BINDING = {
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
    return isinstance(value, dict)


def _go_type(schema: Schema) -> str:
    if isinstance(schema, dict) or (isinstance(schema, tuple) and schema[0] == "map"):
        return "object"
    if isinstance(schema, list):
        return "array"
    return str(schema)


def _check(value: Any, schema: Schema, path: str) -> str | None:
    if value is None:
        return None
    if isinstance(schema, str):
        return None if _type_ok(value, schema) else path
    if isinstance(schema, tuple):
        if not isinstance(value, dict):
            return path
        for key, item in value.items():
            if item is not None and not _type_ok(item, schema[1]):
                return f"{path}[{key}]"
        return None
    if isinstance(schema, list):
        if not isinstance(value, list):
            return path
        for i, item in enumerate(value):
            bad = _check(item, schema[0], f"{path}[{i}]")
            if bad:
                return bad
        return None
    if not isinstance(value, dict):
        return path
    for key, sub in schema.items():
        bad = _check(value.get(key), sub, f"{path}.{key}" if path else key)
        if bad:
            return bad
    return None


def _fits(value: Any, schema: Schema) -> bool:
    """Whether ``_check`` finds nothing wrong: the same checks, walking the value's own fields
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


def _schema_at(schema: Schema, path: str) -> Schema:
    for part in path.replace("]", "").replace("[", ".").split("."):
        if isinstance(schema, list):
            schema = schema[0]
        elif isinstance(schema, tuple):
            return schema[1]
        elif isinstance(schema, dict) and part in schema:
            schema = schema[part]
    return schema


def check_shape(kind: str, obj: Any) -> None:
    """Raise 400 BadRequest if a field the emulator reads has the wrong JSON type."""
    schema = _SCHEMAS.get(kind) or {"metadata": _META}
    if _fits(obj, schema):
        return  # the common case; _check finds (and names) the first bad field in schema order
    bad = _check(obj, schema, "")
    if bad is None:
        return
    want = _go_type(_schema_at(schema, bad))
    raise bad_request(
        f"{kind} in version cannot be handled as a {kind}: json: cannot unmarshal into Go "
        f"struct field {kind}.{bad}: want {want}"
    )
