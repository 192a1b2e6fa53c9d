"""Defaulting, as kube-apiserver applies it before validation.

Only the defaults that clients of these kinds observe and compare are applied: a Deployment's
replicas, strategy, revisionHistoryLimit and progressDeadlineSeconds; a ReplicaSet's replicas;
a pod spec's (and every pod template's) restartPolicy, terminationGracePeriodSeconds, dnsPolicy,
schedulerName, securityContext and each container's imagePullPolicy, terminationMessage* and
resources; a Namespace's ``kubernetes`` finalizer and phase. A controller that hashes templates
therefore sees the same defaulted template it would see from a real cluster.
"""

from __future__ import annotations

from typing import Any

from pycm.sim.objects import Obj

__all__ = ["apply_defaults"]


def _container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    last = image.rsplit("/", 1)[-1]
    tagged = ":" in last and not last.endswith(":latest")
    if "@" in last:
        tagged = True
    container.setdefault("imagePullPolicy", "IfNotPresent" if tagged else "Always")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if isinstance(container, dict):
                _container(container)


def _workload(obj: Obj, deployment: bool) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    if deployment:
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    template = spec.get("template")
    if isinstance(template, dict):
        template.setdefault("metadata", {})
        if isinstance(template["metadata"], dict):
            template["metadata"].setdefault("creationTimestamp", None)
        pod_spec(template.get("spec"))


def apply_defaults(kind: str, obj: Obj) -> None:
    """Default ``obj`` of ``kind`` in place."""
    if kind == "Pod":
        pod_spec(obj.get("spec"))
    elif kind == "Deployment":
        _workload(obj, deployment=True)
    elif kind == "ReplicaSet":
        _workload(obj, deployment=False)
    elif kind == "Namespace":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("finalizers", ["kubernetes"])
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("phase", "Active")
