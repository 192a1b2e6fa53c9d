"""rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding (kube's
``pkg/registry/rbac/<kind>`` strategies and ``pkg/apis/rbac/validation``).

Stored and validated, never enforced (authorization is the emulator's policy file):

- names are path segments, not DNS names (``system:controller:foo`` is valid; ``.``, ``..``,
  ``/`` and ``%`` are not), for the objects and for a binding's ``roleRef.name``;
- a rule needs ``verbs``, and either ``apiGroups`` and ``resources`` (``resourceNames`` with one
  resource at most) or ``nonResourceURLs`` alone — never in a namespaced Role;
- a ClusterRole's ``aggregationRule`` needs a ``clusterRoleSelectors`` entry, each a valid
  label selector (no controller aggregates the rules);
- a binding's ``roleRef`` (``apiGroup`` defaulted to the RBAC group) names a Role or
  ClusterRole (a ClusterRoleBinding: a ClusterRole), and cannot change; each subject is a
  ServiceAccount (a DNS-subdomain name, no apiGroup, a namespace in a ClusterRoleBinding), a
  User or a Group (apiGroup defaulted to the RBAC group).

Tables as kube prints them: roles Name / Created At, bindings Name / Role / Age with the wide
Users / Groups / ServiceAccounts.
"""

from __future__ import annotations

from typing import Any

from pycm.sim import validation
from pycm.sim.errors import Cause
from pycm.sim.gostrconv import go_strings
from pycm.sim.objects import Obj
from pycm.sim.registry.strategy import Strategy
from pycm.sim.selectors import match_label_selector_object
from pycm.sim.tables import Printer, age, col, name_of

__all__ = ["CLUSTER_ROLE", "CLUSTER_ROLE_BINDING", "RBAC_GROUP", "ROLE", "ROLE_BINDING"]

RBAC_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return {"reason": "FieldValueRequired", "message": message, "field": field}


