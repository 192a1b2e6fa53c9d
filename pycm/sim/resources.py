"""The registry of kinds the emulator serves.

A :class:`Resource` is what discovery publishes about a kind (group, version, plural, kind,
verbs, short names, categories, subresources, scope) and its :class:`~pycm.sim.registry.
strategy.Strategy`: how objects of the kind are defaulted, validated, prepared for writes,
printed, selected and deleted (see :mod:`pycm.sim.registry`). The store, discovery and request
routing read kinds only from a :class:`Registry`.

Each store has a registry of its own (a copy of :data:`REGISTRY`, the built-in kinds), which
can change while it serves: :meth:`Registry.add` serves one more version of a kind,
:meth:`Registry.remove` stops serving a kind. ``Store.serve`` / ``Store.unserve`` wrap them
with the store's tables and watches; that is how a CustomResourceDefinition plugs in.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pycm.sim.crd.kind import STRATEGY as CRD_STRATEGY
from pycm.sim.registry import (
    cronjobs,
    daemonsets,
    endpointslices,
    horizontalpodautoscalers,
    ingresses,
    jobs,
    leasecandidates,
    networkpolicies,
    persistentvolumeclaims,
    poddisruptionbudgets,
    rbac,
    secrets,
    services,
    statefulsets,
)
from pycm.sim.registry.events import STRATEGY as EVENTS
from pycm.sim.registry.namespaces import STRATEGY as NAMESPACES
from pycm.sim.registry.plain import CONFIG_MAP, LEASE, NODE, PlainStrategy
from pycm.sim.registry.pods import STRATEGY as PODS
from pycm.sim.registry.strategy import Strategy
from pycm.sim.registry.workloads import DEPLOYMENT, REPLICA_SET

__all__ = ["REGISTRY", "Registry", "Resource", "ResourceKey"]

# (group, plural): how the store keys a kind. The version is not part of it: a kind served at
# several versions (a custom resource's) is one table, stored at its storage version.
ResourceKey = tuple[str, str]

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    singular: str
    namespaced: bool
    strategy: Strategy
    verbs: tuple[str, ...] = _ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Subresources served under <plural>/<name>/<sub>: "status", "scale", "token" (create only).
    subresources: tuple[str, ...] = ()
    # Create-only kinds (reviews) are never stored.
    stored: bool = True
    # A list's kind when it is not <Kind>List (a CRD's names.listKind).
    custom_list_kind: str = ""

    @property
    def key(self) -> ResourceKey:
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return self.custom_list_kind or f"{self.kind}List"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def has_scale(self) -> bool:
        return "scale" in self.subresources

    @property
    def field_labels(self) -> tuple[str, ...]:
        """Field selectors the kind accepts beyond metadata.name/namespace."""
        return self.strategy.field_labels


@dataclass
class Registry:
    """Kinds by (group, plural) and the versions they are served at, in the order discovery
    lists them.

    Invariant: ``resources[key]`` is the first version added for ``key`` (its storage
    version) and ``_served[(group, version, plural)]`` holds every version served, that one
    included; both change only through :meth:`add` and :meth:`remove`.
    """

    resources: dict[ResourceKey, Resource] = field(default_factory=dict)
    _served: dict[tuple[str, str, str], Resource] = field(default_factory=dict)

    def add(self, resource: Resource) -> None:
        """Serve ``resource`` (a kind, or one more version of a kind already served: its
        plural, kind and scope must then agree). ValueError if that version is served."""
        served = (resource.group, resource.version, resource.plural)
        if served in self._served:
            raise ValueError(
                f"resource {resource.plural}.{resource.version}.{resource.group} registered twice"
            )
        if resource.has_status != resource.strategy.status_subresource:
            raise ValueError(f"{resource.plural}: the status subresource and strategy disagree")
        storage = self.resources.get(resource.key)
        if storage is None:
            self.resources[resource.key] = resource
        elif (storage.kind, storage.namespaced) != (resource.kind, resource.namespaced):
            raise ValueError(f"{resource.plural}.{resource.group}: versions disagree on the kind")
        self._served[served] = resource

    def remove(self, group: str, plural: str) -> list[Resource]:
        """Stop serving every version of ``plural`` in ``group``; what was served."""
        gone = [r for k, r in self._served.items() if (k[0], k[2]) == (group, plural)]
        for resource in gone:
            del self._served[(resource.group, resource.version, resource.plural)]
        self.resources.pop((group, plural), None)
        return gone

    def use_strategy(self, group: str, plural: str, strategy: Strategy) -> None:
        """Serve every version of ``plural`` in ``group`` with ``strategy`` instead (the
        emulator's feature gates choose a kind's strategy: a gated field's handling)."""
        for key, resource in self._served.items():
            if (key[0], key[2]) == (group, plural):
                self._served[key] = replace(resource, strategy=strategy)
        if (group, plural) in self.resources:
            self.resources[(group, plural)] = replace(
                self.resources[(group, plural)], strategy=strategy
            )

    def copy(self) -> Registry:
        """A registry serving the same kinds, changed independently of this one."""
        return Registry(dict(self.resources), dict(self._served))

    def get(self, group: str, version: str, plural: str) -> Resource | None:
        return self._served.get((group, version, plural))

    def by_kind(self, group: str, kind: str) -> Resource | None:
        for resource in self.resources.values():
            if resource.group == group and resource.kind == kind:
                return resource
        return None

    def group_versions(self) -> list[tuple[str, str]]:
        seen: dict[tuple[str, str], None] = {}
        for resource in self._served.values():
            seen[(resource.group, resource.version)] = None
        return list(seen)

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._served.values() if (r.group, r.version) == (group, version)]


