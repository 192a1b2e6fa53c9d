"""rbac.authorization.k8s.io/v1: roles' rules, bindings' role references and subjects."""

from __future__ import annotations

from pycm.sim.schemas.fields import ListOf, Struct, leaves
from pycm.sim.schemas.meta import LABEL_SELECTOR

__all__ = ["AGGREGATION_RULE", "POLICY_RULE", "ROLE_REF", "SUBJECT"]

POLICY_RULE: Struct = leaves("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
ROLE_REF: Struct = leaves("apiGroup", "kind", "name")
SUBJECT: Struct = leaves("kind", "apiGroup", "name", "namespace")
AGGREGATION_RULE: Struct = {"clusterRoleSelectors": ListOf(LABEL_SELECTOR)}
