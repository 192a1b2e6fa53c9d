"""Defaulting, as kube-apiserver applies it before validation.

Only the defaults that clients of these kinds observe and compare are applied: a Deployment's
replicas, strategy, revisionHistoryLimit and progressDeadlineSeconds; a ReplicaSet's replicas;
a pod spec's (and every pod template's) restartPolicy, terminationGracePeriodSeconds, dnsPolicy,
schedulerName, securityContext and each container's imagePullPolicy, terminationMessage*,
resources (their quantities in kube's canonical form; a Pod's requests default to its limits)
and probes (counts; an HTTP check's path and scheme, as for lifecycle hooks), field references'
apiVersion, file-projecting volumes' defaultMode; a Namespace's
``kubernetes`` finalizer and phase. A controller that hashes templates therefore sees the same
defaulted template it would see from a real cluster.

A field that is absent or ``null`` is defaulted (kube decodes ``null`` into a nil pointer, and
its defaulting fills nil pointers); so is an empty strategy type, restart policy or pull policy
(kube's defaulting compares those strings with ""). A Deployment created without a strategy
thus rolls with maxSurge and maxUnavailable 25% each, as on a real cluster.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pycm.sim.objects import Obj
from pycm.sim.quantity import canonical_quantity

__all__ = [
    "apply_defaults",
    "default",
    "namespace",
    "pod",
    "pod_spec",
    "pod_template",
    "workload",
]


def default(obj: dict[str, Any], key: str, value: Any) -> Any:
    """Set ``obj[key]`` to ``value`` when it is absent or null; return what it holds then."""
    if obj.get(key) is None:
        obj[key] = value
    return obj[key]


def _container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    last = image.rsplit("/", 1)[-1]
    tagged = ":" in last and not last.endswith(":latest")
    if "@" in last:
        tagged = True
    for key, value in (
        ("imagePullPolicy", "IfNotPresent" if tagged else "Always"),
        ("terminationMessagePath", "/dev/termination-log"),
        ("terminationMessagePolicy", "File"),
    ):
        if not container.get(key):
            container[key] = value
    resources = default(container, "resources", {})
    if isinstance(resources, dict):
        for key in ("limits", "requests"):
            if isinstance(resources.get(key), dict):
                _canonical_quantities(resources[key])
    for port in container.get("ports") or []:
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"
    env = container.get("env")
    _field_refs(
        [var.get("valueFrom") for var in env if isinstance(var, dict)]
        if isinstance(env, list)
        else []
    )
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(name)
        if isinstance(probe, dict):
            for count, amount in _PROBE_DEFAULTS:
                default(probe, count, amount)
            _handler(probe)
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _handler(lifecycle[hook])


# SetDefaults_Probe: what a probe that names none of these does.
_PROBE_DEFAULTS = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)


def _handler(handler: dict[str, Any]) -> None:
    """SetDefaults_HTTPGetAction: an HTTP check asks for ``/`` over HTTP."""
    action = handler.get("httpGet")
    if isinstance(action, dict):
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _canonical_quantities(amounts: dict[str, Any]) -> None:
    """Quantities as kube stores them (its decoding reads a Quantity, its encoding writes the
    canonical form: ``0.5`` → ``500m``, a JSON number → a string). One that does not parse
    is left for the shape check's 400."""
    for name, amount in amounts.items():
        if isinstance(amount, (str, int, float)) and not isinstance(amount, bool):
            try:
                amounts[name] = canonical_quantity(_quantity_text(amount))
            except ValueError:
                pass


def _quantity_text(amount: str | int | float) -> str:
    """A JSON number as its text (a float in plain decimal notation, as a manifest writes it)."""
    if isinstance(amount, float):
        return format(Decimal(repr(amount)), "f")
    return str(amount)