def _build() -> Registry:
    registry = Registry()
    add = registry.add
    add(
        Resource(
            "",
            "v1",
            "namespaces",
            "Namespace",
            "namespace",
            False,
            NAMESPACES,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            short_names=("ns",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "",
            "v1",
            "nodes",
            "Node",
            "node",
            False,
            NODE,
            short_names=("no",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "",
            "v1",
            "pods",
            "Pod",
            "pod",
            True,
            PODS,
            short_names=("po",),
            categories=("all",),
            subresources=("status",),
        )
    )
    add(Resource("", "v1", "events", "Event", "event", True, EVENTS, short_names=("ev",)))
    add(
        Resource(
            "", "v1", "configmaps", "ConfigMap", "configmap", True, CONFIG_MAP, short_names=("cm",)
        )
    )
    add(
        Resource(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            "serviceaccount",
            True,
            PlainStrategy("ServiceAccount"),
            short_names=("sa",),
            subresources=("token",),
        )
    )
    add(
        Resource(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            "deployment",
            True,
            DEPLOYMENT,
            short_names=("deploy",),
            categories=("all",),
            subresources=("status", "scale"),
        )
    )
    add(
        Resource(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            "replicaset",
            True,
            REPLICA_SET,
            short_names=("rs",),
            categories=("all",),
            subresources=("status", "scale"),
        )
    )
    add(Resource("coordination.k8s.io", "v1", "leases", "Lease", "lease", True, LEASE))
    add(
        Resource(
            "coordination.k8s.io",
            "v1beta1",
            "leasecandidates",
            "LeaseCandidate",
            "leasecandidate",
            True,
            leasecandidates.STRATEGY,
        )
    )
    add(
        Resource(
            "",
            "v1",
            "services",
            "Service",
            "service",
            True,
            services.STRATEGY,
            short_names=("svc",),
            categories=("all",),
            subresources=("status",),
        )
    )
    # The kinds operators own: stored with kube's validation and defaults, no controllers.
    add(Resource("", "v1", "secrets", "Secret", "secret", True, secrets.STRATEGY))
    add(
        Resource(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            "persistentvolumeclaim",
            True,
            persistentvolumeclaims.STRATEGY,
            short_names=("pvc",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            "statefulset",
            True,
            statefulsets.STRATEGY,
            short_names=("sts",),
            categories=("all",),
            subresources=("status", "scale"),
        )
    )
    add(
        Resource(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            "daemonset",
            True,
            daemonsets.STRATEGY,
            short_names=("ds",),
            categories=("all",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "batch",
            "v1",
            "jobs",
            "Job",
            "job",
            True,
            jobs.STRATEGY,
            categories=("all",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            "cronjob",
            True,
            cronjobs.STRATEGY,
            short_names=("cj",),
            categories=("all",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "networking.k8s.io",
            "v1",
            "ingresses",
            "Ingress",
            "ingress",
            True,
            ingresses.STRATEGY,
            short_names=("ing",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            "endpointslice",
            True,
            endpointslices.STRATEGY,
        )
    )
    add(
        Resource(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscaler",
            True,
            horizontalpodautoscalers.STRATEGY,
            short_names=("hpa",),
            categories=("all",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            "poddisruptionbudget",
            True,
            poddisruptionbudgets.STRATEGY,
            short_names=("pdb",),
            subresources=("status",),
        )
    )
    add(
        Resource(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            "networkpolicy",
            True,
            networkpolicies.STRATEGY,
            short_names=("netpol",),
        )
    )
    for plural, kind, namespaced, strategy in (
        ("clusterroles", "ClusterRole", False, rbac.CLUSTER_ROLE),
        ("clusterrolebindings", "ClusterRoleBinding", False, rbac.CLUSTER_ROLE_BINDING),
        ("roles", "Role", True, rbac.ROLE),
        ("rolebindings", "RoleBinding", True, rbac.ROLE_BINDING),
    ):
        add(Resource(rbac.RBAC_GROUP, "v1", plural, kind, kind.lower(), namespaced, strategy))
    add(
        Resource(
            "authentication.k8s.io",
            "v1",
            "tokenreviews",
            "TokenReview",
            "tokenreview",
            False,
            PlainStrategy("TokenReview"),
            verbs=("create",),
            stored=False,
        )
    )
    add(
        Resource(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
            "subjectaccessreview",
            False,
            PlainStrategy("SubjectAccessReview"),
            verbs=("create",),
            stored=False,
        )
    )
    add(
        Resource(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            "customresourcedefinition",
            False,
            CRD_STRATEGY,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            subresources=("status",),
        )
    )
    return registry


REGISTRY: Registry = _build()
"""The built-in kinds (each store serves a copy: see the module docstring)."""
