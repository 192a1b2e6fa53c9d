"""The resource registry: lookups and URL paths."""

from __future__ import annotations

import pytest

import pycm.api
import pycm.kube
from pycm.kube.resources import (
    DEPLOYMENTS,
    LEASES,
    NODES,
    PODS,
    REGISTRY,
    SUBJECTACCESSREVIEWS,
    Resource,
    by_kind,
    by_plural,
)


@pytest.mark.parametrize(
    ("res", "args", "want"),
    [
        pytest.param(PODS, ("ns", "p", ""), "/api/v1/namespaces/ns/pods/p", id="namespaced-get"),
        pytest.param(PODS, ("", "", ""), "/api/v1/pods", id="all-namespaces"),
        pytest.param(PODS, ("ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status", id="sub"),
        pytest.param(NODES, ("ignored", "n", ""), "/api/v1/nodes/n", id="cluster-scoped"),
        pytest.param(
            DEPLOYMENTS,
            ("ns", "d", "scale"),
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            id="group-scale",
        ),
        pytest.param(
            LEASES,
            ("kube-system", "", ""),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            id="group-list",
        ),
        pytest.param(
            SUBJECTACCESSREVIEWS,
            ("", "", ""),
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            id="review",
        ),
        pytest.param(PODS, ("ns", "a/b", ""), "/api/v1/namespaces/ns/pods/a%2Fb", id="quoted"),
    ],
)
def test_resource_path_builds_url(res: Resource, args: tuple[str, str, str], want: str) -> None:
    assert res.path(*args) == want


def test_resource_lookup_by_kind_and_plural() -> None:
    assert by_kind("Deployment") is DEPLOYMENTS
    assert by_plural("deployments") is DEPLOYMENTS
    assert by_plural("deployments.apps") is DEPLOYMENTS
    assert DEPLOYMENTS.api_version == "apps/v1"
    assert PODS.api_version == "v1"
    assert len({r.kind for r in REGISTRY}) == len(REGISTRY) == 10


@pytest.mark.parametrize(
    ("lookup", "arg"),
    [pytest.param(by_kind, "Widget", id="kind"), pytest.param(by_plural, "widgets", id="plural")],
)
def test_resource_lookup_unknown_raises_key_error(lookup: object, arg: str) -> None:
    with pytest.raises(KeyError, match=r"(?i)widget"):
        lookup(arg)  # type: ignore[operator]


@pytest.mark.parametrize(
    "module", [pytest.param(pycm.kube, id="kube"), pytest.param(pycm.api, id="api")]
)
def test_public_surface_names_resolve_without_duplicates(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert all(hasattr(module, n) for n in names)
    assert len(set(names)) == len(names)
