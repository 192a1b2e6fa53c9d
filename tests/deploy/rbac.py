"""RBAC rules from deploy/kubernetes, matched against the requests a manager made.

Kubernetes' RBAC semantics, in the small: a rule allows a request when its verbs, apiGroups,
resources (``<resource>/<subresource>`` for subresources) and, if set, resourceNames all match;
a Role's rules only in its namespace. Each rule is expanded into *grants* (one verb on one
group/resource, with its names and namespace) so a test can say which grant nothing used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pycm.sim.requestinfo import request_info
from tests.deploy.conftest import DEPLOY

BASE = DEPLOY / "kubernetes" / "base"
MANAGER_ROLES = (BASE / "clusterrole.yaml", BASE / "leader-election-role.yaml")
METRICS_READER = BASE / "metrics-reader-clusterrole.yaml"
# The service-account-credentials overlay's extra Role (kube-system).
SA_CREDENTIALS_ROLE = DEPLOY / "kubernetes" / "service-account-credentials" / "role.yaml"
# The coordinated-leader-election overlay's extra Role (the Lease's namespace).
COORDINATED_ROLE = DEPLOY / "kubernetes" / "coordinated-leader-election" / "role.yaml"
# The sharded overlay's extra Role (the membership Leases' namespace).
SHARDING_ROLE = DEPLOY / "kubernetes" / "sharded" / "role.yaml"


@dataclass(frozen=True, slots=True)
class Call:
    """One resource request (or one implied permission check), as RBAC sees it."""

    verb: str
    api_group: str
    resource: str  # with "/<subresource>" when there is one
    namespace: str = ""
    name: str = ""
    why: str = ""  # for an implied check: what implied it

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        group = self.api_group or "core"
        return f"{self.verb} {group}/{self.resource}{where} {self.name}{self.why}".rstrip()


@dataclass(frozen=True, slots=True)
class Grant:
    verb: str
    api_group: str
    resource: str
    names: tuple[str, ...] = ()
    namespace: str = ""  # "" for a ClusterRole: every namespace
    source: str = ""

    def allows(self, call: Call) -> bool:
        return (
            self.verb in (call.verb, "*")
            and self.api_group in (call.api_group, "*")
            and self.resource in (call.resource, "*")
            and (not self.names or call.name in self.names)
            and (not self.namespace or call.namespace == self.namespace)
        )

    def __str__(self) -> str:
        names = f" {list(self.names)}" if self.names else ""
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {self.api_group or 'core'}/{self.resource}{names}{where}"


def load_role(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    assert doc["kind"] in ("Role", "ClusterRole"), path
    return doc


def grants(paths: Iterable[Path] = MANAGER_ROLES) -> list[Grant]:
    out = []
    for path in paths:
        role = load_role(path)
        namespace = role["metadata"].get("namespace", "") if role["kind"] == "Role" else ""
        for rule in role["rules"]:
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    for verb in rule["verbs"]:
                        out.append(
                            Grant(
                                verb,
                                group,
                                resource,
                                tuple(rule.get("resourceNames", ())),
                                namespace,
                                f"{path.name}",
                            )
                        )
    return out


def emulator_policy(
    user: str,
    scraper: str,
    roles: Iterable[Path] = MANAGER_ROLES,
    controllers: Iterable[str] = (),
) -> dict[str, Any]:
    """The emulator's policy (pycm.sim.auth) for the manager's service account, from the same
    rules: what the emulator enforces (403) on the manager's requests, and what it answers to
    the manager's SubjectAccessReviews for the scraper. The emulator's policy has no
    resourceNames: the replay checks names (see :class:`Grant`). ``controllers`` are the users of
    KCM's controller service accounts, given what the cluster's bootstrap roles
    (system:controller:*) give them, roughly."""
    rules: list[dict[str, Any]] = []
    for path in roles:
        role = load_role(path)
        namespace = role["metadata"].get("namespace") if role["kind"] == "Role" else None
        for rule in role["rules"]:
            entry: dict[str, Any] = {
                "users": [user],
                "verbs": rule["verbs"],
                "apiGroups": rule["apiGroups"],
                "resources": rule["resources"],
            }
            if namespace:
                entry["namespaces"] = [namespace]
            rules.append(entry)
    for controller in controllers:
        rules.append(
            {
                "users": [controller],
                "verbs": ["*"],
                "apiGroups": ["", "apps"],
                "resources": ["pods", "events", "deployments/*", "replicasets/*"],
            }
        )
        rules.append(
            {
                "users": [controller],
                "verbs": ["*"],
                "apiGroups": ["apps"],
                "resources": ["deployments", "replicasets"],
            }
        )
    for rule in load_role(METRICS_READER)["rules"]:
        rules.append(
            {"users": [scraper], "verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}
        )
    return {"rules": rules}


def check_rbac(calls: list[Call], rules: list[Grant]) -> None:
    """Nothing used that is not granted, nothing granted that is not used (AssertionError
    naming them, with every distinct call for context)."""
    forbidden = sorted({str(c) for c in calls if not any(g.allows(c) for g in rules)})
    unused = [str(g) for g in rules if not any(g.allows(c) for c in calls)]
    if forbidden or unused:
        seen = "\n  ".join(sorted({str(c) for c in calls}))
        raise AssertionError(
            f"used but not granted: {forbidden}; granted but never used: {unused}\ncalls:\n  {seen}"
        )


def record_calls(emu: Any, calls: list[Call], made_by: Callable[[Any], bool]) -> None:
    """Append to ``calls`` every resource request ``emu`` serves from now on whose request
    ``made_by`` accepts (the member under test: its token, its user agent)."""

    async def hook(request: Any) -> None:
        if not made_by(request):
            return
        info = request_info(request.method, request.url.path, dict(request.query_params))
        if info.is_resource_request:
            calls.append(Call(info.verb, info.api_group, info.resource, info.namespace, info.name))

    emu.before_request.insert(0, hook)
