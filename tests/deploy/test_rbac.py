"""The RBAC matcher the in-cluster test replays calls against (tests/deploy/rbac.py), and the
manifests' rules read through it."""

from __future__ import annotations

import pytest

from tests.deploy.rbac import Call, Grant, check_rbac, emulator_policy, grants

LEASE_GET = Call("get", "coordination.k8s.io", "leases", "pycm-system", "pycm")


@pytest.mark.parametrize(
    ("grant", "call", "allowed"),
    [
        pytest.param(
            Grant("get", "apps", "deployments"),
            Call("get", "apps", "deployments", "a", "d"),
            True,
            id="cluster-wide",
        ),
        pytest.param(
            Grant("get", "apps", "deployments"),
            Call("list", "apps", "deployments"),
            False,
            id="other-verb",
        ),
        pytest.param(
            Grant("get", "", "deployments"),
            Call("get", "apps", "deployments"),
            False,
            id="other-group",
        ),
        pytest.param(
            Grant("update", "apps", "deployments"),
            Call("update", "apps", "deployments/status"),
            False,
            id="subresource-is-separate",
        ),
        pytest.param(
            Grant("get", "coordination.k8s.io", "leases", ("pycm",), "pycm-system"),
            LEASE_GET,
            True,
            id="named-in-namespace",
        ),
        pytest.param(
            Grant("get", "coordination.k8s.io", "leases", ("other",), "pycm-system"),
            LEASE_GET,
            False,
            id="other-name",
        ),
        pytest.param(
            Grant("get", "coordination.k8s.io", "leases", (), "kube-system"),
            LEASE_GET,
            False,
            id="other-namespace",
        ),
        pytest.param(Grant("*", "*", "*"), LEASE_GET, True, id="wildcards"),
    ],
)
def test_grant_allows_rbac_semantics(grant: Grant, call: Call, allowed: bool) -> None:
    assert grant.allows(call) is allowed


def test_check_rbac_unused_and_forbidden_are_both_reported() -> None:
    rules = [Grant("get", "apps", "deployments"), Grant("delete", "", "pods")]
    with pytest.raises(AssertionError, match=r"not granted: \['list apps/deployments'\]"):
        check_rbac(
            [
                Call("get", "apps", "deployments"),
                Call("list", "apps", "deployments"),
                Call("delete", "", "pods"),
            ],
            rules,
        )
    with pytest.raises(AssertionError, match=r"never used: \['delete core/pods'\]"):
        check_rbac([Call("get", "apps", "deployments")], rules)
    check_rbac([Call("get", "apps", "deployments"), Call("delete", "", "pods", "x")], rules)


def test_manifest_grants_restrict_get_and_update_of_the_lease_to_its_name() -> None:
    leases = [g for g in grants() if g.resource == "leases"]
    assert {(g.verb, g.names, g.namespace) for g in leases} == {
        ("create", (), "pycm-system"),  # RBAC cannot name an object before it exists
        ("get", ("pycm",), "pycm-system"),
        ("update", ("pycm",), "pycm-system"),
    }
    assert not [g for g in grants() if g.verb in ("*", "deletecollection") or g.resource == "*"]


def test_emulator_policy_scopes_the_role_to_its_namespace_and_the_scraper_to_metrics() -> None:
    rules = emulator_policy("sa", "scraper")["rules"]
    lease_rules = [r for r in rules if "leases" in r.get("resources", [])]
    assert lease_rules and all(r["namespaces"] == ["pycm-system"] for r in lease_rules)
    assert [r for r in rules if r["users"] == ["scraper"]] == [
        {"users": ["scraper"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]}
    ]
