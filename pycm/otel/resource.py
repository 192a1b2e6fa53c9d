"""The OpenTelemetry resource that describes this manager replica.

``service.name`` is ``pycm`` unless ``OTEL_SERVICE_NAME`` says otherwise; ``service.version`` is
the package version; ``service.instance.id`` is the elector identity (the same string the trace
events carry as ``instance``). In a pod, the downward-API variables ``POD_NAME``,
``POD_NAMESPACE`` and ``NODE_NAME`` become ``k8s.pod.name``, ``k8s.namespace.name`` and
``k8s.node.name``; ``K8S_CLUSTER_NAME`` becomes ``k8s.cluster.name``.
``OTEL_RESOURCE_ATTRIBUTES`` adds attributes (ours win on a clash; its ``service.name`` counts
when ``OTEL_SERVICE_NAME`` is not set). The environment is passed in, so tests give a dict; the
SDK's own env detectors are not used.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from urllib.parse import unquote

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


def _env_attributes(text: str) -> dict[str, str]:
    """OTEL_RESOURCE_ATTRIBUTES: ``key=value`` pairs, comma-separated, values percent-encoded."""
    out: dict[str, str] = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            out[key.strip()] = unquote(value.strip())
    return out


def build_resource(identity: str, env: Mapping[str, str], *, version: str = "") -> Resource:
    """The resource, from ``env`` (os.environ in the manager; a dict in tests)."""
    attributes: dict[str, str] = {
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "opentelemetry",
        "telemetry.sdk.version": _sdk_version(),
    }
    attributes.update(_env_attributes(env.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    for var, key in _DOWNWARD_API.items():
        value = env.get(var, "").strip()
        if value:
            attributes[key] = value
    attributes["service.name"] = (
        env.get("OTEL_SERVICE_NAME", "").strip() or attributes.get("service.name") or "pycm"
    )
    attributes["service.version"] = version or pycm_version()
    attributes["service.instance.id"] = identity
    return Resource(attributes)


def _sdk_version() -> str:
    try:
        return metadata.version("opentelemetry-sdk")
    except metadata.PackageNotFoundError:
        return ""