def pod_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    for key, value in (
        ("restartPolicy", "Always"),
        ("dnsPolicy", "ClusterFirst"),
        ("schedulerName", "default-scheduler"),
    ):
        if not spec.get(key):
            spec[key] = value
    default(spec, "terminationGracePeriodSeconds", 30)
    default(spec, "securityContext", {})
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if isinstance(container, dict):
                _container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _volume(volume)


_FILE_MODE = 0o644  # the defaultMode of the volumes that project files (420 in JSON)


def _volume(volume: dict[str, Any]) -> None:
    """SetDefaults_{ConfigMap,Secret,DownwardAPI,Projected}VolumeSource (file mode 0644),
    SetDefaults_HostPathVolumeSource (type ""), a projected token's expirationSeconds (3600)
    and each field reference's apiVersion."""
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            default(volume[source], "defaultMode", _FILE_MODE)
    if isinstance(volume.get("hostPath"), dict):
        default(volume["hostPath"], "type", "")
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        _field_refs(downward.get("items"))
    projected = volume.get("projected")
    for item in (projected.get("sources") or []) if isinstance(projected, dict) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("serviceAccountToken"), dict):
            default(item["serviceAccountToken"], "expirationSeconds", 3600)
        if isinstance(item.get("downwardAPI"), dict):
            _field_refs(item["downwardAPI"].get("items"))


def _field_refs(items: Any) -> None:
    """SetDefaults_ObjectFieldSelector: a field reference reads ``v1`` unless it says."""
    for item in items if isinstance(items, list) else []:
        ref = item.get("fieldRef") if isinstance(item, dict) else None
        if isinstance(ref, dict) and not ref.get("apiVersion"):
            ref["apiVersion"] = "v1"


def pod(spec: Any) -> None:
    """SetDefaults_Pod (a Pod's only, never a template's): a container with a limit and no
    request for a resource requests its limit — why a pod with only limits is Guaranteed —
    and service links are on."""
    if not isinstance(spec, dict):
        return
    default(spec, "enableServiceLinks", True)
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict):
                continue
            limits = resources.get("limits")
            if not isinstance(limits, dict) or not limits:
                continue
            requests = default(resources, "requests", {})
            if isinstance(requests, dict):
                for name, amount in limits.items():
                    requests.setdefault(name, amount)


def workload(obj: Obj, deployment: bool) -> None:
    """A Deployment's (``deployment``) or a ReplicaSet's defaults."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    default(spec, "replicas", 1)
    if deployment:
        # SetDefaults_Deployment: type RollingUpdate; for a rolling update both numbers 25%.
        strategy = default(spec, "strategy", {})
        if isinstance(strategy, dict):
            if not strategy.get("type"):
                strategy["type"] = "RollingUpdate"
            if strategy["type"] == "RollingUpdate":
                rolling = default(strategy, "rollingUpdate", {})
                if isinstance(rolling, dict):
                    default(rolling, "maxUnavailable", "25%")
                    default(rolling, "maxSurge", "25%")
        default(spec, "revisionHistoryLimit", 10)
        default(spec, "progressDeadlineSeconds", 600)
    pod_template(spec.get("template"))


def pod_template(template: Any) -> None:
    """A pod template's defaults (its spec's, and the null creationTimestamp kube prints)."""
    if isinstance(template, dict):
        template.setdefault("metadata", {})
        if isinstance(template["metadata"], dict):
            template["metadata"].setdefault("creationTimestamp", None)
        pod_spec(template.get("spec"))


def namespace(obj: Obj) -> None:
    """A Namespace's ``kubernetes`` finalizer and phase."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", ["kubernetes"])
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Active")


def apply_defaults(kind: str, obj: Obj) -> None:
    """Default ``obj`` of the built-in ``kind`` in place, as its strategy does (for tests that
    compare a served object with a locally defaulted one; the store asks the strategy)."""
    from pycm.sim.resources import REGISTRY  # the registry's strategies import this module

    for resource in REGISTRY.resources.values():
        if resource.kind == kind:
            resource.strategy.default(obj)
            return
