"""The OpenTelemetry resource that describes this manager replica.

``service.name`` is ``pycm`` unless ``OTEL_SERVICE_NAME`` says otherwise; ``service.version`` is
the package version; ``service.instance.id`` is the elector identity (the same string the trace
events carry as ``instance``). In a pod, the downward-API variables ``POD_NAME``,
``POD_NAMESPACE`` and ``NODE_NAME`` become ``k8s.pod.name``, ``k8s.namespace.name`` and
``k8s.node.name``; ``K8S_CLUSTER_NAME`` becomes ``k8s.cluster.name``. ``OTEL_RESOURCE_ATTRIBUTES``
adds to (and, for keys not set here, is kept by) the SDK's own detector.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

from opentelemetry.sdk.resources import Resource

__all__ = ["build_resource", "pycm_version"]

_DOWNWARD_API = {
    "POD_NAME": "k8s.pod.name",
    "POD_NAMESPACE": "k8s.namespace.name",
    "NODE_NAME": "k8s.node.name",
    "K8S_CLUSTER_NAME": "k8s.cluster.name",
}


def pycm_version() -> str:
    try:
        return metadata.version("pycm")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def build_resource(identity: str, env: Mapping[str, str], *, version: str = "") -> Resource:
    attributes: dict[str, str] = {
        "service.version": version or pycm_version(),
        "service.instance.id": identity,
    }
    # OTEL_SERVICE_NAME (read by the SDK's env detector inside Resource.create) overrides ours.
    if not env.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "pycm"
    for var, key in _DOWNWARD_API.items():
        value = env.get(var, "").strip()
        if value:
            attributes[key] = value
    return Resource.create(attributes)
