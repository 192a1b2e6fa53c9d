"""Object references: ``resource/namespace/name``, and the one map from a kind to its resource.

Traces name objects three ways: a reconcile by its controller's resource and key
(``ReconcileStarted.resource`` and ``key``), an API call by ``resource``/``namespace``/``name``,
and a watch event or a core/v1 Event by the object's *kind* (``trigger_kind``,
``EventRecorded.object_kind``). :func:`resource_of_kind` is where a kind becomes a resource
(Deployment → deployments): a table of the kinds pycm and Kubernetes' core API know, else the
lower-case plural (``Policy`` → ``policies``, ``Ingress`` → ``ingresses``). Every history and
every chain of causes goes through it, so the three spellings meet on one key.

:func:`parse_ref` reads what a user types (``pycm why``, the HTTP route, the dashboard's search
box): ``resource/namespace/name``, ``resource/name`` for a cluster-scoped object, a kubectl
short name or singular (``deploy``, ``rs``, ``pod``) for the resource. Bad input is a
:class:`RefError` with a one-line message; a resource that is neither built in nor in ``known``
is an :class:`UnknownResource` (a subclass, so callers that only care about "bad" catch one).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = [
    "KIND_RESOURCES",
    "ObjectRef",
    "RefError",
    "UnknownResource",
    "known_resources",
    "parse_ref",
    "resource_of_kind",
]

KIND_RESOURCES: dict[str, str] = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "Pod": "pods",
    "Event": "events",
    "Lease": "leases",
    "Namespace": "namespaces",
    "Node": "nodes",
    "Service": "services",
    "ServiceAccount": "serviceaccounts",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "ControllerRevision": "controllerrevisions",
    "Job": "jobs",
    "CronJob": "cronjobs",
    "Endpoints": "endpoints",
    "EndpointSlice": "endpointslices",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Ingress": "ingresses",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "CustomResourceDefinition": "customresourcedefinitions",
}

# kubectl's short names and the singular of each built-in resource.
_ALIASES: dict[str, str] = {
    "deploy": "deployments",
    "rs": "replicasets",
    "po": "pods",
    "ev": "events",
    "ns": "namespaces",
    "no": "nodes",
    "svc": "services",
    "sa": "serviceaccounts",
    "cm": "configmaps",
    "sts": "statefulsets",
    "ds": "daemonsets",
    "cj": "cronjobs",
    "ep": "endpoints",
    "pv": "persistentvolumes",
    "pvc": "persistentvolumeclaims",
    "ing": "ingresses",
    "hpa": "horizontalpodautoscalers",
    "pdb": "poddisruptionbudgets",
    "crd": "customresourcedefinitions",
}
_ALIASES.update({kind.lower(): resource for kind, resource in KIND_RESOURCES.items()})

_CLUSTER_SCOPED = frozenset(
    {"namespaces", "nodes", "persistentvolumes", "customresourcedefinitions"}
)
_BUILT_IN = frozenset(KIND_RESOURCES.values())
# A resource name (lower-case plural, maybe with a group: widgets.example.com) and a namespace
# or object name (DNS subdomain: lower-case alphanumerics, '-' and '.').
_RESOURCE = re.compile(r"[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)*")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_MAX_NAME = 253

_of_kind: dict[str, str] = dict(KIND_RESOURCES)  # memo of resource_of_kind (bounded below)
_MAX_MEMO = 1024


class RefError(ValueError):
    """A reference that is not ``resource/namespace/name`` (the message is one line)."""


class UnknownResource(RefError):
    """A resource that is neither built in nor one the state has seen."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One object: its resource (lower-case plural), namespace ("" cluster-scoped) and name."""

    resource: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The work-queue key: namespace/name, or name when cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def path(self) -> str:
        """``resource/namespace/name`` (``resource/name`` when cluster-scoped)."""
        return f"{self.resource}/{self.key}"

    def __str__(self) -> str:
        return f"{self.resource} {self.key}"


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def resource_of_kind(kind: str) -> str:
    """The resource of ``kind`` (``Deployment`` → ``deployments``); "" for ""."""
    resource = _of_kind.get(kind)
    if resource is None:
        resource = _plural(kind.lower()) if kind else ""
        if len(_of_kind) < _MAX_MEMO + len(KIND_RESOURCES):
            _of_kind[kind] = resource
    return resource


def known_resources() -> frozenset[str]:
    """The built-in resources (those of :data:`KIND_RESOURCES`)."""
    return _BUILT_IN


def _resource(text: str, known: Collection[str]) -> str:
    word = text.lower()
    if word in _BUILT_IN or word in known:
        return word
    alias = _ALIASES.get(word)
    if alias is not None:
        return alias
    if not _RESOURCE.fullmatch(word):
        raise RefError(f"{text!r} is not a resource name")
    raise UnknownResource(
        f"unknown resource {text!r} (built in: deployments, replicasets, pods, …)"
    )


def parse_ref(text: str, known: Collection[str] = ()) -> ObjectRef:
    """``resource/namespace/name`` (or ``resource/name``) as an :class:`ObjectRef`.

    ``known``: resources besides the built-in ones (those a state has seen, a plugin's)."""
    if not isinstance(text, str) or not text.strip():
        raise RefError("want resource/namespace/name, e.g. deployments/default/web")
    parts = text.strip().strip("/").split("/")
    if len(parts) == 3:
        res, namespace, name = parts
    elif len(parts) == 2:
        res, name = parts
        namespace = ""
    else:
        raise RefError(f"{text!r}: want resource/namespace/name, e.g. deployments/default/web")
    resource = _resource(res, known)
    for label, value in (("namespace", namespace), ("name", name)):
        if not value and label == "name":
            raise RefError(f"{text!r}: the name is empty")
        if value and (len(value) > _MAX_NAME or not _NAME.fullmatch(value)):
            raise RefError(f"{text!r}: {value!r} is not a valid {label}")
    if not namespace and resource not in _CLUSTER_SCOPED and resource in _BUILT_IN:
        raise RefError(f"{text!r}: {resource} are namespaced: want {resource}/namespace/name")
    return ObjectRef(resource, namespace, name)
