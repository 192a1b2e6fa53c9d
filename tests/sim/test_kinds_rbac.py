"""RBAC's four kinds, case by case as kube's ``pkg/apis/rbac/validation/validation_test.go``
tables: valid objects are created (names are path segments, not DNS names), invalid ones are
refused with exactly kube's causes, every cause at once; bindings' defaults, ``roleRef``
immutable, unknown fields pruned, kube's table columns."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from pycm.sim.errors import APIError
from pycm.sim.store import Store

RBAC = "rbac.authorization.k8s.io"
PLURALS = {
    "Role": "roles",
    "ClusterRole": "clusterroles",
    "RoleBinding": "rolebindings",
    "ClusterRoleBinding": "clusterrolebindings",
}
NAMESPACED = {"Role", "RoleBinding"}
READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
ROLE_REF = {"apiGroup": RBAC, "kind": "Role", "name": "reader"}
CLUSTER_ROLE_REF = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "reader"}
SA = {"kind": "ServiceAccount", "name": "op", "namespace": "default"}
RBAC_ONLY = f'supported values: "{RBAC}"'


def named(name: str = "x", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, **fields}


def create(store: Store, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    res = store.resource(PLURALS[kind], RBAC)
    namespace = "default" if kind in NAMESPACED else None
    return store.create(res, copy.deepcopy(body), namespace)


def refused(call: Callable[[], Any]) -> list[tuple[str, str]]:
    with pytest.raises(APIError) as err:
        call()
    assert err.value.code == 422, err.value.status()
    return [(c["field"], c["message"]) for c in err.value.status()["details"]["causes"]]


VALID = [
    pytest.param("Role", named(rules=[READ_PODS]), id="role"),
    pytest.param("Role", named("system:leader-locking-op", rules=[]), id="role-colon-name"),
    pytest.param("ClusterRole", named("Op:Metrics_Reader", rules=[READ_PODS]), id="crole-name"),
    pytest.param(
        "ClusterRole",
        named(rules=[{"nonResourceURLs": ["/metrics", "/healthz/*"], "verbs": ["get"]}]),
        id="clusterrole-non-resource",
    ),
    pytest.param(
        "ClusterRole",
        named(aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}),
        id="clusterrole-aggregated",
    ),
    pytest.param(
        "Role",
        named(
            rules=[{"apiGroups": [""], "resources": ["cm"], "resourceNames": ["a"], "verbs": ["*"]}]
        ),
        id="role-resource-names",
    ),
    pytest.param("RoleBinding", named(roleRef=ROLE_REF, subjects=[SA]), id="binding"),
    pytest.param(
        "RoleBinding",
        named(roleRef=CLUSTER_ROLE_REF, subjects=[{"kind": "ServiceAccount", "name": "op"}]),
        id="binding-clusterrole-sa-without-namespace",
    ),
    pytest.param(
        "ClusterRoleBinding",
        named("system:op", roleRef=CLUSTER_ROLE_REF, subjects=[SA, {"kind": "Group", "name": "g"}]),
        id="clusterrolebinding",
    ),
]


@pytest.mark.parametrize(("kind", "body"), VALID)
def test_rbac_valid_objects_are_created(store: Store, kind: str, body: dict[str, Any]) -> None:
    created = create(store, kind, body)
    assert (created["kind"], created["apiVersion"]) == (kind, f"{RBAC}/v1")
    assert created["metadata"]["name"] == body["metadata"]["name"]


INVALID = [
    pytest.param(
        "Role",
        named("a/b%c", rules=[{"apiGroups": [""], "verbs": []}]),
        [
            ("metadata.name", "Invalid value: \"a/b%c\": may not contain '/'"),
            ("metadata.name", "Invalid value: \"a/b%c\": may not contain '%'"),
            ("rules[0].verbs", "Required value: verbs must contain at least one value"),
            (
                "rules[0].resources",
                "Required value: resource rules must supply at least one resource",
            ),
        ],
        id="role-name-and-rule",
    ),
    pytest.param(
        "ClusterRole",
        named(
            "..",
            rules=[{"verbs": ["get"], "resources": ["pods", "secrets"], "resourceNames": ["a"]}],
        ),
        [
            ("metadata.name", "Invalid value: \"..\": may not be '..'"),
            (
                "rules[0].apiGroups",
                "Required value: resource rules must supply at least one api group",
            ),
            (
                "rules[0].resourceNames",
                "Required value: resource names cannot apply to multiple resources",
            ),
        ],
        id="clusterrole-dotdot-and-resource-names",
    ),
    pytest.param(
        "Role",
        named(rules=[{"nonResourceURLs": ["/metrics"], "resources": ["pods"], "verbs": ["get"]}]),
        [
            (
                "rules[0].nonResourceURLs",
                'Invalid value: []string{"/metrics"}: namespaced rules cannot apply to '
                "non-resource URLs",
            ),
            (
                "rules[0].nonResourceURLs",
                'Invalid value: []string{"/metrics"}: rules cannot apply to both regular resources '
                "and non-resource URLs",
            ),
        ],
        id="role-non-resource-urls",
    ),
    pytest.param(
        "ClusterRole",
        named(aggregationRule={"clusterRoleSelectors": []}),
        [
            (
                "aggregationRule.clusterRoleSelectors",
                "Required value: at least one clusterRoleSelector required if aggregationRule is "
                "non-nil",
            )
        ],
        id="clusterrole-aggregation-without-selectors",
    ),
    pytest.param(
        "RoleBinding",
        named(
            roleRef={"apiGroup": "example.com", "kind": "Deployment"},
            subjects=[
                {"kind": "ServiceAccount", "name": "Op_1", "apiGroup": RBAC},
                {"kind": "User", "name": "u", "apiGroup": "example.com"},
                {"kind": "Robot", "name": "r"},
                {"kind": "Group"},
            ],
        ),
        [
            ("roleRef.apiGroup", f'Unsupported value: "example.com": {RBAC_ONLY}'),
            (
                "roleRef.kind",
                'Unsupported value: "Deployment": supported values: "Role", "ClusterRole"',
            ),
            ("roleRef.name", "Required value"),
            (
                "subjects[0].name",
                'Invalid value: "Op_1": a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                "character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
            ("subjects[0].apiGroup", f'Unsupported value: "{RBAC}": supported values: ""'),
            ("subjects[1].apiGroup", f'Unsupported value: "example.com": {RBAC_ONLY}'),
            (
                "subjects[2].kind",
                'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
            ),
            ("subjects[3].name", "Required value"),
            ("subjects[3].name", 'Invalid value: "": group name cannot be empty'),
        ],
        id="binding-every-cause",
    ),
    pytest.param(
        "ClusterRoleBinding",
        named(roleRef=ROLE_REF, subjects=[{"kind": "ServiceAccount", "name": "op"}]),
        [
            ("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"'),
            ("subjects[0].namespace", "Required value"),
        ],
        id="clusterrolebinding-role-and-sa-namespace",
    ),
]


@pytest.mark.parametrize(("kind", "body", "expected"), INVALID)
def test_rbac_invalid_objects_are_refused_with_kubes_causes(
    store: Store, kind: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert refused(lambda: create(store, kind, body)) == expected


def test_rbac_binding_defaults_the_role_ref_and_user_group_api_groups(store: Store) -> None:
    subjects = [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}, SA]
    created = create(
        store, "RoleBinding", named(roleRef={"kind": "Role", "name": "r"}, subjects=subjects)
    )
    assert created["roleRef"] == {"apiGroup": RBAC, "kind": "Role", "name": "r"}
    assert [s.get("apiGroup") for s in created["subjects"]] == [RBAC, RBAC, None]


def test_rbac_binding_role_ref_cannot_change(store: Store) -> None:
    created = create(store, "RoleBinding", named(roleRef=ROLE_REF, subjects=[SA]))
    created["subjects"] = []  # the subjects may change
    updated = store.update(store.resource("rolebindings", RBAC), copy.deepcopy(created))
    assert updated["subjects"] == []
    updated["roleRef"] = {**ROLE_REF, "name": "writer"}
    assert refused(lambda: store.update(store.resource("rolebindings", RBAC), updated)) == [
        (
            "roleRef",
            'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", '
            'Name:"writer"}: cannot change roleRef',
        )
    ]


def test_rbac_wrong_json_type_is_a_bad_request(store: Store) -> None:
    with pytest.raises(APIError) as err:
        create(store, "Role", named(rules=[{"verbs": "get"}]))
    assert err.value.code == 400


def test_rbac_unknown_fields_are_pruned_with_a_warning(store: Store) -> None:
    body = named(rules=[{**READ_PODS, "verb": ["get"]}], extra=1)
    res = store.resource("roles", RBAC)
    assert res.strategy.prune("v1", body, None) == ["rules[0].verb", "extra"]  # body order
    assert body == named(rules=[READ_PODS])


def test_rbac_binding_table_shows_the_role_and_wide_subjects(store: Store) -> None:
    subjects = [SA, {"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"}]
    created = create(store, "RoleBinding", named("b", roleRef=ROLE_REF, subjects=subjects))
    printer = store.resource("rolebindings", RBAC).strategy.printer
    names = [c["name"] for c in printer.columns]
    assert names == ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    assert [c["priority"] for c in printer.columns] == [0, 0, 0, 1, 1, 1]
    cells = printer.cells(created, 0.0)  # the age (cells[2]) is not checked
    assert cells[:2] == ["b", "Role/reader"]
    assert cells[3:] == ["alice", "devs", "default/op"]
