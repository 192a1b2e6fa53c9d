"""The registry of kinds the emulator serves.

A :class:`Resource` carries what discovery publishes (plural, kind, verbs, short names,
categories, subresources) and what the store needs to know about a kind's semantics: whether it
has a status subresource (a PUT to the main resource then keeps the stored status and a PUT to
``/status`` changes only the status), and whether a spec change bumps ``metadata.generation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["REGISTRY", "Registry", "Resource", "ResourceKey"]

# (group, plural): how the store keys a kind. The version is not part of it: every kind is
# served at exactly one version.
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
    verbs: tuple[str, ...] = _ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Subresources served under <plural>/<name>/<sub>: "status", "scale", "token" (create only).
    subresources: tuple[str, ...] = ()
    # Does a spec change bump metadata.generation (and only a spec change)?
    generation_on_spec: bool = False
    # Field selectors kube-apiserver accepts for this kind beyond metadata.name/namespace.
    field_labels: tuple[str, ...] = ()
    # Create-only kinds (reviews) are never stored.
    stored: bool = True

    @property
    def key(self) -> ResourceKey:
        return (self.group, self.plural)

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


@dataclass
class Registry:
    """Kinds by (group, plural), and group versions in the order discovery lists them."""

    resources: dict[ResourceKey, Resource] = field(default_factory=dict)

    def add(self, resource: Resource) -> None:
        if resource.key in self.resources:
            raise ValueError(f"resource {resource.plural}.{resource.group} registered twice")
        self.resources[resource.key] = resource

    def get(self, group: str, version: str, plural: str) -> Resource | None:
        resource = self.resources.get((group, plural))
        if resource is None or resource.version != version:
            return None
        return resource

    def by_kind(self, group: str, kind: str) -> Resource | None:
        for resource in self.resources.values():
            if resource.group == group and resource.kind == kind:
                return resource
        return None

    def group_versions(self) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        for resource in self.resources.values():
            gv = (resource.group, resource.version)
            if gv not in seen:
                seen.append(gv)
        return seen

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.resources.values() if (r.group, r.version) == (group, version)]


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
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            short_names=("ns",),
            subresources=("status",),
            field_labels=("status.phase",),
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
            short_names=("no",),
            subresources=("status",),
            field_labels=("spec.unschedulable",),
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
            short_names=("po",),
            categories=("all",),
            subresources=("status",),
            field_labels=(
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ),
        )
    )
    add(
        Resource(
            "",
            "v1",
            "events",
            "Event",
            "event",
            True,
            short_names=("ev",),
            field_labels=(
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ),
        )
    )
    add(Resource("", "v1", "configmaps", "ConfigMap", "configmap", True, short_names=("cm",)))
    add(
        Resource(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            "serviceaccount",
            True,
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
            short_names=("deploy",),
            categories=("all",),
            subresources=("status", "scale"),
            generation_on_spec=True,
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
            short_names=("rs",),
            categories=("all",),
            subresources=("status", "scale"),
            generation_on_spec=True,
            field_labels=("status.replicas",),
        )
    )
    add(Resource("coordination.k8s.io", "v1", "leases", "Lease", "lease", True))
    # Stored as given, for manifests (kubectl apply of deploy/kubernetes): no behaviour.
    add(Resource("", "v1", "services", "Service", "service", True, short_names=("svc",)))
    add(
        Resource(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            "poddisruptionbudget",
            True,
            short_names=("pdb",),
            subresources=("status",),
        )
    )
    rbac = "rbac.authorization.k8s.io"
    add(Resource(rbac, "v1", "clusterroles", "ClusterRole", "clusterrole", False))
    add(
        Resource(
            rbac, "v1", "clusterrolebindings", "ClusterRoleBinding", "clusterrolebinding", False
        )
    )
    add(Resource(rbac, "v1", "roles", "Role", "role", True))
    add(Resource(rbac, "v1", "rolebindings", "RoleBinding", "rolebinding", True))
    add(
        Resource(
            "authentication.k8s.io",
            "v1",
            "tokenreviews",
            "TokenReview",
            "tokenreview",
            False,
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
            verbs=("create",),
            stored=False,
        )
    )
    return registry


REGISTRY: Registry = _build()