def _rule_causes(rule: Any, namespaced: bool, where: str) -> list[Cause]:
    if not isinstance(rule, dict):
        return []
    causes: list[Cause] = []
    if not rule.get("verbs"):
        causes.append(_required(f"{where}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        shown = go_strings(urls)
        if namespaced:
            why = "namespaced rules cannot apply to non-resource URLs"
            causes.append(validation.invalid_shown(f"{where}.nonResourceURLs", shown, why))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            why = "rules cannot apply to both regular resources and non-resource URLs"
            causes.append(validation.invalid_shown(f"{where}.nonResourceURLs", shown, why))
        return causes
    if not rule.get("apiGroups"):
        why = "resource rules must supply at least one api group"
        causes.append(_required(f"{where}.apiGroups", why))
    resources = rule.get("resources") or []
    if not resources:
        causes.append(
            _required(f"{where}.resources", "resource rules must supply at least one resource")
        )
    if rule.get("resourceNames") and len(resources) > 1:
        why = "resource names cannot apply to multiple resources"
        causes.append(_required(f"{where}.resourceNames", why))
    return causes


def _role_causes(obj: Obj, namespaced: bool) -> list[Cause]:
    causes = validation.metadata_causes(obj, False, validation.path_segment_causes)
    for i, rule in enumerate(obj.get("rules") or []):
        causes += _rule_causes(rule, namespaced, f"rules[{i}]")
    return causes


def _aggregation_causes(rule: Any) -> list[Cause]:
    if not isinstance(rule, dict):
        return []
    field = "aggregationRule.clusterRoleSelectors"
    selectors = rule.get("clusterRoleSelectors") or []
    if not selectors:
        why = "at least one clusterRoleSelector required if aggregationRule is non-nil"
        return [_required(field, why)]
    causes: list[Cause] = []
    for i, selector in enumerate(selectors):
        try:
            match_label_selector_object(selector)
        except Exception:  # an unknown operator or a bad value is a cause, not a crash
            causes.append(
                validation.invalid_value(f"{field}[{i}]", str(selector), "invalid label selector.")
            )
    return causes


def _subject_causes(subject: Any, namespaced: bool, where: str) -> list[Cause]:
    if not isinstance(subject, dict):
        return []
    causes: list[Cause] = []
    name = subject.get("name") or ""
    group = subject.get("apiGroup") or ""
    if not name:
        causes.append(_required(f"{where}.name"))
    kind = subject.get("kind") or ""
    if kind == "ServiceAccount":
        if name:
            causes += validation.dns_subdomain_causes(f"{where}.name", name)
        if group:
            causes.append(validation.not_supported(f"{where}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            causes.append(_required(f"{where}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            what = "user" if kind == "User" else "group"
            causes.append(
                validation.invalid_value(f"{where}.name", name, f"{what} name cannot be empty")
            )
        if group != RBAC_GROUP:
            causes.append(validation.not_supported(f"{where}.apiGroup", group, [RBAC_GROUP]))
    else:
        causes.append(validation.not_supported(f"{where}.kind", kind, _SUBJECT_KINDS))
    return causes


def _role_ref(obj: Obj) -> dict[str, Any]:
    ref = obj.get("roleRef")
    return ref if isinstance(ref, dict) else {}


def _binding_causes(obj: Obj, namespaced: bool) -> list[Cause]:
    causes = validation.metadata_causes(obj, False, validation.path_segment_causes)
    ref = _role_ref(obj)
    group = ref.get("apiGroup") or ""
    if group != RBAC_GROUP:
        causes.append(validation.not_supported("roleRef.apiGroup", group, [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        causes.append(validation.not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        causes.append(_required("roleRef.name"))
    else:
        causes += validation.path_segment_causes("roleRef.name", name)
    for i, subject in enumerate(obj.get("subjects") or []):
        causes += _subject_causes(subject, namespaced, f"subjects[{i}]")
    return causes


def _go_role_ref(ref: dict[str, Any]) -> str:
    """A RoleRef as Go's %#v prints it (kube's "cannot change roleRef" shows it so)."""
    fields = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))
    return "rbac.RoleRef{" + ", ".join(f'{go}:"{ref.get(js) or ""}"' for go, js in fields) + "}"


class RoleStrategy(Strategy):
    """Role (``namespaced``) or ClusterRole."""

    def __init__(self, kind: str, namespaced: bool) -> None:
        super().__init__(kind)
        self.namespaced = namespaced

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _role_causes(obj, self.namespaced)
        if not self.namespaced and obj.get("aggregationRule") is not None:
            causes += _aggregation_causes(obj["aggregationRule"])
        return causes


def _binding_cells(obj: Obj, now: float) -> list[Any]:
    ref = _role_ref(obj)
    subjects = [s for s in obj.get("subjects") or [] if isinstance(s, dict)]
    users = [str(s.get("name") or "") for s in subjects if s.get("kind") == "User"]
    groups = [str(s.get("name") or "") for s in subjects if s.get("kind") == "Group"]
    accounts = [
        f"{s.get('namespace') or ''}/{s.get('name') or ''}"
        for s in subjects
        if s.get("kind") == "ServiceAccount"
    ]
    return [
        name_of(obj),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


_BINDING_PRINTER = Printer(
    [
        col("Name", fmt="name"),
        col("Role"),
        col("Age"),
        col("Users", priority=1),
        col("Groups", priority=1),
        col("ServiceAccounts", priority=1),
    ],
    _binding_cells,
)


class RoleBindingStrategy(Strategy):
    """RoleBinding (``namespaced``) or ClusterRoleBinding."""

    def __init__(self, kind: str, namespaced: bool) -> None:
        super().__init__(kind, _BINDING_PRINTER)
        self.namespaced = namespaced

    def default(self, obj: Obj) -> None:
        ref = obj.get("roleRef")
        if isinstance(ref, dict) and not ref.get("apiGroup"):
            ref["apiGroup"] = RBAC_GROUP
        for subject in obj.get("subjects") or []:
            if (
                isinstance(subject, dict)
                and not subject.get("apiGroup")
                and subject.get("kind") in ("User", "Group")
            ):
                subject["apiGroup"] = RBAC_GROUP

    def validate(self, obj: Obj) -> list[Cause]:
        return _binding_causes(obj, self.namespaced)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        ref = _role_ref(new)
        keys = ("apiGroup", "kind", "name")
        if [ref.get(k) or "" for k in keys] != [_role_ref(old).get(k) or "" for k in keys]:
            causes.append(
                validation.invalid_shown("roleRef", _go_role_ref(ref), "cannot change roleRef")
            )
        return causes


ROLE = RoleStrategy("Role", namespaced=True)
CLUSTER_ROLE = RoleStrategy("ClusterRole", namespaced=False)
ROLE_BINDING = RoleBindingStrategy("RoleBinding", namespaced=True)
CLUSTER_ROLE_BINDING = RoleBindingStrategy("ClusterRoleBinding", namespaced=False)
