"""The ``scale`` subresource: replicas of a Deployment or ReplicaSet as ``autoscaling/v1 Scale``."""

from __future__ import annotations

from typing import Any

from pycm.sim import errors, validation
from pycm.sim.objects import Obj

__all__ = ["scale_of", "scale_replicas", "selector_string"]


def selector_string(selector: Any) -> str:
    if not isinstance(selector, dict):
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    ops = {"In": "in", "NotIn": "notin"}
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        if op in ops:
            parts.append(f"{key} {ops[op]} ({','.join(sorted(expr.get('values') or []))})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(obj: Obj) -> Obj:
    m = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: m[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in m
        },
        "spec": {"replicas": int(spec.get("replicas") or 0)},
        "status": {
            "replicas": int(status.get("replicas") or 0),
            "selector": selector_string(spec.get("selector")),
        },
    }


def scale_replicas(name: str, scale: Obj) -> int:
    """The replicas a Scale asks for (422 unless a non-negative integer)."""
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        cause = validation.invalid_value(
            "spec.replicas", replicas, "must be greater than or equal to 0"
        )
        raise errors.invalid("Scale", name, [cause], "autoscaling")
    return replicas
